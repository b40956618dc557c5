// What the simulated CPU spends around the stack in the ttcp loop: the
// sender's own loop, the system call's entry and exit, and the receiver's
// system calls, priced from the machine's costs and noted as code that runs
// (for the I-cache). The hooks of workload::TtcpLoop for every caller that
// prices a packet as the simulator does: the engine's sender and the layout
// advisor's recorded path.
#pragma once

#include "models/costs.h"
#include "models/cycle_account.h"
#include "sim/stack/workload/ttcp.h"

namespace simloop::models {

// A: anything with add(Stage, cycles) and run(Code), such as CycleAccount.
template <class A>
struct SenderCosts : workload::NoHooks {
  // syscalls: each datagram is sent and received by a system call (false
  // for a stack the process drives itself, such as a kernel-bypass ring).
  SenderCosts(A& a, const MachineCosts& m, bool per_datagram_syscalls = true)
      : acct(a), mc(m), syscalls(per_datagram_syscalls) {}
  A& acct;
  const MachineCosts& mc;
  bool syscalls;

  void user_loop() {
    acct.add(Stage::user, mc.user_loop_cycles);
    acct.run(Code::user_loop);
  }
  // Entry and exit are charged together, on entry.
  void syscall_enter() {
    if (!syscalls) return;
    acct.add(Stage::syscall, mc.syscall_entry_cycles + mc.syscall_exit_cycles);
    acct.run(Code::syscall_entry);
  }
  void syscall_exit() {
    if constexpr (requires { acct.in_call(false); }) acct.in_call(false);
    if (syscalls) acct.run(Code::syscall_exit);
  }
  // A later message of the same system call: the stack's functions are
  // charged StackCosts::in_call_factor of their cycles until it returns.
  void next_message() {
    if constexpr (requires { acct.in_call(true); }) acct.in_call(true);
  }
  // A sleep inside the call: what runs until its next message is not warm.
  void call_slept() {
    if constexpr (requires { acct.in_call(false); }) acct.in_call(false);
  }
  void receive_enter() {
    if (syscalls) acct.run(Code::syscall_entry);
  }
  void receive_exit() {
    if (!syscalls) return;
    acct.run(Code::syscall_exit);
    acct.add(Stage::receive, mc.syscall_entry_cycles + mc.syscall_exit_cycles);
  }
};

}  // namespace simloop::models
