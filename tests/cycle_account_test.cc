// models::CycleAccount: transmit completion's work is charged where it runs
// (the handler, or the driver reclaiming as it queues), the functions it
// calls included; and the account counts how much a run used each price,
// which says whether a cost left undetermined mattered.
#include "models/cycle_account.h"

#include <gtest/gtest.h>

#include "models/sender_costs.h"
#include "sim/stack/linux/fns.h"

namespace {

using namespace simloop;
using models::Stage;
using net::lnx::Fn;
using net::lnx::id;

struct LinuxAccount : ::testing::Test {
  LinuxAccount() {
    stack.fns = &net::lnx::fn_table();
    stack.fn_cycles[net::index(id(Fn::nic_clean_tx_irq))] = 10;
    stack.fn_cycles[net::index(id(Fn::free_skb))] = 100;
    stack.fn_cycles[net::index(id(Fn::sock_wfree))] = 1000;
    stack.cksum_cycles_per_byte = 0.5;
  }
  double at(const models::StageCycles& c, Stage s) { return c[static_cast<size_t>(s)]; }
  // Completion freeing one sk_buff, whose destructor releases its socket's charge.
  void complete(models::CycleAccount& acct) {
    acct.enter(id(Fn::nic_clean_tx_irq));
    acct.enter(id(Fn::free_skb));
    acct.enter(id(Fn::sock_wfree));
    acct.leave(id(Fn::sock_wfree));
    acct.leave(id(Fn::free_skb));
    acct.leave(id(Fn::nic_clean_tx_irq));
  }
  models::MachineCosts machine;
  models::StackCosts stack;
};

TEST_F(LinuxAccount, CompletionAndWhatItCallsAreTheHandlersOrTheDrivers) {
  models::CycleAccount acct(machine, stack);
  acct.set_context(models::Context::interrupt);
  complete(acct);
  auto c = acct.take();
  EXPECT_EQ(at(c, Stage::interrupt), 1110);
  EXPECT_EQ(at(c, Stage::mbuf), 0);
  acct.set_context(models::Context::thread);
  complete(acct);
  c = acct.take();
  EXPECT_EQ(at(c, Stage::driver), 1110);
  EXPECT_EQ(at(c, Stage::interrupt), 0);
  // The same free outside completion is the buffer's own stage.
  acct.enter(id(Fn::free_skb));
  acct.leave(id(Fn::free_skb));
  c = acct.take();
  EXPECT_EQ(at(c, Stage::mbuf), 100);
  EXPECT_EQ(at(c, Stage::driver), 0);
}

// sendmmsg's later messages (StackCosts::in_call_factor): the thread's
// functions at the factor until the call returns, an interrupt handler's at
// full price; calls are counted alike.
TEST_F(LinuxAccount, LaterMessagesOfACallPayTheInCallFactor) {
  stack.in_call_factor = 0.25;
  models::CycleAccount acct(machine, stack);
  models::SenderCosts<models::CycleAccount> hooks(acct, machine);
  auto free_once = [&acct] {
    acct.enter(id(Fn::free_skb));
    acct.leave(id(Fn::free_skb));
  };
  hooks.syscall_enter();
  free_once();  // the call's first message
  EXPECT_EQ(at(acct.take(), Stage::mbuf), 100);
  hooks.next_message();
  free_once();
  EXPECT_EQ(at(acct.take(), Stage::mbuf), 25);
  acct.set_context(models::Context::interrupt);
  complete(acct);
  EXPECT_EQ(at(acct.take(), Stage::interrupt), 1110);
  acct.set_context(models::Context::thread);
  free_once();
  EXPECT_EQ(at(acct.take(), Stage::mbuf), 25);
  hooks.syscall_exit();
  free_once();  // the next call's first message
  EXPECT_EQ(at(acct.take(), Stage::mbuf), 100);
  EXPECT_EQ(acct.uses().calls[net::index(id(Fn::free_skb))], 5);
}

// A copy out to a user's buffer pays the machine's extra per byte on top
// of the copy rate; a copy in does not.
TEST_F(LinuxAccount, ACopyToTheUserPaysItsExtraPerByte) {
  machine.copy_cycles_per_byte = 0.5;
  machine.copy_to_user_extra_cycles_per_byte = 0.25;
  models::CycleAccount acct(machine, stack);
  alignas(8) static uint8_t buf[256];
  acct.enter(id(Fn::copy_linear_skb));
  acct.copy(net::CopyKind::to_user, buf, buf + 128, 100);
  acct.leave(id(Fn::copy_linear_skb));
  EXPECT_EQ(at(acct.take(), Stage::copy), 75);
  acct.enter(id(Fn::ip_append_data));
  acct.copy(net::CopyKind::uiomove, buf, buf + 128, 100);
  acct.leave(id(Fn::ip_append_data));
  EXPECT_EQ(at(acct.take(), Stage::copy), 50);
  const auto& of = acct.uses().of;
  EXPECT_EQ(of[static_cast<size_t>(models::Price::copy_per_byte)], 200);
  EXPECT_EQ(of[static_cast<size_t>(models::Price::copy_to_user_per_byte)], 100);
}

TEST_F(LinuxAccount, UsesOfEachPriceAreCounted) {
  models::CycleAccount acct(machine, stack);
  complete(acct);
  complete(acct);
  acct.enter(id(Fn::udp_send_skb));
  alignas(8) static uint8_t buf[64];
  acct.cksum(buf, 26);
  acct.copy(net::CopyKind::uiomove, buf, buf + 2, 18);  // off 4-byte alignment
  acct.leave(id(Fn::udp_send_skb));
  acct.run(models::Code::user_loop);
  acct.run(models::Code::syscall_entry);
  const models::PriceUses& u = acct.uses();
  EXPECT_EQ(u.calls[net::index(id(Fn::nic_clean_tx_irq))], 2);
  EXPECT_EQ(u.calls[net::index(id(Fn::sock_wfree))], 2);
  EXPECT_EQ(u.calls[net::index(id(Fn::udp_send_skb))], 1);
  EXPECT_EQ(u.calls[net::index(id(Fn::ndo_start_xmit))], 0);
  auto of = [&u](models::Price p) { return u.of[static_cast<size_t>(p)]; };
  EXPECT_EQ(of(models::Price::cksum_per_byte), 26);
  EXPECT_EQ(of(models::Price::copy_setup), 1);
  EXPECT_EQ(of(models::Price::copy_per_byte), 18);
  EXPECT_EQ(of(models::Price::copy_unaligned_per_byte), 18);
  EXPECT_EQ(of(models::Price::user_loop), 1);
  EXPECT_EQ(of(models::Price::syscall_entry), 1);
  EXPECT_EQ(of(models::Price::syscall_exit), 0);
  // The checksum is charged to the function that summed, as before.
  EXPECT_EQ(acct.take()[static_cast<size_t>(Stage::udp)], 13);
}

}  // namespace
