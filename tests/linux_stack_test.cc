// The Linux UDP stack (sim/stack/linux/stack.h) path by path: datagrams come
// back byte for byte, each kernel function is entered as often as the path
// calls it, headers are what Linux writes (checked with a checksum written
// here), every buffer goes back, and each limit drops or refuses as Linux does.
#include <gtest/gtest.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <map>
#include <vector>

#include "sim/stack/linux/stack.h"

namespace simloop::net::lnx {
namespace {

constexpr uint16_t kPort = 5001;
using Entered = std::array<uint64_t, kMaxFns>;
using LStack = Stack<CountingProbe>;

std::vector<uint8_t> Pattern(int len, int seed) {
  std::vector<uint8_t> v(static_cast<size_t>(len));
  for (int i = 0; i < len; ++i) v[static_cast<size_t>(i)] = static_cast<uint8_t>(i * 31 + seed);
  return v;
}

// An Internet checksum of its own, bytewise big-endian: 0 when `p` verifies.
uint16_t Verify(const uint8_t* p, int n, uint32_t extra = 0) {
  uint32_t sum = extra;
  for (int i = 0; i + 1 < n; i += 2) sum += static_cast<uint32_t>(p[i] << 8 | p[i + 1]);
  if (n % 2 != 0) sum += static_cast<uint32_t>(p[n - 1] << 8);
  while (sum >> 16 != 0) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum & 0xffff);
}
uint32_t Pseudo(uint32_t src, uint32_t dst, uint16_t ulen) {
  return (src >> 16) + (src & 0xffff) + (dst >> 16) + (dst & 0xffff) + 17 + ulen;
}
uint16_t Be16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] << 8 | p[1]);
}
uint32_t Be32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3]);
}

struct Rig {
  explicit Rig(Options o = {}) : st(probe, o) {
    rx = st.socket();
    tx = st.socket();
    EXPECT_EQ(st.bind(rx, 0, kPort), 0);
  }
  // Everything queued anywhere goes back.
  void Drain() {
    st.netisr_run();
    std::vector<uint8_t> buf(65536);
    int got = 0;
    while (st.recvfrom(rx, buf.data(), static_cast<int>(buf.size()), &got) == 0) {
    }
    st.nic_txeof();
  }
  // Every sk_buff and head back; pages only those the sockets' page frags
  // still hold (until they close).
  void ExpectNoLeak() {
    EXPECT_EQ(st.pool().skbuff_cache().stats().in_use, 0u);
    EXPECT_EQ(st.pool().heads_in_use(), 0u);
    size_t held = 0;
    for (int s : {rx, tx}) held += st.sock(s).sk_frag.page != nullptr ? 1 : 0;
    EXPECT_EQ(st.pool().pages().in_use(), held);
    EXPECT_EQ(probe.skb_allocs, probe.skb_frees);
    EXPECT_EQ(probe.skb_head_allocs, probe.skb_head_frees);
    for (int s : {rx, tx}) {
      EXPECT_EQ(core::sk_wmem_alloc_get(st.sock(s)), 0);
      EXPECT_EQ(core::sk_rmem_alloc_get(st.sock(s)), 0);
    }
  }
  CountingProbe probe;
  LStack st;
  int rx = -1, tx = -1;
};

// Each function's entries over a run, against what the path calls per
// packet; every function not named must not run at all.
void ExpectEntries(const Entered& before, const Entered& after, uint64_t packets,
                   const std::map<Fn, uint64_t>& per_packet) {
  for (size_t i = 0; i < static_cast<size_t>(Fn::count); ++i) {
    const auto f = static_cast<Fn>(i);
    const auto it = per_packet.find(f);
    const uint64_t want = it == per_packet.end() ? 0 : it->second * packets;
    EXPECT_EQ(after[i] - before[i], want) << fn_name(f);
  }
}

