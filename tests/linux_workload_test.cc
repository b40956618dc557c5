// The Linux stack under the workload layer: workload::Driver and TtcpLoop
// drive lnx::Stack as they drive the BSD stack, on every destination, and a
// long run leaves nothing behind.
#include <gtest/gtest.h>

#include <string>

#include "sim/stack/linux/kind.h"
#include "sim/stack/linux/stack.h"
#include "sim/stack/workload/driver.h"

namespace simloop::workload {
namespace {

using LStack = net::lnx::Stack<net::CountingProbe>;
using LDriver = Driver<net::CountingProbe, LStack>;

// The largest payload each destination carries unfragmented.
int MaxPayload(Dest d, const net::lnx::Options& o) {
  const bool lo = d == Dest::loopback || d == Dest::self;
  return (lo ? std::min(o.lo_mtu, 65535) : o.eth_mtu) - net::kUdpIpHdrLen;
}

TEST(LinuxWorkload, TenThousandDatagramsOnEveryDestinationLeaveNothingBehind) {
  constexpr int kPackets = 10000;
  const net::lnx::Options so;
  for (Dest d : kDests) {
    for (int payload : {0, 18, 1472, 9000}) {
      if (payload > MaxPayload(d, so)) continue;
      SCOPED_TRACE(std::string(dest_name(d)) + " " + std::to_string(payload));
      net::CountingProbe probe;
      DriveOptions opt;
      opt.path.dest = d;
      opt.payload = payload;
      opt.sentinels = true;
      opt.warmup = 10;
      LDriver drv(probe, opt, so);
      ASSERT_EQ(drv.start(), "");
      for (int i = 0; i < kPackets; ++i) {
        const Step s = drv.send();
        ASSERT_TRUE(s.ok()) << drv.why(s);
        EXPECT_EQ(s.sent.frame, uses_ring(d));
      }
      drv.finish();
      const LStack& st = drv.stack();
      const uint64_t total = kPackets + 10 + 2;
      EXPECT_EQ(st.counters().sent, total);
      EXPECT_EQ(st.counters().delivered, loops_back(d) ? total : 0u);
      EXPECT_EQ(st.eth0().tx_packets, uses_ring(d) ? total : 0u);
      EXPECT_EQ(st.counters().drops_total(), 0u);
      EXPECT_FALSE(st.fault().has_value());
      EXPECT_TRUE(st.pool().idle());
      EXPECT_EQ(probe.skb_allocs, probe.skb_frees);
      EXPECT_EQ(probe.skb_head_allocs, probe.skb_head_frees);
      // In from the sender, and out to the reader where it loops back.
      EXPECT_EQ(probe.copied_bytes[static_cast<size_t>(net::CopyKind::uiomove)],
                (kPackets + 10) * static_cast<uint64_t>(payload) + 2 * kSentinelLen);
      EXPECT_EQ(probe.copied_bytes[static_cast<size_t>(net::CopyKind::to_user)],
                (loops_back(d) ? 1 : 0) * ((kPackets + 10) * static_cast<uint64_t>(payload) +
                                           2 * kSentinelLen));
    }
  }
}

TEST(LinuxWorkload, PathsWithoutALinuxCounterpartAreRefused) {
  net::CountingProbe probe;
  DriveOptions opt;
  opt.path.align = net::AlignPolicy::copy_down;
  EXPECT_THROW(LDriver(probe, opt, {}), PathError);
  opt.path.align = net::AlignPolicy::strict;
  opt.path.copy = net::LoopCopy::m_dup;
  EXPECT_THROW(LDriver(probe, opt, {}), PathError);
  opt.path.copy = net::LoopCopy::m_copy;
  opt.path.sockaddr_misalign = 2;
  EXPECT_THROW(LDriver(probe, opt, {}), PathError);
  opt.path.sockaddr_misalign = 0;
  LDriver ok(probe, opt, {});
  EXPECT_EQ(ok.stack().options().align, net::AlignPolicy::strict);
}

}  // namespace
}  // namespace simloop::workload
