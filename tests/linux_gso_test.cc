// UDP GSO in the Linux stack (sim/stack/linux/stack_gso_impl.h): a send
// with UDP_SEGMENT crosses lo as one skb and reaches the socket as datagrams
// of gso_size bytes, each with its own headers and the right bytes; the
// functions run as often as Linux runs them; the kernel's limits refuse
// what it refuses; and the workload counts datagrams, not sends.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <vector>

#include "sim/stack/linux/kind.h"
#include "sim/stack/linux/stack.h"
#include "sim/stack/workload/driver.h"

namespace simloop::net::lnx {
namespace {

constexpr uint16_t kPort = 5001;
using LStack = Stack<CountingProbe>;

std::vector<uint8_t> Pattern(int len, int seed) {
  std::vector<uint8_t> v(static_cast<size_t>(len));
  for (int i = 0; i < len; ++i) v[static_cast<size_t>(i)] = static_cast<uint8_t>(i * 13 + seed);
  return v;
}
uint16_t Be16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] << 8 | p[1]);
}
// An Internet checksum written here: 0 when the header verifies.
uint16_t Verify(const uint8_t* p, int n) {
  uint32_t sum = 0;
  for (int i = 0; i + 1 < n; i += 2) sum += static_cast<uint32_t>(p[i] << 8 | p[i + 1]);
  while (sum >> 16 != 0) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum & 0xffff);
}

struct Rig {
  Rig() : st(probe) {
    rx = st.socket();
    tx = st.socket();
    EXPECT_EQ(st.bind(rx, 0, kPort), 0);
  }
  CountingProbe probe;
  LStack st;
  int rx = -1, tx = -1;
};

// segments x size bytes (the last segment `last` bytes short) in one send:
// one skb on the backlog, then that many datagrams with the right bytes.
void SendAndCheck(Rig& r, int size, int segments, int last_short, bool connected) {
  SCOPED_TRACE("size " + std::to_string(size) + " x " + std::to_string(segments));
  ASSERT_EQ(r.st.set_udp_segment(r.tx, size), 0);
  const int len = size * segments - last_short;
  const auto data = Pattern(len, size + segments);
  const int err = connected ? r.st.send(r.tx, data.data(), len)
                            : r.st.sendto(r.tx, data.data(), len, kLoopAddr, kPort);
  ASSERT_EQ(err, 0);
  ASSERT_EQ(r.st.netisr_pending(), 1);  // one skb crosses lo
  const core::SkBuff* skb = r.st.backlog_skb(0);
  EXPECT_EQ(core::skb_shinfo(skb)->gso_size, segments > 1 ? size : 0);
  EXPECT_EQ(core::skb_shinfo(skb)->gso_segs, segments > 1 ? segments : 0);
  ASSERT_EQ(r.st.netisr_run(), 1);
  ASSERT_EQ(r.st.rcv_queued(r.rx), segments);
  std::vector<uint8_t> buf(65536);
  for (int i = 0; i < segments; ++i) {
    const int want = i + 1 < segments ? size : size - last_short;
    // The queued segment's headers, before it is read.
    // The first read moves them all to the reader's own queue.
    const core::Sock& so = r.st.sock(r.rx);
    const core::SkBuff* seg =
        so.reader_queue.next != nullptr ? so.reader_queue.next : so.sk_receive_queue.next;
    ASSERT_NE(seg, nullptr);
    const uint8_t* iph = core::skb_network_header(seg);
    EXPECT_EQ(Verify(iph, 20), 0) << "IP header checksum of segment " << i;
    EXPECT_EQ(Be16(iph + 2), 28 + want);
    EXPECT_EQ(Be16(core::skb_transport_header(seg) + 4), 8 + want);
    int got = -1;
    ASSERT_EQ(r.st.recvfrom(r.rx, buf.data(), static_cast<int>(buf.size()), &got), 0);
    ASSERT_EQ(got, want) << "segment " << i;
    EXPECT_TRUE(std::equal(buf.begin(), buf.begin() + want, data.begin() + i * size))
        << "segment " << i;
  }
  int got = -1;
  EXPECT_EQ(r.st.recvfrom(r.rx, buf.data(), static_cast<int>(buf.size()), &got), EAGAIN);
}