// Send, softirq and one successful recvfrom of a datagram through lo.
std::map<Fn, uint64_t> LoopbackEntries(bool route_lookup) {
  std::map<Fn, uint64_t> m;
  for (Fn f : {Fn::sys_sendto,
               Fn::udp_sendmsg,
               Fn::ip_make_skb,
               Fn::ip_append_data,
               Fn::alloc_skb,
               Fn::udp_send_skb,
               Fn::ip_send_skb,
               Fn::ip_local_out,
               Fn::ip_output,
               Fn::ip_finish_output2,
               Fn::neigh_hh_output,
               Fn::dev_queue_xmit,
               Fn::dev_hard_start_xmit,
               Fn::loopback_xmit,
               Fn::sock_wfree,
               Fn::netif_rx,
               Fn::net_rx_action,
               Fn::process_backlog,
               Fn::netif_receive_skb_core,
               Fn::ip_rcv,
               Fn::ip_rcv_finish,
               Fn::ip_local_deliver,
               Fn::udp_rcv,
               Fn::udp4_lib_rcv,
               Fn::udp4_lib_lookup,
               Fn::udp_queue_rcv_skb,
               Fn::udp_enqueue_schedule_skb,
               Fn::sys_recvfrom,
               Fn::udp_recvmsg,
               Fn::udp_rmem_release,  // one datagram a read: each read gives its memory back
               Fn::copy_linear_skb,
               Fn::skb_consume_udp,
               Fn::free_skb})
    m[f] = 1;
  if (route_lookup) m[Fn::ip_route_output] = m[Fn::move_addr_to_kernel] = 1;
  return m;
}

// One datagram to `dst` (or to the connected peer), checked on the backlog,
// then received: byte-identical, from the right source.
void LoopOne(Rig& r, uint32_t dst, uint32_t want_src, int len, bool connected) {
  const auto data = Pattern(len, len);
  const int err = connected ? r.st.send(r.tx, data.data(), len)
                            : r.st.sendto(r.tx, data.data(), len, dst, kPort);
  ASSERT_EQ(err, 0) << len;
  ASSERT_EQ(r.st.netisr_pending(), 1);
  const core::SkBuff* skb = r.st.backlog_skb(0);
  const uint8_t* iph = skb->data;
  EXPECT_EQ(reinterpret_cast<uintptr_t>(iph) % 4, 0u);
  EXPECT_EQ(Verify(iph, 20), 0) << "IP header checksum";
  EXPECT_EQ(Be16(iph + 2), 28 + len);
  EXPECT_EQ(Be32(iph + 12), want_src);
  EXPECT_EQ(Be32(iph + 16), dst == 0 ? kLoopAddr : dst);
  EXPECT_EQ(Be16(iph + 6), 0x4000) << "DF";
  // lo: the checksum is left to the device, which never computes it; the
  // field holds the pseudo-header's sum.
  EXPECT_EQ(skb->ip_summed, core::CHECKSUM_PARTIAL);
  const uint32_t ps = Pseudo(want_src, Be32(iph + 16), static_cast<uint16_t>(8 + len));
  EXPECT_EQ(Be16(iph + 26), static_cast<uint16_t>(~Verify(nullptr, 0, ps)));
  ASSERT_EQ(r.st.netisr_run(), 1);
  std::vector<uint8_t> buf(65536, 0xee);
  int got = -1;
  uint32_t src = 0;
  uint16_t sport = 0;
  ASSERT_EQ(r.st.recvfrom(r.rx, buf.data(), static_cast<int>(buf.size()), &got, &src, &sport), 0);
  ASSERT_EQ(got, len);
  EXPECT_TRUE(std::equal(data.begin(), data.end(), buf.begin()));
  EXPECT_EQ(src, want_src);
  EXPECT_EQ(sport, r.st.sock(r.tx).lport);
}

