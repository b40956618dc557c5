#include "sim/tools/advise/layout_advisor.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "sim/stack/bsd/fns.h"
#include "sim/stack/net/inet.h"

namespace simloop::models {
namespace {

const std::filesystem::path kSrc = SIMLOOP_SOURCE_DIR;

// The ttcp wire path without interrupts: the driver reaps as it queues.
PathTrace wire_trace(int packets_per_interrupt = 0) {
  PathSpec spec;
  spec.path.dest = workload::Dest::wire;
  spec.payload = 18;
  spec.machine.clock_hz = 2e9;
  spec.interrupts.enabled = packets_per_interrupt > 0;
  spec.packets_per_interrupt = packets_per_interrupt;
  spec.price_packets = 50;
  return record_path(spec);
}

// 1 KB direct-mapped, 64-byte lines, no prefetch, no L2: each miss costs
// memory_cycles.
ICacheConfig tiny_cache() {
  ICacheConfig c;
  c.l1 = {1024, 1, 64};
  c.next_line_prefetch = false;
  c.l2_enabled = false;
  c.memory_cycles = 100;
  return c;
}

TEST(LayoutAdvisor, RecordsTheSendPathInOrder) {
  const PathTrace t = wire_trace();
  ASSERT_EQ(t.packets, 20);
  ASSERT_FALSE(t.code.empty());
  // The driver reaps the previous frame (freeing it), then the sender's loop
  // makes a system call; functions left are noted too.
  ASSERT_GE(t.code.size(), 6u);
  EXPECT_EQ(t.code[0], static_cast<uint8_t>(net::bsd::Fn::nic_txeof));
  EXPECT_EQ(t.code[1], static_cast<uint8_t>(Code::mbuf_free));
  EXPECT_EQ(t.code[2], static_cast<uint8_t>(net::bsd::Fn::nic_txeof) | kLeave);
  EXPECT_EQ(t.code[3], static_cast<uint8_t>(Code::user_loop));
  EXPECT_EQ(t.code[4], static_cast<uint8_t>(Code::syscall_entry));
  EXPECT_EQ(t.code[5], static_cast<uint8_t>(net::bsd::Fn::sendto));
  // Every function entered is left, in nesting order.
  std::vector<uint8_t> open;
  for (uint8_t c : t.code) {
    if ((c & kLeave) != 0) {
      ASSERT_FALSE(open.empty());
      EXPECT_EQ(open.back(), c & ~kLeave);
      open.pop_back();
    } else if (c < kCodeBase) {
      open.push_back(c);
    }
  }
  EXPECT_TRUE(open.empty());
  // Helpers are noted at their own events: one allocation at least, and
  // checksums, per packet.
  int allocs = 0, cksums = 0;
  for (uint8_t c : t.code) {
    allocs += c == static_cast<uint8_t>(Code::mbuf_alloc);
    cksums += c == static_cast<uint8_t>(Code::cksum);
  }
  EXPECT_GE(allocs, 20);
  EXPECT_GE(cksums, 20);
  int ip = 0;
  for (uint8_t c : t.code) ip += c == static_cast<uint8_t>(net::bsd::Fn::ip_output);
  EXPECT_EQ(ip, 20);
}

TEST(LayoutAdvisor, FindsTheHandComputedCollision) {
  const Layout l = load_layout_yaml(kSrc / "tests/data/advisor_tiny.yaml");
  EvalOptions opt;
  opt.detail = true;
  const Evaluation e = evaluate(link(l), tiny_cache(), wire_trace(), opt);
  // sys_sendto and ip_output evict each other in set 0: two misses a packet.
  EXPECT_DOUBLE_EQ(e.l1_misses_per_packet, 2.0);
  EXPECT_DOUBLE_EQ(e.stall_cycles_per_packet, 200.0);
  ASSERT_EQ(e.conflicts.size(), 1u);
  const SetConflict& sc = e.conflicts[0];
  EXPECT_EQ(sc.set, 0);
  EXPECT_DOUBLE_EQ(sc.misses_per_packet, 2.0);
  ASSERT_EQ(sc.lines.size(), 2u);
  EXPECT_EQ(sc.lines[0].addr, 0x10000u);
  EXPECT_EQ(sc.lines[0].symbol, "sys_sendto");
  EXPECT_EQ(sc.lines[0].owner, "sendto");
  EXPECT_DOUBLE_EQ(sc.lines[0].misses_per_packet, 1.0);
  EXPECT_EQ(sc.lines[1].addr, 0x10400u);
  EXPECT_EQ(sc.lines[1].symbol, "ip_output");
}

TEST(LayoutAdvisor, SearchRemovesAnAvoidableConflict) {
  const Layout l = load_layout_yaml(kSrc / "tests/data/advisor_tiny.yaml");
  SearchOptions opt;
  opt.budget_s = 5;
  opt.max_pad = 256;
  const SearchResult r = search_layout(l, {}, tiny_cache(), wire_trace(), opt);
  EXPECT_DOUBLE_EQ(r.before.l1_misses_per_packet, 2.0);
  EXPECT_DOUBLE_EQ(r.after.l1_misses_per_packet, 0.0);
  EXPECT_TRUE(r.after.conflicts.empty());
  // The recommendation, linked again, really has no misses.
  EXPECT_DOUBLE_EQ(evaluate(link(r.layout), tiny_cache(), wire_trace()).l1_misses_per_packet, 0.0);
  ASSERT_EQ(r.order.size(), 3u);
  // Same seed, same answer.
  const SearchResult again = search_layout(l, {}, tiny_cache(), wire_trace(), opt);
  EXPECT_EQ(again.order, r.order);
  EXPECT_EQ(again.padding.object, r.padding.object);
  EXPECT_EQ(again.padding.bytes, r.padding.bytes);
}

TEST(LayoutAdvisor, NeverRecommendsWorseWhenMissesAreCapacity) {
  const Layout l = load_layout_yaml(kSrc / "tests/data/advisor_capacity.yaml");
  SearchOptions opt;
  opt.budget_s = 5;
  opt.max_pad = 256;
  const SearchResult r = search_layout(l, {}, tiny_cache(), wire_trace(), opt);
  // sys_sendto's 24 lines fill sets 0-15 and then 0-7 again: 16 misses;
  // ip_output's two lines (sets 0 and 1) miss too, and sit where they add
  // the fewest (elsewhere they would also evict sets 8-15). 18 is the least.
  EXPECT_DOUBLE_EQ(r.before.l1_misses_per_packet, 18.0);
  EXPECT_DOUBLE_EQ(r.after.l1_misses_per_packet, 18.0);
  EXPECT_LE(r.after.stall_cycles_per_packet, r.before.stall_cycles_per_packet);
}

// The seed experiments' cache (experiments/seed/icache-*.yaml).
ICacheConfig athlon_cache() {
  ICacheConfig c;
  c.l1 = {65536, 2, 64};
  c.next_line_prefetch = true;
  c.l2_enabled = true;
  c.l2 = {262144, 16, 64};
  c.l2_exclusive = true;
  c.l2_hit_cycles = 11;
  c.memory_cycles = 150;
  return c;
}

double seed_misses(uint64_t pad_bytes) {
  Layout k = load_layout_yaml(kSrc / "configs/layouts/freebsd6-i386-synthetic.yaml");
  if (pad_bytes > 0) k = pad_object(k, "nfs_diskless.o", pad_bytes);
  const LinkedLayout user = link(load_layout_yaml(kSrc / "configs/layouts/ttcp-user.yaml"));
  // The full simulation takes one interrupt per 41 packets (100000 packets,
  // ~2440 interrupts).
  return evaluate(link_with(k, user), athlon_cache(), wire_trace(41)).l1_misses_per_packet;
}

// i1_misses_per_packet of `simloop run experiments/seed/icache-baseline.yaml`
// and icache-padded.yaml (100000 packets, cold misses included).
TEST(LayoutAdvisor, MatchesTheFullSimulationOnTheSeedLayouts) {
  EXPECT_NEAR(seed_misses(0), 33.8814, 33.8814 * 0.02);
  EXPECT_NEAR(seed_misses(500), 70.7795, 70.7795 * 0.02);
}

}  // namespace
}  // namespace simloop::models
