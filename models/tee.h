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
// - the stack's probe (net/probe.h): enter, enter_idle, leave, copy,
//   cksum, alloc, free, header, drop;
// - after_enter(fn), after_leave(fn): called once every part has had
//   enter(fn) or leave(fn), for a part whose work on a function's entry or
//   exit follows everyone else's (the I-cache fetches a function's code
//   once the account has opened it and charged its entry);
// - what the program around the stack reports: run(Code) (code outside the
//   stack ran: the sender's loop, system call entry and exit) and
//   add(Stage, cycles) (cycles the caller prices itself), in_call(bool) (the
//   thread works for a later message of one system call);
// - settle(): parts that defer charges (the I-cache's replay) make them
//   now; call it before the account's cycles are read.
#pragma once

#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include "sim/stack/net/probe.h"

// Every hook is inlined whole into the stack's code, as the account's own
// hooks were when it was the probe: a call per event would cost more than
// what most parts do with the event.
#define SIMLOOP_TEE_INLINE [[gnu::always_inline]] inline
// Calls `part.CALL` on each part that has it, in order.
#define SIMLOOP_TEE_EACH(CALL)                      \
  each(                                             \
      [&](auto& p) __attribute__((always_inline)) { \
        if constexpr (requires { p.CALL; }) p.CALL; \
      },                                            \
      std::index_sequence_for<P...>{})

namespace simloop::models {

template <class... P>
class Tee {
  static_assert(((std::is_lvalue_reference_v<P> || std::is_pointer_v<P>)&&...),
                "Tee parts are references (always there) or pointers (may be null)");

 public:
  static constexpr bool kCompiled = true;
  explicit Tee(P... parts) : parts_(parts...) {}

  SIMLOOP_TEE_INLINE void enter(net::FnId fn) {
    SIMLOOP_TEE_EACH(enter(fn));
    SIMLOOP_TEE_EACH(after_enter(fn));
  }
  // A part without enter_idle sees the call as enter (net/probe.h).
  SIMLOOP_TEE_INLINE void enter_idle(net::FnId fn) {
    each(
        [&](auto& p) __attribute__((always_inline)) {
          if constexpr (requires { p.enter_idle(fn); })
            p.enter_idle(fn);
          else if constexpr (requires { p.enter(fn); })
            p.enter(fn);
        },
        std::index_sequence_for<P...>{});
    SIMLOOP_TEE_EACH(after_enter(fn));
  }
  SIMLOOP_TEE_INLINE void leave(net::FnId fn) {
    SIMLOOP_TEE_EACH(leave(fn));
    SIMLOOP_TEE_EACH(after_leave(fn));
  }
  SIMLOOP_TEE_INLINE void copy(net::CopyKind kind, const void* src, const void* dst, size_t len) {
    SIMLOOP_TEE_EACH(copy(kind, src, dst, len));
  }
  SIMLOOP_TEE_INLINE void cksum(const void* addr, size_t len) {
    SIMLOOP_TEE_EACH(cksum(addr, len));
  }
  SIMLOOP_TEE_INLINE void alloc(net::Obj obj, const void* addr) {
    SIMLOOP_TEE_EACH(alloc(obj, addr));
  }
  SIMLOOP_TEE_INLINE void free(net::Obj obj, const void* addr) {
    SIMLOOP_TEE_EACH(free(obj, addr));
  }
  SIMLOOP_TEE_INLINE void header(net::FnId fn, const void* addr, unsigned size, bool write) {
    SIMLOOP_TEE_EACH(header(fn, addr, size, write));
  }
  SIMLOOP_TEE_INLINE void drop(net::Drop where) { SIMLOOP_TEE_EACH(drop(where)); }
  template <class Code>
  SIMLOOP_TEE_INLINE void run(Code code) {
    SIMLOOP_TEE_EACH(run(code));
  }
  template <class Stage>
  SIMLOOP_TEE_INLINE void add(Stage stage, double cycles) {
    SIMLOOP_TEE_EACH(add(stage, cycles));
  }
  SIMLOOP_TEE_INLINE void in_call(bool later) { SIMLOOP_TEE_EACH(in_call(later)); }
  SIMLOOP_TEE_INLINE void settle() { SIMLOOP_TEE_EACH(settle()); }

 private:
  template <class F, size_t... I>
  SIMLOOP_TEE_INLINE void each(F&& f, std::index_sequence<I...> /*parts*/) {
    (visit(f, std::get<I>(parts_)), ...);
  }
  template <class F, class Q>
  SIMLOOP_TEE_INLINE static void visit(F& f, Q& part) {
    if constexpr (std::is_pointer_v<Q>) {
      if (part != nullptr) f(*part);
    } else {
      f(part);
    }
  }

  std::tuple<P...> parts_;
};

}  // namespace simloop::models

#undef SIMLOOP_TEE_EACH
#undef SIMLOOP_TEE_INLINE