TEST(LinuxStack, LoopbackUnconnectedIsByteIdenticalAndLooksUpARoutePerSend) {
  Rig r;
  for (int len : {0, 1, 18, 1472, 9000, 65507}) LoopOne(r, kLoopAddr, kLoopAddr, len, false);
  const Entered before = r.probe.entered;
  for (int i = 0; i < 100; ++i) LoopOne(r, kLoopAddr, kLoopAddr, 18, false);
  ExpectEntries(before, r.probe.entered, 100, LoopbackEntries(true));
  r.Drain();
  r.ExpectNoLeak();
  EXPECT_EQ(r.st.counters().drops_total(), 0u);
  EXPECT_FALSE(r.st.fault().has_value());
}

// Large datagrams on lo take pages as Linux 6.x does: a head above 8 KiB is
// whole pages (kmalloc_large); from SKB_MAX_ALLOC on, the data goes to the
// socket's 32 KiB page frag, whose page is reused while no datagram in
// flight holds it, and the receiver walks the frags (skb_copy_datagram_iter)
// where a linear datagram is copied by copy_linear_skb.
TEST(LinuxStack, LargeDatagramsTakePagesAsLinuxDoes) {
  struct Case {
    int len;
    std::map<Fn, uint64_t> extra;  // per datagram, beside LoopbackEntries
  };
  const std::vector<Case> cases = {
      {6000, {}},  // a head of 6080 + 320 bytes: kmalloc-8k
      {8000,       // 8064 + 320 bytes: above 8 KiB
       {{Fn::kmalloc_large, 1},
        {Fn::free_large_kmalloc, 1},
        {Fn::alloc_pages, 1},
        {Fn::free_pages, 1}}},
      {12000,
       {{Fn::kmalloc_large, 1},
        {Fn::free_large_kmalloc, 1},
        {Fn::alloc_pages, 1},
        {Fn::free_pages, 1}}},
      {16000,
       {{Fn::kmalloc_large, 1},
        {Fn::free_large_kmalloc, 1},
        {Fn::alloc_pages, 1},
        {Fn::free_pages, 1}}},
      {16005, {{Fn::skb_page_frag_refill, 1}, {Fn::skb_copy_datagram_iter, 1}}},
      {32740, {{Fn::skb_page_frag_refill, 1}, {Fn::skb_copy_datagram_iter, 1}}},
      {40000,
       {{Fn::skb_page_frag_refill, 2},
        {Fn::skb_copy_datagram_iter, 1},
        {Fn::alloc_pages, 1},
        {Fn::folio_put, 1},
        {Fn::free_pages, 1}}},
      {65507,
       {{Fn::skb_page_frag_refill, 2},
        {Fn::skb_copy_datagram_iter, 1},
        {Fn::alloc_pages, 1},
        {Fn::folio_put, 1},
        {Fn::free_pages, 1}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.len);
    Rig r;
    LoopOne(r, kLoopAddr, kLoopAddr, c.len, false);  // the socket's first page
    const Entered before = r.probe.entered;
    for (int i = 0; i < 10; ++i) LoopOne(r, kLoopAddr, kLoopAddr, c.len, false);
    auto want = LoopbackEntries(true);
    for (const auto& [f, n] : c.extra) want[f] += n;
    if (c.extra.count(Fn::skb_copy_datagram_iter) != 0) want.erase(Fn::copy_linear_skb);
    ExpectEntries(before, r.probe.entered, 10, want);
    const bool paged = c.extra.count(Fn::skb_page_frag_refill) != 0;
    EXPECT_EQ(r.st.sock(r.tx).sk_frag.page != nullptr, paged);
    r.Drain();
    r.ExpectNoLeak();
    r.st.close(r.tx);
    EXPECT_TRUE(r.st.pool().idle());
  }
}

// Frags are charged to the sender as they fill, and released with the
// datagram: a send buffer of a few large datagrams blocks and drains like
// one of small ones, byte for byte.
TEST(LinuxStack, PagedDatagramsAreChargedByTheByte) {
  Rig r;
  const auto data = Pattern(40000, 9);
  ASSERT_EQ(r.st.sendto(r.tx, data.data(), 40000, kLoopAddr, kPort), 0);
  const core::SkBuff* skb = r.st.backlog_skb(0);
  EXPECT_EQ(skb->len, 40028u);
  EXPECT_EQ(skb->data_len, 40000u);
  EXPECT_EQ(core::skb_shinfo(skb)->nr_frags, 2);
  EXPECT_GE(skb->truesize, 40000u);
  EXPECT_EQ(core::sk_wmem_alloc_get(r.st.sock(r.tx)), 0) << "lo orphans at xmit";
  EXPECT_EQ(core::sk_rmem_alloc_get(r.st.sock(r.rx)), 0);
  ASSERT_EQ(r.st.netisr_run(), 1);
  EXPECT_EQ(core::sk_rmem_alloc_get(r.st.sock(r.rx)), static_cast<int>(skb->truesize));
  std::vector<uint8_t> buf(65536);
  int got = 0;
  ASSERT_EQ(r.st.recvfrom(r.rx, buf.data(), 65536, &got), 0);
  ASSERT_EQ(got, 40000);
  EXPECT_TRUE(std::equal(data.begin(), data.end(), buf.begin()));
  r.ExpectNoLeak();
}

TEST(LinuxStack, ConnectedSendsSkipTheRouteLookupAndNumberTheirDatagrams) {
  Rig r;
  ASSERT_EQ(r.st.connect(r.tx, kLoopAddr, kPort), 0);
  const Entered before = r.probe.entered;
  for (int i = 0; i < 50; ++i) LoopOne(r, 0, kLoopAddr, 18, true);
  ExpectEntries(before, r.probe.entered, 50, LoopbackEntries(false));
  // The IP ID: the socket's counter, one more per datagram.
  std::vector<uint16_t> ids;
  const auto data = Pattern(18, 1);
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(r.st.send(r.tx, data.data(), 18), 0);
    ids.push_back(Be16(r.st.backlog_skb(i)->data + 4));
  }
  for (size_t i = 1; i < ids.size(); ++i) EXPECT_EQ(ids[i], static_cast<uint16_t>(ids[0] + i));
  // An unconnected socket's DF datagrams carry ID 0.
  const int other = r.st.socket();
  ASSERT_EQ(r.st.sendto(other, data.data(), 18, kLoopAddr, kPort), 0);
  EXPECT_EQ(Be16(r.st.backlog_skb(5)->data + 4), 0);
  // No address on an unconnected socket.
  EXPECT_EQ(r.st.send(other, data.data(), 18), EDESTADDRREQ);
  r.Drain();
  r.ExpectNoLeak();
}