TEST(LinuxGso, SegmentsArriveWithTheRightBytesAndHeaders) {
  Rig r;
  SendAndCheck(r, 100, 4, 0, false);
  SendAndCheck(r, 1472, 44, 0, false);   // 64768 bytes
  SendAndCheck(r, 511, 128, 0, false);   // the most segments Linux takes
  SendAndCheck(r, 1000, 7, 333, false);  // a short last segment
  SendAndCheck(r, 3000, 1, 0, false);    // fits one segment: a plain datagram
  ASSERT_EQ(r.st.connect(r.tx, kLoopAddr, kPort), 0);
  SendAndCheck(r, 18, 64, 0, true);  // connected
  // Everything back: sk_buffs, heads, pages but the sockets' page frags.
  EXPECT_EQ(r.st.pool().skbuff_cache().stats().in_use, 0u);
  EXPECT_EQ(r.st.pool().heads_in_use(), 0u);
  EXPECT_EQ(r.probe.skb_allocs, r.probe.skb_frees);
  EXPECT_EQ(core::sk_rmem_alloc_get(r.st.sock(r.rx)), 0);
  EXPECT_EQ(core::sk_wmem_alloc_get(r.st.sock(r.tx)), 0);
  EXPECT_EQ(r.st.counters().drops_total(), 0u);
}

// Per send of N segments: the send path and the softirq up to the socket
// lookup once, the segmentation's walk once, a segment built (skb_segment,
// __alloc_skb) and queued per datagram, the receive per datagram, and the
// GSO skb freed once beside the N segments.
TEST(LinuxGso, FunctionEntriesPerSend) {
  for (int n : {2, 16, 64}) {
    SCOPED_TRACE(n);
    Rig r;
    ASSERT_EQ(r.st.set_udp_segment(r.tx, 200), 0);
    const auto data = Pattern(200 * n, 1);
    std::vector<uint8_t> buf(65536);
    int queued = 0;  // the segments' truesize, charged while they wait
    auto one = [&] {
      ASSERT_EQ(r.st.sendto(r.tx, data.data(), 200 * n, kLoopAddr, kPort), 0);
      r.st.netisr_run();
      queued = core::sk_rmem_alloc_get(r.st.sock(r.rx));
      int got = 0;
      while (r.st.recvfrom(r.rx, buf.data(), static_cast<int>(buf.size()), &got) == 0) {
      }
    };
    one();  // the page frag's first page
    const auto before = r.probe.entered;
    constexpr int kSends = 10;
    for (int i = 0; i < kSends; ++i) one();
    auto entered = [&](Fn f) {
      return (r.probe.entered[static_cast<size_t>(f)] - before[static_cast<size_t>(f)]) / kSends;
    };
    const auto un = static_cast<uint64_t>(n);
    for (Fn f : {Fn::sys_sendto, Fn::udp_sendmsg, Fn::ip_route_output, Fn::ip_make_skb,
                 Fn::udp_send_skb, Fn::loopback_xmit, Fn::netif_rx, Fn::ip_rcv, Fn::udp4_lib_rcv,
                 Fn::udp4_lib_lookup, Fn::udp_gso_segment})
      EXPECT_EQ(entered(f), 1u) << fn_name(f);
    for (Fn f : {Fn::skb_segment, Fn::udp_queue_rcv_skb, Fn::udp_enqueue_schedule_skb,
                 Fn::skb_copy_datagram_iter, Fn::skb_consume_udp})
      EXPECT_EQ(entered(f), un) << fn_name(f);
    EXPECT_EQ(entered(Fn::alloc_skb), 1 + un);
    EXPECT_EQ(entered(Fn::free_skb), 1 + un);
    // recvfrom: one more call per send finds the queue empty.
    EXPECT_EQ(entered(Fn::sys_recvfrom), un + 1);
    EXPECT_EQ(entered(Fn::udp_recvmsg), un + 1);
    // The segments are paged: no linear copy. Read back to back, their
    // memory goes back when the reader's queue runs dry, and before that
    // only each time a quarter of the receive buffer is owed.
    EXPECT_EQ(entered(Fn::copy_linear_skb), 0u);
    const core::Sock& rx = r.st.sock(r.rx);
    const auto owed = static_cast<uint64_t>(queued / (rx.sk_rcvbuf >> 2));
    ASSERT_GT(queued, 0);
    EXPECT_GE(entered(Fn::udp_rmem_release), 1u);
    EXPECT_LE(entered(Fn::udp_rmem_release), 1 + owed);
    EXPECT_EQ(rx.forward_deficit, 0);
    EXPECT_EQ(core::sk_rmem_alloc_get(rx), 0);
  }
}

