// The 2006 story: ether_output loops a copy of
// a broadcast back through if_simloop. The deep copy (m_dup) misaligns the IP
// header and faults on a strict-alignment CPU; the shallow copy (m_copy)
// shares clusters, so a fix-up that writes in place corrupts the frame still
// waiting on the NIC ring. A correct copy_down fixes the alignment without
// touching the frame, and the byte-for-byte check below catches one that does.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "sim/stack/bsd/stack.h"

namespace simloop::net::bsd {
namespace {

using bsd::Fn;

constexpr uint16_t kRxPort = 5001;
constexpr uint16_t kTxPort = 6001;

// Records header accesses and copies with their addresses.
struct RecordingProbe : NullProbe {
  struct Access {
    Fn fn;
    uintptr_t addr;
    unsigned size;
    bool write;
  };
  struct Copy {
    CopyKind kind;
    uintptr_t src, dst;
    size_t len;
  };
  std::vector<Access> accesses;
  std::vector<Copy> copies;

  void header(FnId fn, const void* addr, unsigned size, bool write) {
    accesses.push_back({static_cast<Fn>(fn), reinterpret_cast<uintptr_t>(addr), size, write});
  }
  void copy(CopyKind kind, const void* src, const void* dst, size_t len) {
    copies.push_back(
        {kind, reinterpret_cast<uintptr_t>(src), reinterpret_cast<uintptr_t>(dst), len});
  }
  std::vector<Access> accesses_in(Fn fn) const {
    std::vector<Access> out;
    for (const auto& a : accesses)
      if (a.fn == fn) out.push_back(a);
    return out;
  }
  std::vector<Copy> copies_of(CopyKind kind) const {
    std::vector<Copy> out;
    for (const auto& c : copies)
      if (c.kind == kind) out.push_back(c);
    return out;
  }
};

std::vector<uint8_t> Payload(int size) {
  std::vector<uint8_t> d(static_cast<size_t>(size));
  for (size_t i = 0; i < d.size(); ++i) d[i] = static_cast<uint8_t>(i * 29 + 3);
  return d;
}

// The frame's bytes as ether_output left them, read over the whole chain.
template <class P>
std::vector<uint8_t> FrameBytes(Stack<P>& st, int i) {
  const Mbuf* m = st.nic_frame(i);
  EXPECT_NE(m, nullptr);
  if (m == nullptr) return {};
  std::vector<uint8_t> out(static_cast<size_t>(m->pkthdr().len));
  st.mbufs().copydata(m, 0, m->pkthdr().len, out.data());
  return out;
}

// The frame an identical stack builds when nothing touches the looped copy:
// same options but AlignPolicy::none, same ip_id sequence, same ports.
std::vector<uint8_t> ReferenceFrame(StackOptions opt, const std::vector<uint8_t>& payload) {
  opt.align = AlignPolicy::none;
  MbufPool pool;
  NullProbe probe;
  Stack<NullProbe> st(pool, probe, opt);
  const int rx = st.socket();
  const int tx = st.socket();
  EXPECT_EQ(st.bind(rx, 0, kRxPort), 0);
  EXPECT_EQ(st.bind(tx, 0, kTxPort), 0);
  EXPECT_EQ(
      st.sendto(tx, payload.data(), static_cast<int>(payload.size()), kBroadcastAddr, kRxPort), 0);
  auto frame = FrameBytes(st, 0);
  // Sanity: the reference is a well-formed frame carrying the payload.
  EXPECT_EQ(frame.size(), payload.size() + kEtherHdrLen + kUdpIpHdrLen);
  EXPECT_TRUE(
      std::equal(payload.begin(), payload.end(), frame.begin() + kEtherHdrLen + kUdpIpHdrLen));
  return frame;
}

// ---- (a) the deep copy on a strict-alignment CPU ---------------------------

class StackStoryDeepCopy : public ::testing::TestWithParam<int> {};

TEST_P(StackStoryDeepCopy, StrictCpuReportsAlignmentFaultAndLeaksNothing) {
  const int size = GetParam();
  MbufPool pool;
  CountingProbe probe;
  StackOptions opt;
  opt.align = AlignPolicy::strict;
  opt.loop_copy = LoopCopy::m_dup;
  Stack<CountingProbe> st(pool, probe, opt);
  const int rx = st.socket();
  const int tx = st.socket();
  ASSERT_EQ(st.bind(rx, 0, kRxPort), 0);
  const auto data = Payload(size);

  // The transmit path itself is aligned: the send succeeds and the frame is queued.
  ASSERT_EQ(st.sendto(tx, data.data(), size, kBroadcastAddr, kRxPort), 0);
  EXPECT_FALSE(st.fault().has_value());
  EXPECT_EQ(st.nic_pending(), 1);
  ASSERT_EQ(st.netisr_pending(), 1);
  EXPECT_EQ(st.netisr_run(), 1);

  ASSERT_TRUE(st.fault().has_value());
  const AlignmentFault& f = *st.fault();
  EXPECT_EQ(f.fn, Fn::ip_input);
  // ip_vhl is a byte and ip_len sits at 0 mod 4: the first access to trap
  // is the 32-bit source address.
  EXPECT_STREQ(f.field, "ip_src");
  EXPECT_EQ(f.size, 4u);
  EXPECT_EQ(f.misalign, 2u);
  // m_dup packs from the start of its buffer: of the packet-header mbuf's
  // internal data, or of a fresh cluster.
  const bool cluster = size + kEtherHdrLen + kUdpIpHdrLen >= kMinClSize;
  const int buffer_start = cluster ? 0 : kMHdrSize + static_cast<int>(sizeof(PktHdr));
  EXPECT_EQ(f.header_offset, buffer_start + kEtherHdrLen);
  EXPECT_STREQ(f.buffer, cluster ? "cluster" : "mbuf");
  EXPECT_EQ(f.offset, f.header_offset + 12);  // ip_src, 12 bytes into the header
  const std::string text = f.describe();
  // No host address: two identical runs must describe a fault identically.
  EXPECT_EQ(text.find("0x"), std::string::npos) << text;
  EXPECT_NE(text.find("ip_input"), std::string::npos) << text;
  EXPECT_NE(text.find("ip_src"), std::string::npos) << text;
  EXPECT_NE(text.find("alignment fault"), std::string::npos) << text;

  EXPECT_EQ(st.counters().drops[static_cast<size_t>(Drop::alignment_fault)], 1u);
  EXPECT_EQ(probe.drops[static_cast<size_t>(Drop::alignment_fault)], 1u);
  EXPECT_EQ(st.counters().drops_total(), 1u);
  EXPECT_EQ(st.counters().delivered, 0u);
  int got = 0;
  std::vector<uint8_t> rbuf(4096);
  EXPECT_EQ(st.recvfrom(rx, rbuf.data(), static_cast<int>(rbuf.size()), &got), EWOULDBLOCK);

  // The dropped copy is already freed; the frame goes with transmit completion.
  EXPECT_FALSE(pool.idle());
  EXPECT_EQ(st.nic_txeof(), 1);
  EXPECT_TRUE(pool.idle());

  // The stack keeps running: the next one (of the other size, so in the
  // other kind of buffer) faults the same way, the first fault stays the
  // one reported.
  const std::string first_buffer = f.buffer;
  const auto other = Payload(size == 18 ? 1000 : 18);
  ASSERT_EQ(st.sendto(tx, other.data(), static_cast<int>(other.size()), kBroadcastAddr, kRxPort),
            0);
  EXPECT_EQ(st.netisr_run(), 1);
  EXPECT_EQ(st.counters().drops[static_cast<size_t>(Drop::alignment_fault)], 2u);
  EXPECT_EQ(st.fault()->buffer, first_buffer);
  EXPECT_EQ(st.nic_txeof(), 1);
  EXPECT_TRUE(pool.idle());
}

INSTANTIATE_TEST_SUITE_P(, StackStoryDeepCopy, ::testing::Values(18, 1000));

// The shallow copy shares the cluster at the same offset, so a cluster-sized
// packet keeps its aligned IP header and is delivered on a strict CPU...
TEST(StackStory, ShallowCopyOfClusterKeepsAlignmentOnStrictCpu) {
  MbufPool pool;
  NullProbe probe;
  StackOptions opt;
  opt.align = AlignPolicy::strict;
  opt.loop_copy = LoopCopy::m_copy;
  Stack<NullProbe> st(pool, probe, opt);
  const int rx = st.socket();
  const int tx = st.socket();
  ASSERT_EQ(st.bind(rx, 0, kRxPort), 0);
  const auto data = Payload(1000);
  ASSERT_EQ(st.sendto(tx, data.data(), 1000, kBroadcastAddr, kRxPort), 0);
  EXPECT_EQ(st.netisr_run(), 1);
  EXPECT_FALSE(st.fault().has_value());
  std::vector<uint8_t> rbuf(2048);
  int got = 0;
  ASSERT_EQ(st.recvfrom(rx, rbuf.data(), static_cast<int>(rbuf.size()), &got), 0);
  ASSERT_EQ(got, 1000);
  EXPECT_TRUE(std::equal(data.begin(), data.end(), rbuf.begin()));
  EXPECT_EQ(st.nic_txeof(), 1);
  EXPECT_TRUE(pool.idle());
}

// ...but m_copym copies internal data to the start of a fresh mbuf, so a
// small packet's copy is misaligned just like m_dup's.
TEST(StackStory, ShallowCopyOfSmallPacketFaultsOnStrictCpu) {
  MbufPool pool;
  NullProbe probe;
  StackOptions opt;
  opt.align = AlignPolicy::strict;
  opt.loop_copy = LoopCopy::m_copy;
  Stack<NullProbe> st(pool, probe, opt);
  const int rx = st.socket();
  const int tx = st.socket();
  ASSERT_EQ(st.bind(rx, 0, kRxPort), 0);
  const auto data = Payload(18);
  ASSERT_EQ(st.sendto(tx, data.data(), 18, kBroadcastAddr, kRxPort), 0);
  EXPECT_EQ(st.netisr_run(), 1);
  ASSERT_TRUE(st.fault().has_value());
  EXPECT_EQ(st.fault()->fn, Fn::ip_input);
  EXPECT_EQ(st.counters().drops[static_cast<size_t>(Drop::alignment_fault)], 1u);
  EXPECT_EQ(st.nic_txeof(), 1);
  EXPECT_TRUE(pool.idle());
}

// On a strict CPU a transmit header off its natural alignment faults: with
// max_linkhdr 14 the IP header is 2 mod 4 and ip_output's 32-bit address
// store traps; with 15 it is odd and udp_output's first 16-bit store traps.
// The store that trapped never happened, so the packet must not go out with
// a half-written header: it is dropped, counted, and the sender told.
struct TransmitFaultCase {
  int max_linkhdr;
  Fn fn;
  const char* field;
};

TEST(StackStory, StrictCpuFaultOnTransmitSendsNothing) {
  for (const auto& c : {TransmitFaultCase{14, Fn::ip_output, "ip_src"},
                        TransmitFaultCase{15, Fn::udp_output, "uh_sport"}}) {
    for (uint32_t dst : {kPeerAddr, kBroadcastAddr, kLoopAddr}) {
      SCOPED_TRACE("max_linkhdr " + std::to_string(c.max_linkhdr) + " dst " + std::to_string(dst));
      MbufPool pool;
      NullProbe probe;
      StackOptions opt;
      opt.align = AlignPolicy::strict;
      opt.max_linkhdr = c.max_linkhdr;
      Stack<NullProbe> st(pool, probe, opt);
      const int rx = st.socket();
      const int tx = st.socket();
      ASSERT_EQ(st.bind(rx, 0, kRxPort), 0);
      const auto data = Payload(18);
      EXPECT_EQ(st.sendto(tx, data.data(), 18, dst, kRxPort), EFAULT);
      ASSERT_TRUE(st.fault().has_value());
      EXPECT_EQ(st.fault()->fn, c.fn);
      EXPECT_STREQ(st.fault()->field, c.field);
      EXPECT_EQ(st.nic_pending(), 0);
      EXPECT_EQ(st.netisr_pending(), 0);
      EXPECT_EQ(st.counters().drops[static_cast<size_t>(Drop::alignment_fault)], 1u);
      EXPECT_EQ(st.counters().send_errors, 1u);
      EXPECT_EQ(st.counters().sent, 0u);
      EXPECT_TRUE(pool.idle());
    }
  }
}

// ---- (b) copy_down with the shallow copy ------------------------------------

struct CopyDownCase {
  int max_linkhdr;
  int payload;
  bool shared;  // the looped copy's misaligned header lives in a shared cluster
};

class StackStoryCopyDown : public ::testing::TestWithParam<CopyDownCase> {};

TEST_P(StackStoryCopyDown, AlignsTheCopyAndLeavesTheFrameUntouched) {
  const CopyDownCase c = GetParam();
  StackOptions opt;
  opt.align = AlignPolicy::copy_down;
  opt.loop_copy = LoopCopy::m_copy;
  opt.max_linkhdr = c.max_linkhdr;
  const auto data = Payload(c.payload);
  const auto reference = ReferenceFrame(opt, data);

  MbufPool pool;
  RecordingProbe probe;
  Stack<RecordingProbe> st(pool, probe, opt);
  const int rx = st.socket();
  const int tx = st.socket();
  ASSERT_EQ(st.bind(rx, 0, kRxPort), 0);
  ASSERT_EQ(st.bind(tx, 0, kTxPort), 0);
  ASSERT_EQ(st.sendto(tx, data.data(), c.payload, kBroadcastAddr, kRxPort), 0);
  ASSERT_EQ(st.nic_pending(), 1);
  ASSERT_EQ(st.netisr_pending(), 1);

  // The fix-up ran inside sendto (if_simloop); the frame must not show it.
  const Mbuf* frame = st.nic_frame(0);
  EXPECT_EQ(FrameBytes(st, 0), reference);
  // The case under test really is the one named: the frame's IP header and
  // whether the copy shares the frame's cluster.
  const uintptr_t frame_ip = mtod_addr(frame) + kEtherHdrLen;
  EXPECT_EQ(frame_ip & 3, c.max_linkhdr == 16 ? 0u : 2u);
  ASSERT_EQ((frame->m_flags & M_EXT) != 0, c.shared);
  if (c.shared) {
    EXPECT_EQ(*frame->ext().refcnt, 2u);
  }

  const auto fixups = probe.copies_of(CopyKind::align_fixup);
  const auto pullups = probe.copies_of(CopyKind::pullup);
  if (c.shared) {
    // Shared storage: nothing moved in place; the header went to a fresh mbuf.
    EXPECT_TRUE(fixups.empty());
    ASSERT_EQ(pullups.size(), 1u);
    const uintptr_t buf = reinterpret_cast<uintptr_t>(frame->ext().buf);
    EXPECT_TRUE(pullups[0].dst < buf || pullups[0].dst >= buf + kMClBytes);
    EXPECT_EQ(pullups[0].dst & 3, 0u);
  } else {
    // A private internal copy: moved down in place by 2 bytes.
    ASSERT_EQ(fixups.size(), 1u);
    EXPECT_EQ(fixups[0].src - fixups[0].dst, 2u);
    EXPECT_EQ(fixups[0].dst & 3, 0u);
  }

  probe.accesses.clear();
  EXPECT_EQ(st.netisr_run(), 1);
  // Input saw an aligned IP header: the first access is ip_vhl at offset 0,
  // and no access in ip_input or udp_input is misaligned.
  const auto in = probe.accesses_in(Fn::ip_input);
  ASSERT_FALSE(in.empty());
  EXPECT_EQ(in.front().addr & 3, 0u);
  for (Fn fn : {Fn::ip_input, Fn::udp_input}) {
    for (const auto& a : probe.accesses_in(fn)) {
      EXPECT_EQ(a.addr & (a.size - 1), 0u) << bsd::fn_name(fn) << " access of " << a.size;
    }
  }
  EXPECT_FALSE(st.fault().has_value());

  // Still byte-for-byte the frame that was built, after input has run too.
  EXPECT_EQ(FrameBytes(st, 0), reference);

  std::vector<uint8_t> rbuf(4096);
  int got = 0;
  ASSERT_EQ(st.recvfrom(rx, rbuf.data(), static_cast<int>(rbuf.size()), &got), 0);
  ASSERT_EQ(got, c.payload);
  EXPECT_TRUE(std::equal(data.begin(), data.end(), rbuf.begin()));
  EXPECT_EQ(st.counters().drops_total(), 0u);
  EXPECT_EQ(st.nic_txeof(), 1);
  EXPECT_TRUE(pool.idle());
}

INSTANTIATE_TEST_SUITE_P(
    , StackStoryCopyDown,
    ::testing::Values(
        // Default: small packets are copied by m_copym into a private mbuf.
        CopyDownCase{16, 18, false}, CopyDownCase{16, 136, false},
        // Ethernet-sized link header: the shared cluster's IP header is misaligned.
        CopyDownCase{14, 1000, true}, CopyDownCase{14, 1472, true}),
    [](const ::testing::TestParamInfo<CopyDownCase>& p) {
      return "linkhdr" + std::to_string(p.param.max_linkhdr) + "_payload" +
             std::to_string(p.param.payload);
    });

// ---- (c) the check catches the naive fix-up ---------------------------------

struct UnsafeResult {
  std::vector<uint8_t> frame;
  std::vector<uint8_t> received;
  bool pool_idle_after = false;
};

UnsafeResult RunUnsafe(const StackOptions& opt, const std::vector<uint8_t>& data) {
  UnsafeResult r;
  MbufPool pool;
  NullProbe probe;
  {
    Stack<NullProbe> st(pool, probe, opt);
    const int rx = st.socket();
    const int tx = st.socket();
    EXPECT_EQ(st.bind(rx, 0, kRxPort), 0);
    EXPECT_EQ(st.bind(tx, 0, kTxPort), 0);
    EXPECT_EQ(st.sendto(tx, data.data(), static_cast<int>(data.size()), kBroadcastAddr, kRxPort),
              0);
    r.frame = FrameBytes(st, 0);
    EXPECT_EQ(st.netisr_run(), 1);
    std::vector<uint8_t> rbuf(4096);
    int got = 0;
    EXPECT_EQ(st.recvfrom(rx, rbuf.data(), static_cast<int>(rbuf.size()), &got), 0);
    r.received.assign(rbuf.begin(), rbuf.begin() + got);
    EXPECT_EQ(st.nic_txeof(), 1);
    r.pool_idle_after = pool.idle();
  }
  return r;
}

TEST(StackStory, NaiveFixupCorruptsTheSharedFrame) {
  StackOptions opt;
  opt.align = AlignPolicy::copy_down_unsafe;
  opt.loop_copy = LoopCopy::m_copy;
  opt.max_linkhdr = 14;
  const auto data = Payload(1000);
  const auto reference = ReferenceFrame(opt, data);
  const UnsafeResult r = RunUnsafe(opt, data);
  EXPECT_NE(r.frame, reference) << "the in-place move must show in the shared frame";
  ASSERT_EQ(r.frame.size(), reference.size());
  // The first bytes moved onto are the Ethernet type: 0x0800 became 0x4500.
  EXPECT_EQ(r.frame[12], 0x45);
  EXPECT_EQ(r.frame[13], 0x00);
  // The receiver cannot tell: its copy is consistent.
  EXPECT_EQ(r.received, data);
  EXPECT_TRUE(r.pool_idle_after);
}

// Where the copy is private the naive fix-up is harmless, and the same check
// says so.
TEST(StackStory, NaiveFixupOnPrivateCopyLeavesFrameIntact) {
  StackOptions opt;
  opt.align = AlignPolicy::copy_down_unsafe;
  opt.loop_copy = LoopCopy::m_copy;
  const auto data = Payload(18);
  const auto reference = ReferenceFrame(opt, data);
  const UnsafeResult r = RunUnsafe(opt, data);
  EXPECT_EQ(r.frame, reference);
  EXPECT_EQ(r.received, data);
  EXPECT_TRUE(r.pool_idle_after);
}

// The seed's sun_noname: a struct sockaddr asks for no alignment, so the link
// can misplace a static one. udp_input fills udp_in, the sender's address,
// through typed fields for every datagram it delivers; misplaced, those
// stores are misaligned (a cost on x86, a fault on a strict CPU), and the
// address the receiver gets is still right.
class StackStorySockaddr : public ::testing::TestWithParam<int> {};

// A stack with udp_in misplaced by `misalign`, a receiver bound to kRxPort
// and a sender bound to kTxPort.
template <class P>
struct SockaddrRig {
  MbufPool pool;
  P probe;
  Stack<P> st;
  int rx, tx;
  SockaddrRig(int misalign, AlignPolicy align)
      : st(pool, probe,
           [&] {
             StackOptions opt;
             opt.align = align;
             opt.sockaddr_misalign = misalign;
             return opt;
           }()),
        rx(st.socket()),
        tx(st.socket()) {
    EXPECT_EQ(st.bind(rx, 0, kRxPort), 0);
    EXPECT_EQ(st.bind(tx, 0, kTxPort), 0);
  }
};

TEST_P(StackStorySockaddr, MisplacedUdpInCostsOnlyOnReceive) {
  const int misalign = GetParam();
  SockaddrRig<RecordingProbe> r(misalign, AlignPolicy::none);
  auto& [pool, probe, st, rx, tx] = r;
  const auto data = Payload(18);

  // To a peer on the wire: nothing is received, udp_in is never touched.
  ASSERT_EQ(st.sendto(tx, data.data(), 18, kPeerAddr, kRxPort), 0);
  EXPECT_TRUE(probe.accesses_in(Fn::udp_input).empty());

  ASSERT_EQ(st.sendto(tx, data.data(), 18, kLoopAddr, kRxPort), 0);
  ASSERT_EQ(st.netisr_run(), 1);
  std::vector<uintptr_t> writes;
  for (const auto& a : probe.accesses_in(Fn::udp_input))
    if (a.write) writes.push_back(a.addr);
  ASSERT_EQ(writes.size(), 2u);  // sin_port, sin_addr
  EXPECT_EQ(writes[1] - writes[0], 2u);
  EXPECT_EQ((writes[0] - 2) & 3, static_cast<uintptr_t>(misalign));

  std::vector<uint8_t> rbuf(64);
  int got = 0;
  uint32_t src = 0;
  uint16_t sport = 0;
  ASSERT_EQ(st.recvfrom(rx, rbuf.data(), static_cast<int>(rbuf.size()), &got, &src, &sport), 0);
  EXPECT_EQ(got, 18);
  EXPECT_EQ(src, kLoopAddr);
  EXPECT_EQ(sport, kTxPort);
}

TEST_P(StackStorySockaddr, StrictCpuFaultsOnAMisplacedUdpIn) {
  const int misalign = GetParam();
  SockaddrRig<CountingProbe> r(misalign, AlignPolicy::strict);
  auto& [pool, probe, st, rx, tx] = r;
  const auto data = Payload(18);
  ASSERT_EQ(st.sendto(tx, data.data(), 18, kLoopAddr, kRxPort), 0);
  ASSERT_EQ(st.netisr_run(), 1);
  if (misalign == 0) {
    EXPECT_FALSE(st.fault().has_value());
    EXPECT_EQ(st.counters().delivered, 1u);
    return;
  }
  ASSERT_TRUE(st.fault().has_value());
  const AlignmentFault& f = *st.fault();
  EXPECT_EQ(f.fn, Fn::udp_input);
  // At 2 mod 4 the 16-bit port is aligned and the address is not.
  EXPECT_STREQ(f.field, misalign == 2 ? "udp_in.sin_addr" : "udp_in.sin_port");
  EXPECT_EQ(f.header_offset, -1);
  EXPECT_STREQ(f.buffer, "udp_in");
  EXPECT_EQ(f.offset, misalign == 2 ? 4 : 2);
  EXPECT_EQ(f.misalign, static_cast<unsigned>((misalign + f.offset) & 3));
  EXPECT_NE(f.describe().find("not in a packet"), std::string::npos) << f.describe();
  EXPECT_EQ(st.counters().delivered, 0u);
  EXPECT_EQ(st.counters().drops[static_cast<size_t>(Drop::alignment_fault)], 1u);
}

INSTANTIATE_TEST_SUITE_P(Misalign, StackStorySockaddr, ::testing::Values(0, 1, 2, 3));

TEST(StackStorySockaddrOptions, OutOfRangeMisalignIsRefused) {
  MbufPool pool;
  NullProbe probe;
  StackOptions opt;
  opt.sockaddr_misalign = 4;
  EXPECT_THROW((Stack<NullProbe>(pool, probe, opt)), std::invalid_argument);
}

}  // namespace
}  // namespace simloop::net::bsd