TEST(LinuxStack, SelfGoesThroughLoWithTheHostAddress) {
  Rig r;
  for (int len : {0, 18, 1472, 9000}) LoopOne(r, kHostAddr, kHostAddr, len, false);
  const Entered before = r.probe.entered;
  for (int i = 0; i < 20; ++i) LoopOne(r, kHostAddr, kHostAddr, 18, false);
  ExpectEntries(before, r.probe.entered, 20, LoopbackEntries(true));
  EXPECT_EQ(r.st.eth0().tx_packets, 0u);
  EXPECT_GT(r.st.lo().tx_packets, 0u);
  r.Drain();
  r.ExpectNoLeak();
}

// The frame on the ring, checked field by field with this file's checksum.
void ExpectWireFrame(const core::SkBuff* skb, const std::vector<uint8_t>& data, bool bcast) {
  ASSERT_NE(skb, nullptr);
  const uint8_t* f = skb->data;
  ASSERT_EQ(skb->len, 14u + 28u + data.size());
  const uint8_t dst_mac = bcast ? 0xff : 0x02;
  EXPECT_EQ(f[0], dst_mac);
  EXPECT_EQ(f[5], bcast ? 0xff : 0x02);
  EXPECT_EQ(f[11], 0x01);  // eth0's address
  EXPECT_EQ(Be16(f + 12), 0x0800);
  const uint8_t* iph = f + 14;
  EXPECT_EQ(reinterpret_cast<uintptr_t>(iph) % 4, 0u);
  EXPECT_EQ(Verify(iph, 20), 0);
  const uint32_t dst = bcast ? kBroadcastAddr : kPeerAddr;
  EXPECT_EQ(Be32(iph + 16), dst);
  const auto ulen = static_cast<uint16_t>(8 + data.size());
  EXPECT_EQ(Verify(iph + 20, ulen, Pseudo(kHostAddr, dst, ulen)), 0) << "UDP checksum";
  EXPECT_TRUE(std::equal(data.begin(), data.end(), iph + 28));
}

