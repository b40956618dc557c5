// Probes: how the functional stack tells the outside world what it did.
//
// The stack is a template over its probe type. Every report is written as
// SIMLOOP_PROBE(call), which compiles to nothing unless the probe type sets
// kCompiled; a probe whose methods are empty inline functions is removed by
// the optimiser as well (bench/ measures both against each other).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "sim/stack/net/fn_table.h"

namespace simloop::net {

// Why bytes were copied.
enum class CopyKind : uint8_t {
  uiomove,      // user buffer into mbufs (send) or out of them (the BSD stack's receive)
  to_user,      // sk_buffs out to the user's buffer (the Linux stack's receive)
  loop_copy,    // internal data copied by m_copym for the simplex loop
  dup,          // m_dup's deep copy
  pullup,       // m_pullup / m_copyup
  align_fixup,  // if_simloop moving data to a 4-byte boundary
  other,
  count
};
inline constexpr size_t kCopyKindCount = static_cast<size_t>(CopyKind::count);

// What was allocated or freed: the BSD stack's mbufs and clusters, the
// Linux stack's sk_buffs and their heads.
enum class Obj : uint8_t { mbuf, cluster, skb, skb_head };

// Where a packet can be dropped.
enum class Drop : uint8_t {
  netisr_full,   // netisr input queue full
  sockbuf_full,  // socket receive buffer full
  nic_full,      // NIC transmit ring full
  no_buffers,    // an allocation failed on the way
  bad_header,    // ip_input / udp_input rejected the packet (checksum, length)
  no_port,       // no socket bound to the destination port
  not_ours,      // IP destination is not this host
  alignment_fault,
  count
};
inline constexpr size_t kDropCount = static_cast<size_t>(Drop::count);

constexpr std::string_view drop_name(Drop d) {
  constexpr std::array<std::string_view, kDropCount> names = {
      "netisr_full", "sockbuf_full", "nic_full", "no_buffers",
      "bad_header",  "no_port",      "not_ours", "alignment_fault"};
  return names.at(static_cast<size_t>(d));
}

// The probe interface, as a probe type must provide it. Every method is a
// no-op here; the simulator's and the timing probes override what they use.
//
// One more hook is optional: enter_idle(fn), a call of `fn` that finds
// nothing to do (an empty queue polled) and returns at once. Its code runs,
// but not the work the function's fixed cost stands for. A probe without
// the hook sees it as enter(fn); the cost account charges it nothing.
struct NullProbe {
  static constexpr bool kCompiled = true;
  void enter(FnId /*fn*/) {}
  void leave(FnId /*fn*/) {}
  void copy(CopyKind /*kind*/, const void* /*src*/, const void* /*dst*/, size_t /*len*/) {}
  void cksum(const void* /*addr*/, size_t /*len*/) {}
  void alloc(Obj /*obj*/, const void* /*addr*/) {}
  void free(Obj /*obj*/, const void* /*addr*/) {}
  // A header field read or written, at `addr`, `size` bytes wide.
  void header(FnId /*fn*/, const void* /*addr*/, unsigned /*size*/, bool /*write*/) {}
  void drop(Drop /*where*/) {}
};

// The same interface with every call removed at compile time: the baseline
// that shows NullProbe costs nothing.
struct NoProbe : NullProbe {
  static constexpr bool kCompiled = false;
};

// Counts every event; used by tests and by benchmarks as a probe that does
// a little real work per event.
struct CountingProbe : NullProbe {
  std::array<uint64_t, kMaxFns> entered{};
  std::array<uint64_t, kCopyKindCount> copies{};
  std::array<uint64_t, kCopyKindCount> copied_bytes{};
  std::array<uint64_t, kDropCount> drops{};
  uint64_t cksum_bytes = 0;
  uint64_t mbuf_allocs = 0, cluster_allocs = 0, mbuf_frees = 0, cluster_frees = 0;
  uint64_t skb_allocs = 0, skb_head_allocs = 0, skb_frees = 0, skb_head_frees = 0;
  uint64_t header_accesses = 0, misaligned_accesses = 0;

  void enter(FnId fn) { ++entered[index(fn)]; }
  void copy(CopyKind kind, const void* /*src*/, const void* /*dst*/, size_t len) {
    ++copies[static_cast<size_t>(kind)];
    copied_bytes[static_cast<size_t>(kind)] += len;
  }
  void cksum(const void* /*addr*/, size_t len) { cksum_bytes += len; }
  void alloc(Obj obj, const void* /*addr*/) {
    ++count(obj, mbuf_allocs, cluster_allocs, skb_allocs, skb_head_allocs);
  }
  void free(Obj obj, const void* /*addr*/) {
    ++count(obj, mbuf_frees, cluster_frees, skb_frees, skb_head_frees);
  }
  void header(FnId /*fn*/, const void* addr, unsigned size, bool /*write*/) {
    ++header_accesses;
    if ((reinterpret_cast<uintptr_t>(addr) & (size - 1)) != 0) ++misaligned_accesses;
  }
  void drop(Drop d) { ++drops[static_cast<size_t>(d)]; }

 private:
  static uint64_t& count(Obj obj, uint64_t& mbuf, uint64_t& cluster, uint64_t& skb,
                         uint64_t& head) {
    switch (obj) {
      case Obj::mbuf:
        return mbuf;
      case Obj::cluster:
        return cluster;
      case Obj::skb:
        return skb;
      case Obj::skb_head:
        return head;
    }
    return cluster;
  }
};

}  // namespace simloop::net

// Report to the probe `probe_` of the enclosing object, or compile to nothing.
#define SIMLOOP_PROBE(call)                                               \
  do {                                                                    \
    if constexpr (std::decay_t<decltype(probe_)>::kCompiled) probe_.call; \
  } while (0)

namespace simloop::net {

// How a call goes: it does the function's work, or finds nothing to do.
enum class Call : uint8_t { work, idle };

// Reports entry on construction and exit on destruction. `F` is the stack's
// own function enum, whose values are the functions' FnIds; `call` idle
// reports enter_idle to a probe that has it.
template <class P>
class [[nodiscard]] FnScope {
 public:
  // Always inlined: a call per function entry and exit would cost more
  // than most probes do with the event.
  template <class F>
  [[gnu::always_inline]] FnScope(P& probe, F fn, Call call = Call::work)
      : probe_(probe), fn_(static_cast<FnId>(fn)) {
    static_assert(std::is_enum_v<F> && sizeof(F) == sizeof(FnId));
    if constexpr (requires { probe.enter_idle(fn_); }) {
      if (call == Call::idle) {
        SIMLOOP_PROBE(enter_idle(fn_));
        return;
      }
    }
    SIMLOOP_PROBE(enter(fn_));
  }
  [[gnu::always_inline]] ~FnScope() { SIMLOOP_PROBE(leave(fn_)); }
  FnScope(const FnScope&) = delete;
  FnScope& operator=(const FnScope&) = delete;

 private:
  P& probe_;
  FnId fn_;
};

}  // namespace simloop::net
