// Composes probes: a Tee is a probe that hands each event to its parts, so
// timing models and recorders are separate components put side by side
// where a probe is assembled, not wrappers that forward every hook.
//
//   Tee<CycleAccount&, ICacheProbe*, DataTlb*> probe(acct, icache.get(), dtlb.get());
//
// A part given by reference is always there; a part given by pointer is
// switched on at run time (null: absent, one test per event). Every event
// goes to the parts in the order they are listed, and only to the parts
// that have a hook for it (parts derived from net::NullProbe have every
// hook of the stack's probe as an empty inline function: free).
//
// The hooks:
// - the stack's probe (net/probe.h): enter, leave, copy, cksum, alloc,
//   free, header, drop;
// - after_enter(fn), after_leave(fn): called once every part has had
//   enter(fn) or leave(fn), for a part whose work on a function's entry or
//   exit follows everyone else's (the I-cache fetches a function's code
//   once the account has opened it and charged its entry);
// - what the program around the stack reports: run(Code) (code outside the
//   stack ran: the sender's loop, system call entry and exit) and
//   add(Stage, cycles) (cycles the caller prices itself);
// - settle(): parts that defer charges (the I-cache's replay) make them
//   now; call it before the account's cycles are read.
#pragma once

#include <cstddef>
#include <tuple>
#include <type_traits>

#include "net/probe.h"

namespace simloop::models {

template <class... P>
class Tee {
  static_assert(((std::is_lvalue_reference_v<P> || std::is_pointer_v<P>)&&...),
                "Tee parts are references (always there) or pointers (may be null)");

 public:
  static constexpr bool kCompiled = true;
  explicit Tee(P... parts) : parts_(parts...) {}

  void enter(net::Fn fn) {
    each([&](auto& p) {
      if constexpr (requires { p.enter(fn); }) p.enter(fn);
    });
    each([&](auto& p) {
      if constexpr (requires { p.after_enter(fn); }) p.after_enter(fn);
    });
  }
  void leave(net::Fn fn) {
    each([&](auto& p) {
      if constexpr (requires { p.leave(fn); }) p.leave(fn);
    });
    each([&](auto& p) {
      if constexpr (requires { p.after_leave(fn); }) p.after_leave(fn);
    });
  }
  void copy(net::CopyKind kind, const void* src, const void* dst, size_t len) {
    each([&](auto& p) {
      if constexpr (requires { p.copy(kind, src, dst, len); }) p.copy(kind, src, dst, len);
    });
  }
  void cksum(const void* addr, size_t len) {
    each([&](auto& p) {
      if constexpr (requires { p.cksum(addr, len); }) p.cksum(addr, len);
    });
  }
  void alloc(net::Obj obj, const void* addr) {
    each([&](auto& p) {
      if constexpr (requires { p.alloc(obj, addr); }) p.alloc(obj, addr);
    });
  }
  void free(net::Obj obj, const void* addr) {
    each([&](auto& p) {
      if constexpr (requires { p.free(obj, addr); }) p.free(obj, addr);
    });
  }
  void header(net::Fn fn, const void* addr, unsigned size, bool write) {
    each([&](auto& p) {
      if constexpr (requires { p.header(fn, addr, size, write); }) p.header(fn, addr, size, write);
    });
  }
  void drop(net::Drop where) {
    each([&](auto& p) {
      if constexpr (requires { p.drop(where); }) p.drop(where);
    });
  }
  template <class Code>
  void run(Code code) {
    each([&](auto& p) {
      if constexpr (requires { p.run(code); }) p.run(code);
    });
  }
  template <class Stage>
  void add(Stage stage, double cycles) {
    each([&](auto& p) {
      if constexpr (requires { p.add(stage, cycles); }) p.add(stage, cycles);
    });
  }
  void settle() {
    each([&](auto& p) {
      if constexpr (requires { p.settle(); }) p.settle();
    });
  }

 private:
  template <class F>
  void each(F&& f) {
    std::apply([&](auto&... part) { (visit(f, part), ...); }, parts_);
  }
  template <class F, class Q>
  static void visit(F& f, Q& part) {
    if constexpr (std::is_pointer_v<Q>) {
      if (part != nullptr) f(*part);
    } else {
      f(part);
    }
  }

  std::tuple<P...> parts_;
};

}  // namespace simloop::models