TEST(LinuxStack, WireFramesLeaveOnTheRingAndFreeTheirSocketMemoryOnCompletion) {
  Rig r;
  for (int len : {0, 1, 18, 1472}) {
    const auto data = Pattern(len, 3);
    ASSERT_EQ(r.st.sendto(r.tx, data.data(), len, kPeerAddr, kPort), 0);
    ASSERT_EQ(r.st.nic_pending(), 1);
    EXPECT_GT(core::sk_wmem_alloc_get(r.st.sock(r.tx)), 0) << "charged until completion";
    ExpectWireFrame(r.st.nic_frame(0), data, false);
    EXPECT_EQ(r.st.netisr_pending(), 0);
    EXPECT_EQ(r.st.nic_txeof(), 1);
    EXPECT_EQ(core::sk_wmem_alloc_get(r.st.sock(r.tx)), 0);
  }
  std::map<Fn, uint64_t> m;
  for (Fn f : {Fn::sys_sendto, Fn::move_addr_to_kernel, Fn::udp_sendmsg, Fn::ip_route_output,
               Fn::ip_make_skb, Fn::ip_append_data, Fn::alloc_skb, Fn::udp_send_skb,
               Fn::ip_send_skb, Fn::ip_local_out, Fn::ip_output, Fn::ip_finish_output2,
               Fn::neigh_hh_output, Fn::dev_queue_xmit, Fn::dev_hard_start_xmit, Fn::ndo_start_xmit,
               Fn::nic_clean_tx_irq, Fn::free_skb, Fn::sock_wfree})
    m[f] = 1;
  const Entered before = r.probe.entered;
  const auto data = Pattern(18, 4);
  for (int i = 0; i < 30; ++i) {
    ASSERT_EQ(r.st.sendto(r.tx, data.data(), 18, kPeerAddr, kPort), 0);
    EXPECT_EQ(r.st.netisr_run(), 0);
    EXPECT_EQ(r.st.nic_txeof(), 1);
  }
  ExpectEntries(before, r.probe.entered, 30, m);
  EXPECT_EQ(r.st.sendto(r.tx, data.data(), 1473, kPeerAddr, kPort), EMSGSIZE);
  EXPECT_EQ(r.st.sendto(r.tx, data.data(), 18, ip_addr(192, 168, 1, 1), kPort), ENETUNREACH);
  r.ExpectNoLeak();
}