TEST(LinuxGso, RefusesWhatLinuxRefuses) {
  Rig r;
  std::vector<uint8_t> data(70000);
  ASSERT_EQ(r.st.set_udp_segment(r.tx, 100), 0);
  // 129 segments: past UDP_MAX_SEGMENTS.
  EXPECT_EQ(r.st.sendto(r.tx, data.data(), 12900, kLoopAddr, kPort), EINVAL);
  EXPECT_EQ(r.st.sendto(r.tx, data.data(), 12800, kLoopAddr, kPort), 0);
  // Over a UDP datagram's 65507 bytes.
  ASSERT_EQ(r.st.set_udp_segment(r.tx, 512), 0);
  EXPECT_EQ(r.st.sendto(r.tx, data.data(), 65536, kLoopAddr, kPort), EMSGSIZE);
  // eth0 offloads no checksum here: Linux fails such a send with EIO.
  EXPECT_EQ(r.st.sendto(r.tx, data.data(), 1024, kPeerAddr, kPort), EIO);
  EXPECT_EQ(r.st.set_udp_segment(r.tx, 70000), EINVAL);
  EXPECT_EQ(r.st.set_udp_segment(99, 100), EBADF);
  // The experiment's key, named, where the limits are broken.
  using workload::Dest;
  EXPECT_EQ(udp_segment_problem(129, Dest::loopback, 100).key, "options.linux.udp_segment");
  EXPECT_TRUE(udp_segment_problem(64, Dest::loopback, 1024));  // 65536 bytes
  EXPECT_FALSE(udp_segment_problem(64, Dest::loopback, 1023));
  EXPECT_TRUE(udp_segment_problem(2, Dest::loopback, 0));
  EXPECT_TRUE(udp_segment_problem(2, Dest::wire, 100));
  EXPECT_FALSE(udp_segment_problem(1, Dest::wire, 1472));
}

// The workload sends payload x N per call and counts N datagrams; a long
// connected run leaves nothing behind.
TEST(LinuxGso, DriverCountsDatagramsPerSend) {
  using LDriver = workload::Driver<CountingProbe, LStack>;
  Options so;
  so.udp_segment = 16;
  workload::DriveOptions opt;
  opt.path.dest = workload::Dest::loopback;
  opt.path.service = workload::Service::simulated;
  opt.payload = 300;
  opt.connected = true;
  opt.sentinels = true;
  opt.warmup = 5;
  CountingProbe probe;
  LDriver drv(probe, opt, so);
  EXPECT_EQ(drv.segments(), 16);
  EXPECT_EQ(drv.payload().size(), 300u * 16);
  ASSERT_EQ(drv.start(), "");
  const uint64_t d0 = drv.stack().counters().delivered;
  constexpr int kSends = 1000;
  for (int i = 0; i < kSends; ++i) ASSERT_TRUE(drv.send().ok());
  drv.finish();
  EXPECT_EQ(drv.stack().counters().delivered - d0, uint64_t{kSends} * 16 + 1);  // + end sentinel
  EXPECT_EQ(drv.stack().counters().drops_total(), 0u);
  EXPECT_EQ(drv.stack().pool().skbuff_cache().stats().in_use, 0u);
}

}  // namespace
}  // namespace simloop::net::lnx
