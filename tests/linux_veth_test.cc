// The Linux stack's veth path (dest veth): each datagram is handed by
// veth_xmit to the peer device's backlog, received there by the softirq and
// read by the peer's socket; nothing goes on eth0's ring or through lo.
#include <gtest/gtest.h>

#include <string>

#include "sim/stack/linux/kind.h"
#include "sim/stack/linux/stack.h"
#include "sim/stack/workload/driver.h"

namespace simloop::workload {
namespace {

using net::lnx::Fn;
using LStack = net::lnx::Stack<net::CountingProbe>;
using LDriver = Driver<net::CountingProbe, LStack>;

uint64_t entries(const net::CountingProbe& p, Fn f) {
  return p.entered[net::index(net::lnx::id(f))];
}

struct VethRun {
  net::CountingProbe probe;
  uint64_t sent = 0;
};

// `n` datagrams of `payload` bytes to the veth peer after a warm-up; the
// probe counts only the timed ones.
void drive(VethRun& r, int payload, int n, bool connected, const net::lnx::Options& so = {}) {
  DriveOptions opt;
  opt.path.dest = Dest::veth;
  opt.path.service = Service::simulated;
  opt.payload = payload;
  opt.connected = connected;
  LDriver drv(r.probe, opt, so);
  ASSERT_EQ(drv.start(), "");
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(drv.send().ok());
  r.probe = net::CountingProbe{};
  for (int i = 0; i < n; ++i) {
    const Step s = drv.send();
    ASSERT_TRUE(s.ok()) << drv.why(s);
    EXPECT_FALSE(s.sent.frame);  // no frame on eth0's ring
  }
  r.sent = static_cast<uint64_t>(n);
  const LStack& st = drv.stack();
  EXPECT_EQ(st.veth1().rx_packets, st.veth0().tx_packets);
  EXPECT_EQ(st.eth0().tx_packets, 0u);
  EXPECT_EQ(st.counters().drops_total(), 0u);
  EXPECT_EQ(st.rcv_queued(drv.loop().receiver()), 0);
  drv.finish();
  EXPECT_TRUE(st.pool().idle());
}

TEST(LinuxVeth, EveryDatagramArrivesWithItsBytes) {
  for (const bool connected : {false, true})
    for (const int payload : {0, 18, 1000, 1472}) {
      SCOPED_TRACE(std::to_string(payload) + (connected ? " connected" : ""));
      VethRun r;
      drive(r, payload, 500, connected);
      // In from the sender, and out to the reader.
      EXPECT_EQ(r.probe.copied_bytes[static_cast<size_t>(net::CopyKind::uiomove)],
                500u * static_cast<uint64_t>(payload));
      EXPECT_EQ(r.probe.copied_bytes[static_cast<size_t>(net::CopyKind::to_user)],
                500u * static_cast<uint64_t>(payload));
      EXPECT_EQ(r.probe.skb_allocs, r.probe.skb_frees);
    }
}

TEST(LinuxVeth, EachDatagramEntersTheVethFunctionsOnceAndLoNever) {
  for (const bool connected : {false, true}) {
    SCOPED_TRACE(connected ? "connected" : "unconnected");
    VethRun r;
    drive(r, 512, 1000, connected);
    const uint64_t n = r.sent;
    for (Fn f : {Fn::veth_xmit, Fn::ip_route_input, Fn::netif_rx, Fn::process_backlog,
                 Fn::net_rx_action, Fn::neigh_hh_output, Fn::dev_hard_start_xmit, Fn::ip_rcv,
                 Fn::ip_rcv_finish, Fn::udp4_lib_rcv, Fn::udp_enqueue_schedule_skb,
                 Fn::sys_recvfrom, Fn::alloc_skb, Fn::sock_wfree})
      EXPECT_EQ(entries(r.probe, f), n) << net::lnx::fn_name(f);
    for (Fn f : {Fn::loopback_xmit, Fn::ndo_start_xmit, Fn::nic_clean_tx_irq})
      EXPECT_EQ(entries(r.probe, f), 0u) << net::lnx::fn_name(f);
    // A route per send unless connected; sendto()'s address only without.
    EXPECT_EQ(entries(r.probe, Fn::ip_route_output), connected ? 0u : n);
    EXPECT_EQ(entries(r.probe, Fn::move_addr_to_kernel), connected ? 0u : n);
  }
}

// A jumbo MTU carries a datagram whose head is above kmalloc's largest
// cache: whole pages, allocated and freed once per datagram.
TEST(LinuxVeth, AJumboMtuCarriesDatagramsInWholePageHeads) {
  net::lnx::Options so;
  so.veth_mtu = 9216;
  VethRun r;
  drive(r, 8000, 200, false, so);
  EXPECT_EQ(entries(r.probe, Fn::kmalloc_large), r.sent);
  EXPECT_EQ(entries(r.probe, Fn::free_large_kmalloc), r.sent);
  EXPECT_EQ(r.probe.copied_bytes[static_cast<size_t>(net::CopyKind::uiomove)], 200u * 8000u);
  EXPECT_EQ(r.probe.copied_bytes[static_cast<size_t>(net::CopyKind::to_user)], 200u * 8000u);
}

TEST(LinuxVeth, APayloadOverTheMtuIsRefusedNamingTheKey) {
  net::lnx::Options own;
  const auto p = net::lnx::Kind::problem(net::HostOptions{}, own, Dest::veth, 1473);
  EXPECT_EQ(p.key, "workload.payload");
  EXPECT_NE(p.message.find("options.linux.veth_mtu (1500)"), std::string::npos) << p.message;
  EXPECT_FALSE(net::lnx::Kind::problem(net::HostOptions{}, own, Dest::veth, 1472));
  own.veth_mtu = 9000;
  EXPECT_FALSE(net::lnx::Kind::problem(net::HostOptions{}, own, Dest::veth, 8972));
  EXPECT_TRUE(net::lnx::Kind::problem(net::HostOptions{}, own, Dest::veth, 8973));
}

}  // namespace
}  // namespace simloop::workload