TEST(LinuxStack, BroadcastLoopsACloneBackAndSendsTheFrame) {
  Rig r;
  const auto data = Pattern(100, 9);
  const Entered before = r.probe.entered;
  ASSERT_EQ(r.st.sendto(r.tx, data.data(), 100, kBroadcastAddr, kPort), 0);
  ASSERT_EQ(r.st.netisr_pending(), 1);
  ASSERT_EQ(r.st.nic_pending(), 1);
  EXPECT_EQ(r.st.backlog_skb(0)->head, r.st.nic_frame(0)->head) << "a clone shares the data";
  ExpectWireFrame(r.st.nic_frame(0), data, true);
  ASSERT_EQ(r.st.netisr_run(), 1);
  std::vector<uint8_t> buf(2000);
  int got = 0;
  uint32_t src = 0;
  ASSERT_EQ(r.st.recvfrom(r.rx, buf.data(), 2000, &got, &src), 0);
  ASSERT_EQ(got, 100);
  EXPECT_TRUE(std::equal(data.begin(), data.end(), buf.begin()));
  EXPECT_EQ(src, kHostAddr);
  EXPECT_EQ(r.st.nic_txeof(), 1);
  const Entered& after = r.probe.entered;
  EXPECT_EQ(after[index(id(Fn::alloc_skb))] - before[index(id(Fn::alloc_skb))], 1u);
  EXPECT_EQ(after[index(id(Fn::free_skb))] - before[index(id(Fn::free_skb))], 2u);
  EXPECT_EQ(after[index(id(Fn::loopback_xmit))] - before[index(id(Fn::loopback_xmit))], 0u);
  EXPECT_EQ(after[index(id(Fn::ndo_start_xmit))] - before[index(id(Fn::ndo_start_xmit))], 1u);
  r.ExpectNoLeak();
  // Without SO_BROADCAST, Linux refuses.
  Options o;
  o.so_broadcast = false;
  Rig nob(o);
  EXPECT_EQ(nob.st.sendto(nob.tx, data.data(), 10, kBroadcastAddr, kPort), EACCES);
  EXPECT_EQ(nob.st.connect(nob.tx, kBroadcastAddr, kPort), EACCES);
}

TEST(LinuxStack, FullReceiveBufferDropsAndTheSenderDoesNotSeeIt) {
  Rig r;
  const auto data = Pattern(18, 5);
  constexpr int kSends = 400;
  for (int i = 0; i < kSends; ++i) {
    ASSERT_EQ(r.st.sendto(r.tx, data.data(), 18, kLoopAddr, kPort), 0);
    r.st.netisr_run();
  }
  const auto& c = r.st.counters();
  const uint64_t dropped = c.drops[static_cast<size_t>(Drop::sockbuf_full)];
  EXPECT_GT(dropped, 0u);
  EXPECT_EQ(c.delivered + dropped, static_cast<uint64_t>(kSends));
  EXPECT_EQ(r.probe.drops[static_cast<size_t>(Drop::sockbuf_full)], dropped);
  EXPECT_EQ(r.st.sock(r.rx).stats.rcvbuf_errors, dropped);
  EXPECT_EQ(r.st.sock(r.rx).sk_drops, dropped);
  EXPECT_LE(core::sk_rmem_alloc_get(r.st.sock(r.rx)), r.st.sock(r.rx).sk_rcvbuf);
  EXPECT_EQ(static_cast<uint64_t>(r.st.rcv_queued(r.rx)), c.delivered);
  EXPECT_EQ(c.sent, static_cast<uint64_t>(kSends));
  r.Drain();
  r.ExpectNoLeak();
}

// options.linux.so_sndbuf / so_rcvbuf: every socket opened gets the
// setsockopt() a program makes, clamped and doubled as the kernel does;
// 0 leaves sndbuf / rcvbuf (net.core.{w,r}mem_default) as they are.
TEST(LinuxStack, SetsockoptBuffersAreClampedAndDoubled) {
  for (const auto& [so_snd, so_rcv, want_snd, want_rcv] : std::vector<std::array<int, 4>>{
           {0, 0, 212992, 212992}, {1000, 50000, 4608, 100000}, {300000, 1, 425984, 2304}}) {
    Options o;
    o.so_sndbuf = so_snd;
    o.so_rcvbuf = so_rcv;
    Rig r(o);
    EXPECT_EQ(r.st.sock(r.tx).sk_sndbuf, want_snd) << so_snd;
    EXPECT_EQ(r.st.sock(r.rx).sk_rcvbuf, want_rcv) << so_rcv;
  }
}

