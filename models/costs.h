// Cost tables: what a machine and a stack charge, in CPU cycles. Plain data,
// filled from configuration; the models below read them.
#pragma once

#include <array>

#include "sim/stack/net/fn_table.h"

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
  // Extra cycles for each misaligned header access (CPUs that allow them),
  // and further cycles when the access also crosses a cache line.
  double unaligned_access_cycles = 0;
  double unaligned_line_cross_cycles = 0;
  int line_bytes = 64;
};

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
};

struct InterruptCosts {
  bool enabled = false;
  double handler_cycles = 0;         // entry, acknowledge, exit: per interrupt
  double per_packet_cycles = 0;      // per completed frame, besides freeing it
  int moderation_packets = 1;        // one interrupt per this many completions...
  double moderation_interval_s = 0;  // ...or, if > 0, at most one per interval
};

}  // namespace simloop::models
