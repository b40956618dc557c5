// options.linux.sendmmsg: the ttcp loop sends N datagrams per sendmmsg()
// call. The call's part (system call entry and exit, __sys_sendmmsg) runs
// once per N datagrams, each message's part (___sys_sendmsg,
// copy_msghdr_from_user, udp_sendmsg and below) once per datagram, and
// every byte still arrives.
#include <gtest/gtest.h>

#include <string>

#include "sim/stack/linux/kind.h"
#include "sim/stack/linux/stack.h"
#include "sim/stack/workload/driver.h"

namespace simloop::workload {
namespace {

using LStack = net::lnx::Stack<net::CountingProbe>;
using LDriver = Driver<net::CountingProbe, LStack>;
using net::lnx::Fn;

struct Counted : NoHooks {
  int user = 0, enter = 0, exit = 0, receives = 0, later = 0;
  bool open = false;
  void user_loop() { ++user; }
  void next_message() {
    EXPECT_TRUE(open);  // a later message is always inside a call
    ++later;
  }
  void syscall_enter() {
    ++enter;
    open = true;
  }
  void syscall_exit() {
    ++exit;
    open = false;
    EXPECT_EQ(exit, enter);  // every exit closes the call entered last
  }
  void receive_enter() { ++receives; }
};

uint64_t calls(const net::CountingProbe& p, Fn f) {
  return p.entered[net::index(net::lnx::id(f))];
}

struct Tally {
  net::CountingProbe probe;
  Counted hooks;
  uint64_t received_bytes = 0, sent = 0;
};

void drive(Tally& r, int batch, bool connected, int payload, int packets) {
  DriveOptions opt;
  opt.path.dest = Dest::loopback;
  opt.payload = payload;
  opt.connected = connected;
  net::lnx::Options so;
  so.sendmmsg = batch;
  LDriver drv(r.probe, opt, so);
  ASSERT_EQ(drv.start(r.hooks), "");
  for (int i = 0; i < packets; ++i) {
    const Step s = drv.send(r.hooks);
    ASSERT_TRUE(s.ok()) << drv.why(s);
  }
  drv.finish(r.hooks);
  r.received_bytes = drv.stack().sock(drv.loop().receiver()).received_bytes;
  r.sent = drv.stack().counters().sent;
}

TEST(LinuxSendmmsg, TheCallIsChargedOncePerBatchEachMessageOncePerDatagram) {
  constexpr int kPackets = 640;
  for (bool connected : {false, true})
    for (int batch : {2, 8, 64}) {
      SCOPED_TRACE(std::to_string(batch) + (connected ? " connected" : " unconnected"));
      Tally r;
      drive(r, batch, connected, 100, kPackets);
      const uint64_t n = kPackets;
      EXPECT_EQ(r.hooks.enter, kPackets / batch);
      EXPECT_EQ(r.hooks.exit, kPackets / batch);
      EXPECT_EQ(r.hooks.user, kPackets / batch);  // the user's loop, once a call
      // Every message but each call's first is a later one (in_call_factor).
      EXPECT_EQ(r.hooks.later, kPackets - kPackets / batch);
      Tally plain;  // the sendto() loop on the same path
      drive(plain, 1, connected, 100, kPackets);
      EXPECT_EQ(r.hooks.receives, plain.hooks.receives);  // the receiver is unchanged
      EXPECT_EQ(plain.hooks.enter, kPackets);
      EXPECT_EQ(calls(r.probe, Fn::sys_sendmmsg), n / static_cast<uint64_t>(batch));
      EXPECT_EQ(calls(r.probe, Fn::sys_sendmsg), n);
      EXPECT_EQ(calls(r.probe, Fn::copy_msghdr_from_user), n);
      EXPECT_EQ(calls(r.probe, Fn::udp_sendmsg), n);
      EXPECT_EQ(calls(r.probe, Fn::sys_sendto), 0u);
      // The address is copied in per message only when the call names one.
      EXPECT_EQ(calls(r.probe, Fn::move_addr_to_kernel), connected ? 0u : n);
      // connect() looks the route up once.
      EXPECT_EQ(calls(r.probe, Fn::ip_route_output), connected ? 1u : n);
      EXPECT_EQ(r.sent, n);
      EXPECT_EQ(r.received_bytes, n * 100u);
    }
}

TEST(LinuxSendmmsg, OneIsTheSendtoLoop) {
  Tally r;
  drive(r, 1, false, 18, 100);
  EXPECT_EQ(r.hooks.enter, 100);
  EXPECT_EQ(r.hooks.later, 0);
  EXPECT_EQ(calls(r.probe, Fn::sys_sendto), 100u);
  EXPECT_EQ(calls(r.probe, Fn::sys_sendmmsg), 0u);
  EXPECT_EQ(calls(r.probe, Fn::sys_sendmsg), 0u);
  EXPECT_EQ(calls(r.probe, Fn::copy_msghdr_from_user), 0u);
}

TEST(LinuxSendmmsg, ABatchTheRunDoesNotFillIsClosedAtTheEnd) {
  Tally r;
  drive(r, 64, false, 18, 100);  // one full call and one of 36
  EXPECT_EQ(r.hooks.enter, 2);
  EXPECT_EQ(r.hooks.exit, 2);
  EXPECT_EQ(r.hooks.later, 63 + 35);
  EXPECT_EQ(calls(r.probe, Fn::sys_sendmmsg), 2u);
  EXPECT_EQ(r.received_bytes, 100u * 18u);
}

}  // namespace
}  // namespace simloop::workload