// The ring is not reaped: the send buffer fills with frames in flight and
// the sender is stopped (EAGAIN with MSG_DONTWAIT, else ENOBUFS: the
// blocking sender's wait is the caller's), until completion frees them.
TEST(LinuxStack, SendBufferExhaustedOnTheWireStopsTheSender) {
  for (bool dontwait : {false, true}) {
    Options o;
    o.dontwait = dontwait;
    o.nic_ring = 4096;
    Rig r(o);
    const auto data = Pattern(18, 6);
    int ok = 0, err = 0;
    while ((err = r.st.sendto(r.tx, data.data(), 18, kPeerAddr, kPort)) == 0) ++ok;
    EXPECT_EQ(err, dontwait ? EAGAIN : ENOBUFS);
    // A blocking socket would sleep for room: its caller is told so, and
    // nothing counts as dropped; MSG_DONTWAIT's EAGAIN loses the datagram.
    EXPECT_EQ(r.st.send_blocked(), !dontwait);
    EXPECT_EQ(r.st.counters().drops[static_cast<size_t>(Drop::no_buffers)], dontwait ? 1u : 0u);
    const unsigned truesize = r.st.nic_frame(0)->truesize;
    EXPECT_EQ(ok, (o.sndbuf + static_cast<int>(truesize) - 1) / static_cast<int>(truesize));
    EXPECT_EQ(r.st.sock(r.tx).stats.sndbuf_full, 1u);
    EXPECT_EQ(r.st.nic_txeof(), ok);
    EXPECT_EQ(r.st.sendto(r.tx, data.data(), 18, kPeerAddr, kPort), 0);
    EXPECT_FALSE(r.st.send_blocked());
    r.Drain();
    r.ExpectNoLeak();
  }
}

// A full ring drops the frame; udp_send_skb hides that from the sender
// unless IP_RECVERR is set.
TEST(LinuxStack, FullRingDropsSilentlyUnlessRecverr) {
  for (bool recverr : {false, true}) {
    Options o;
    o.nic_ring = 8;
    o.recverr = recverr;
    Rig r(o);
    const auto data = Pattern(18, 7);
    for (int i = 0; i < 8; ++i) ASSERT_EQ(r.st.sendto(r.tx, data.data(), 18, kPeerAddr, kPort), 0);
    EXPECT_EQ(r.st.sendto(r.tx, data.data(), 18, kPeerAddr, kPort), recverr ? ENOBUFS : 0);
    EXPECT_EQ(r.st.counters().drops[static_cast<size_t>(Drop::nic_full)], 1u);
    EXPECT_EQ(r.st.sock(r.tx).sndbuf_errors, recverr ? 0u : 1u);
    EXPECT_EQ(r.st.nic_pending(), 8);
    r.Drain();
    r.ExpectNoLeak();
  }
}

TEST(LinuxStack, FullBacklogDropsAsNetisrFull) {
  Options o;
  o.rcvbuf = 1 << 24;
  Rig r(o);
  const auto data = Pattern(18, 8);
  constexpr int kSends = 1100;
  for (int i = 0; i < kSends; ++i)
    ASSERT_EQ(r.st.sendto(r.tx, data.data(), 18, kLoopAddr, kPort), 0);
  // enqueue_to_backlog takes a packet while qlen <= netdev_max_backlog.
  EXPECT_EQ(r.st.netisr_pending(), o.netdev_max_backlog + 1);
  const uint64_t dropped = r.st.counters().drops[static_cast<size_t>(Drop::netisr_full)];
  EXPECT_EQ(dropped, static_cast<uint64_t>(kSends - o.netdev_max_backlog - 1));
  EXPECT_EQ(r.st.lo().rx_dropped, dropped);
  EXPECT_EQ(r.st.netisr_run(), o.netdev_max_backlog + 1);
  EXPECT_EQ(r.st.rcv_queued(r.rx), o.netdev_max_backlog + 1);
  r.Drain();
  r.ExpectNoLeak();
}

