// Cost tables: what a machine and a stack charge, in CPU cycles. Plain data,
// filled from configuration; the models below read them.
#pragma once

#include <array>
#include <string_view>

#include "sim/stack/net/fn_table.h"
#include "sim/support/key_spec.h"

namespace simloop::models {

struct MachineCosts {
  double clock_hz = 2e9;
  double syscall_entry_cycles = 0;  // trap, register save, argument fetch
  double syscall_exit_cycles = 0;   // return to user space
  double user_loop_cycles = 0;      // the sender's own loop around sendto()
  // A copy of n bytes costs setup + n * per_byte, plus n * unaligned_per_byte
  // when source or destination is not 4-byte aligned.
  double copy_setup_cycles = 0;
  double copy_cycles_per_byte = 0;
  double copy_unaligned_cycles_per_byte = 0;
  // Extra per byte of a copy out to a user's buffer (net::CopyKind::to_user).
  double copy_to_user_extra_cycles_per_byte = 0;
  // The L1 data cache the copies see (models/l1d_copies.h): its size
  // (0: not modelled, every byte at the rates above) and ways, and the
  // extra per byte of a copy (either end) in a line it no longer held.
  int64_t copy_l1d_bytes = 0;
  int copy_l1d_ways = 8;
  double copy_l1d_miss_extra_cycles_per_byte = 0;
  // Extra cycles for each misaligned header access (CPUs that allow them),
  // and further cycles when the access also crosses a cache line.
  double unaligned_access_cycles = 0;
  double unaligned_line_cross_cycles = 0;
  int line_bytes = 64;
};

// machine.*: the CPU's prices (models and the I-cache declare their own).
inline constexpr auto kMachineKeys = std::to_array<support::KeySpec<MachineCosts>>({
    {"clock_hz", "Clock rate: the simulated host's speed in cycles per second.",
     &support::at<&MachineCosts::clock_hz>, 1e6, 1e11},
    {"syscall", "System call entry and exit."},
    {"syscall.entry_cycles", "Cycles from the user's call to the kernel function.",
     &support::at<&MachineCosts::syscall_entry_cycles>, 0, 1e7, false, true},
    {"syscall.exit_cycles", "Cycles from the kernel function back to the user.",
     &support::at<&MachineCosts::syscall_exit_cycles>, 0, 1e7, false, true},
    {"user_loop_cycles", "Cycles of the sender's own loop per datagram.",
     &support::at<&MachineCosts::user_loop_cycles>, 0, 1e7, false, true},
    {"copy", "Cost of copying bytes (bcopy, copyin, copyout)."},
    {"copy.setup_cycles", "Fixed cycles per copy.", &support::at<&MachineCosts::copy_setup_cycles>,
     0, 1e6, false, true},
    {"copy.cycles_per_byte", "Cycles per byte copied.",
     &support::at<&MachineCosts::copy_cycles_per_byte>, 0, 1e3, false, true},
    {"copy.unaligned_cycles_per_byte",
     "Extra cycles per byte when source or destination is not 4-byte aligned.",
     &support::at<&MachineCosts::copy_unaligned_cycles_per_byte>, 0, 1e3, false, true},
    {"copy.to_user_extra_cycles_per_byte",
     "Extra cycles per byte copied out to a user's buffer (a receive), beyond cycles_per_byte: "
     "a machine may read what it copies out slower than it writes what it copies in.",
     &support::at<&MachineCosts::copy_to_user_extra_cycles_per_byte>, 0, 1e3, false, true},
    {"copy.l1d_bytes",
     "Size of the L1 data cache that copies see, bytes (sysfs's L1d): both ends of every "
     "copy occupy it, line by line (64 B lines), least recently used out, and a copy pays "
     "l1d_miss_extra_cycles_per_byte on each byte, of its source or its destination, in a "
     "line it no longer held (models/l1d_copies.h). 0: not modelled, every byte at the rates "
     "above.",
     &support::at<&MachineCosts::copy_l1d_bytes>, 0, int64_t{1} << 30},
    {"copy.l1d_ways", "Ways of that cache (sysfs's L1d ways_of_associativity).",
     &support::at<&MachineCosts::copy_l1d_ways>, 1, 1024},
    {"copy.l1d_miss_extra_cycles_per_byte",
     "Extra cycles per byte of a copy, read or written, in a line the L1 data cache no longer "
     "held (moved from L2 or beyond), beyond the copy's other rates; only with l1d_bytes above "
     "0.",
     &support::at<&MachineCosts::copy_l1d_miss_extra_cycles_per_byte>, 0, 1e3, false, true},
    {"unaligned_access_cycles",
     "Extra cycles per misaligned header access, on CPUs that allow them (align: none).",
     &support::at<&MachineCosts::unaligned_access_cycles>, 0, 1e6, false, true},
    {"unaligned_line_cross_cycles",
     "Further cycles when a misaligned header access also crosses a cache line.",
     &support::at<&MachineCosts::unaligned_line_cross_cycles>, 0, 1e6, false, true},
});

// A stack with no functions: what StackCosts prices until it is given a stack.
inline constexpr net::FnTable kNoFns{"none", {}};

struct StackCosts {
  // The stack's functions (net/fn_table.h): their names, stages and roles.
  const net::FnTable* fns = &kNoFns;
  // Base cycles each time a stack function runs (its straight-line work), by FnId.
  std::array<double, net::kMaxFns> fn_cycles{};
  double mbuf_alloc_cycles = 0, cluster_alloc_cycles = 0;
  double mbuf_free_cycles = 0, cluster_free_cycles = 0;
  double cksum_cycles_per_byte = 0;
  // The share of its cycles a function is charged for the second and later
  // messages of one system call (sendmmsg), when the kernel was not left
  // since the previous message; 1 charges every message alike.
  double in_call_factor = 1;
};

// stack.*: the prices of the zones (the BSD stack's mbufs and clusters,
// taken and given back) and of the checksum; the functions' prices are
// keys of each stack's table (sim/config/schema.cc).
inline constexpr auto kStackCostKeys = std::to_array<support::KeySpec<StackCosts>>({
    {"alloc", "Buffer allocation from the zones."},
    {"alloc.mbuf_cycles", "Cycles per mbuf allocated.",
     &support::at<&StackCosts::mbuf_alloc_cycles>, 0, 1e6, false, true},
    {"alloc.cluster_cycles", "Cycles per cluster allocated.",
     &support::at<&StackCosts::cluster_alloc_cycles>, 0, 1e6, false, true},
    {"free", "Buffer release to the zones."},
    {"free.mbuf_cycles", "Cycles per mbuf freed.", &support::at<&StackCosts::mbuf_free_cycles>, 0,
     1e6, false, true},
    {"free.cluster_cycles", "Cycles per cluster freed.",
     &support::at<&StackCosts::cluster_free_cycles>, 0, 1e6, false, true},
    {"cksum_cycles_per_byte", "Cycles per byte summed by the Internet checksum.",
     &support::at<&StackCosts::cksum_cycles_per_byte>, 0, 1e3, false, true},
    {"in_call_factor",
     "Share of a function's cycles charged while it works for the second or a later message "
     "of one system call (sendmmsg), the kernel not left since the message before: its caches "
     "and branch predictors are warm. Each message's softirq and the receiver's reads count "
     "too (they run inside the call); interrupt handlers, and what runs after a sleep in the "
     "call up to the next message, do not. 1 charges every message as the first.",
     &support::at<&StackCosts::in_call_factor>, 0.1, 1},
});

// The prices of the tables above besides each function's own
// (stack.functions.*), by what a run uses them for; with the functions'
// calls, what says whether a cost left undetermined (`~`) mattered to a run.
enum class Price : uint8_t {
  syscall_entry,
  syscall_exit,
  user_loop,
  copy_setup,
  copy_per_byte,
  copy_unaligned_per_byte,
  copy_to_user_per_byte,
  copy_l1d_miss_per_byte,
  unaligned_access,
  unaligned_line_cross,
  mbuf_alloc,
  cluster_alloc,
  mbuf_free,
  cluster_free,
  cksum_per_byte,
  count
};
inline constexpr size_t kPriceCount = static_cast<size_t>(Price::count);

// A price's key in an experiment, and what a run uses it for.
struct PriceKey {
  std::string_view key;
  std::string_view unit;
};
inline constexpr std::array<PriceKey, kPriceCount> kPriceKeys = {{
    {"machine.syscall.entry_cycles", "system calls"},
    {"machine.syscall.exit_cycles", "system calls"},
    {"machine.user_loop_cycles", "turns of the sender's loop"},
    {"machine.copy.setup_cycles", "copies"},
    {"machine.copy.cycles_per_byte", "bytes copied"},
    {"machine.copy.unaligned_cycles_per_byte", "bytes copied off 4-byte alignment"},
    {"machine.copy.to_user_extra_cycles_per_byte", "bytes copied to a user's buffer"},
    {"machine.copy.l1d_miss_extra_cycles_per_byte",
     "bytes copied through lines the L1 data cache no longer held"},
    {"machine.unaligned_access_cycles", "misaligned header accesses"},
    {"machine.unaligned_line_cross_cycles", "misaligned accesses across a cache line"},
    {"stack.alloc.mbuf_cycles", "mbufs allocated"},
    {"stack.alloc.cluster_cycles", "clusters allocated"},
    {"stack.free.mbuf_cycles", "mbufs freed"},
    {"stack.free.cluster_cycles", "clusters freed"},
    {"stack.cksum_cycles_per_byte", "bytes checksummed"},
}};

// How much a run used each price: the calls of each function (by FnId), and
// the events or bytes each other price was charged for (by Price).
struct PriceUses {
  std::array<double, net::kMaxFns> calls{};
  std::array<double, kPriceCount> of{};
  void add(Price p, double n) { of[static_cast<size_t>(p)] += n; }
};

struct InterruptCosts {
  bool enabled = false;
  double handler_cycles = 0;         // entry, acknowledge, exit: per interrupt
  double per_packet_cycles = 0;      // per completed frame, besides freeing it
  int moderation_packets = 1;        // one interrupt per this many completions...
  double moderation_interval_s = 0;  // ...or, if > 0, at most one per interval
};

// interrupts.*: transmit completions and the interrupts that preempt the
// sender.
inline constexpr auto kInterruptKeys = std::to_array<support::KeySpec<InterruptCosts>>({
    {"enabled",
     "Completions raise interrupts; otherwise the driver reclaims finished frames when it "
     "queues new ones.",
     &support::at<&InterruptCosts::enabled>},
    {"handler_cycles", "Cycles per interrupt: entry, acknowledge, exit.",
     &support::at<&InterruptCosts::handler_cycles>, 0, 1e7},
    {"per_packet_cycles", "Cycles per completed frame in the handler, besides freeing its buffers.",
     &support::at<&InterruptCosts::per_packet_cycles>, 0, 1e7},
    {"moderation", "How completions are grouped into interrupts."},
    {"moderation.packets", "One interrupt per this many completed frames.",
     &support::at<&InterruptCosts::moderation_packets>, 1, 65536},
    {"moderation.interval_s",
     "If > 0: at most one interrupt per interval, covering all completions by then "
     "(moderation.packets is then ignored).",
     &support::at<&InterruptCosts::moderation_interval_s>, 0, 1},
});

}  // namespace simloop::models