TEST(LinuxStack, NoSocketIsCountedAndFreed) {
  Rig r;
  const auto data = Pattern(18, 2);
  ASSERT_EQ(r.st.sendto(r.tx, data.data(), 18, kLoopAddr, 9999), 0);
  r.st.netisr_run();
  EXPECT_EQ(r.st.counters().drops[static_cast<size_t>(Drop::no_port)], 1u);
  EXPECT_EQ(r.st.counters().delivered, 0u);
  r.ExpectNoLeak();
}

TEST(LinuxStack, StrictAlignmentNeverFaultsAndCopyDownIsRefused) {
  Options o;
  o.align = AlignPolicy::strict;
  Rig r(o);
  const auto data = Pattern(33, 1);
  for (uint32_t dst : {kLoopAddr, kHostAddr, kBroadcastAddr, kPeerAddr}) {
    ASSERT_EQ(r.st.sendto(r.tx, data.data(), 33, dst, kPort), 0);
    r.Drain();
  }
  EXPECT_FALSE(r.st.fault().has_value());
  EXPECT_GT(r.probe.header_accesses, 0u);
  EXPECT_EQ(r.probe.misaligned_accesses, 0u);
  EXPECT_EQ(r.st.counters().delivered, 3u);
  r.ExpectNoLeak();
  for (AlignPolicy p : {AlignPolicy::copy_down, AlignPolicy::copy_down_unsafe}) {
    Options bad;
    bad.align = p;
    NullProbe probe;
    EXPECT_THROW(Stack<NullProbe>(probe, bad), std::invalid_argument);
  }
}

// options.linux.headroom: a what-if headroom of 14 (the Ethernet header
// alone) puts every IP and UDP header 2 bytes off, on every destination;
// x86 counts the misaligned accesses, a strict CPU faults on the first.
// The Linux default of 16 is aligned, and headroom 32 as well.
TEST(LinuxStack, HeadroomOffHhDataModMisalignsEveryHeader) {
  const auto data = Pattern(33, 1);
  for (uint32_t dst : {kLoopAddr, kHostAddr, kBroadcastAddr, kPeerAddr}) {
    for (int headroom : {14, 16, 18, 32}) {
      SCOPED_TRACE(testing::Message() << "dst " << dst << " headroom " << headroom);
      Options o;
      o.headroom = headroom;
      Rig r(o);
      ASSERT_EQ(r.st.sendto(r.tx, data.data(), 33, dst, kPort), 0);
      r.Drain();
      const bool off = headroom % 4 != 0;
      EXPECT_EQ(r.probe.misaligned_accesses > 0, off);
      EXPECT_EQ(r.st.counters().delivered, dst == kPeerAddr ? 0u : 1u);
      r.ExpectNoLeak();
      Options so = o;
      so.align = AlignPolicy::strict;
      Rig s(so);
      const int rc = s.st.sendto(s.tx, data.data(), 33, dst, kPort);
      s.Drain();
      EXPECT_EQ(s.st.fault().has_value(), off);
      EXPECT_EQ(rc != 0, off);
      s.ExpectNoLeak();
    }
  }
  for (int bad : {13, 257}) {
    Options o;
    o.headroom = bad;
    NullProbe probe;
    EXPECT_THROW(Stack<NullProbe>(probe, o), std::invalid_argument);
  }
}

TEST(LinuxStack, ClosingASocketFreesItsQueue) {
  Rig r;
  const auto data = Pattern(18, 3);
  for (int i = 0; i < 5; ++i) ASSERT_EQ(r.st.sendto(r.tx, data.data(), 18, kLoopAddr, kPort), 0);
  r.st.netisr_run();
  EXPECT_EQ(r.st.rcv_queued(r.rx), 5);
  r.st.close(r.rx);
  EXPECT_TRUE(r.st.pool().idle());
  int got = 0;
  EXPECT_EQ(r.st.recvfrom(r.rx, nullptr, 0, &got), EBADF);
}

}  // namespace
}  // namespace simloop::net::lnx
