#include "models/icache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace simloop::models {
namespace {

constexpr double kL2 = 11, kMem = 150;

// Small caches whose sets and conflicts can be worked out by hand.
ICacheConfig small(CacheGeometry l1, bool prefetch, bool l2_enabled = false,
                   CacheGeometry l2 = {4096, 4, 64}, bool exclusive = true) {
  ICacheConfig c;
  c.l1 = l1;
  c.next_line_prefetch = prefetch;
  c.l2_enabled = l2_enabled;
  c.l2 = l2;
  c.l2_exclusive = exclusive;
  c.l2_hit_cycles = kL2;
  c.memory_cycles = kMem;
  return c;
}

TEST(ICacheGeometry, AthlonDefaultsHave512SetsAnd32KBConflictStride) {
  ICache c{ICacheConfig{}};
  EXPECT_EQ(c.l1_sets(), 512);
  EXPECT_EQ(c.l2_sets(), 256);
  EXPECT_EQ(c.l1_set_of(0xc0401040), c.l1_set_of(0xc0401040 + 32768));
  EXPECT_NE(c.l1_set_of(0xc0401040), c.l1_set_of(0xc0401040 + 64));
  EXPECT_EQ(c.l1_set_of(0x40), 1);
}

TEST(ICacheGeometry, BadGeometryThrowsNamingTheField) {
  auto message = [](ICacheConfig c) -> std::string {
    try {
      ICache cache(c);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "no exception";
  };
  ICacheConfig c;
  c.l1.size_bytes = 48000;
  EXPECT_NE(message(c).find("l1.size_bytes"), std::string::npos) << message(c);
  c = {};
  c.l1.assoc = 3;
  EXPECT_NE(message(c).find("l1.assoc"), std::string::npos) << message(c);
  c = {};
  c.l1.line_bytes = 48;
  EXPECT_NE(message(c).find("l1.line_bytes"), std::string::npos) << message(c);
  c = {};
  c.l1 = {64, 2, 64};  // one way's worth of bytes cannot fill a 2-way set
  EXPECT_NE(message(c).find("multiple of assoc"), std::string::npos) << message(c);
  c = {};
  c.l2.size_bytes = 0;
  EXPECT_NE(message(c).find("l2.size_bytes"), std::string::npos) << message(c);
  c = {};
  c.l2.line_bytes = 128;
  EXPECT_NE(message(c).find("must equal l1.line_bytes"), std::string::npos) << message(c);
  c = {};
  c.page_bytes = 1000;
  EXPECT_NE(message(c).find("page_bytes"), std::string::npos) << message(c);
  c = {};
  c.page_bytes = 32;
  EXPECT_NE(message(c).find("page_bytes"), std::string::npos) << message(c);
  c = {};
  c.memory_cycles = -1;
  EXPECT_NE(message(c).find("memory_cycles"), std::string::npos) << message(c);
  // A disabled L2's geometry is not used, so it is not checked.
  c = {};
  c.l2_enabled = false;
  c.l2.assoc = 3;
  EXPECT_EQ(message(c), "no exception");
}

TEST(ICacheDirectMapped, AddressesOneCacheSizeApartThrash) {
  ICache c(small({1024, 1, 64}, false));  // 16 sets
  const uint64_t a = 0x1000, b = a + 1024;
  ASSERT_EQ(c.l1_set_of(a), c.l1_set_of(b));
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(c.fetch(a, 4), kMem) << i;
    EXPECT_EQ(c.fetch(b, 4), kMem) << i;
  }
  EXPECT_EQ(c.stats().l1_misses, 20u);
  // One line apart they live in different sets: only the cold misses.
  ICache d(small({1024, 1, 64}, false));
  for (int i = 0; i < 10; ++i) {
    d.fetch(a, 4);
    d.fetch(a + 64, 4);
  }
  EXPECT_EQ(d.stats().l1_misses, 2u);
  EXPECT_EQ(d.stats().line_accesses, 20u);
}

TEST(ICacheLru, TwoWaySetEvictsLeastRecentlyUsed) {
  ICache c(small({1024, 2, 64}, false));  // 8 sets: a set repeats every 512 bytes
  const uint64_t a = 0, b = 512, x = 1024;
  ASSERT_EQ(c.l1_set_of(a), c.l1_set_of(b));
  ASSERT_EQ(c.l1_set_of(a), c.l1_set_of(x));
  c.fetch(a, 1);
  c.fetch(b, 1);
  EXPECT_EQ(c.fetch(a, 1), 0);  // hit: a becomes most recent
  EXPECT_EQ(c.fetch(x, 1), kMem);
  EXPECT_TRUE(c.in_l1(a));
  EXPECT_FALSE(c.in_l1(b));
  EXPECT_TRUE(c.in_l1(x));
  EXPECT_EQ(c.fetch(a, 1), 0);
  EXPECT_EQ(c.fetch(b, 1), kMem);  // now x was least recent
  EXPECT_FALSE(c.in_l1(x));
  EXPECT_EQ(c.stats().l1_misses, 4u);
}

TEST(ICachePrefetch, MissBringsNextLineWithoutStall) {
  ICache c(small({1024, 2, 64}, true));
  EXPECT_EQ(c.fetch(0, 1), kMem);
  EXPECT_EQ(c.stats().prefetches, 1u);
  EXPECT_TRUE(c.in_l1(64));
  EXPECT_FALSE(c.in_l1(128));
  EXPECT_EQ(c.fetch(64, 1), 0);  // a hit: no further prefetch
  EXPECT_EQ(c.stats().prefetches, 1u);
  EXPECT_EQ(c.stats().l1_misses, 1u);
  EXPECT_EQ(c.stats().line_accesses, 2u);
  // A miss whose next line is already cached prefetches nothing.
  c.fetch(256, 1);  // brings 320
  EXPECT_EQ(c.stats().prefetches, 2u);
  EXPECT_EQ(c.fetch(192, 1), kMem);  // next line 256 is present
  EXPECT_EQ(c.stats().prefetches, 2u);
}

// The refill cost comes with every demand miss, from whichever level, and
// never with a hit or a prefetch (a prefetched line is charged nothing here).
TEST(ICacheRefill, EveryDemandMissPaysItOnTopOfItsLevel) {
  auto config = small({1024, 1, 64}, true, true, {4096, 4, 64}, true);
  config.l1_refill_cycles = 7;
  ICache c(config);
  EXPECT_EQ(c.fetch(0, 1), kMem + 7);     // memory; prefetches 64
  EXPECT_EQ(c.fetch(64, 1), 0);           // the prefetched line: a hit
  EXPECT_EQ(c.fetch(1024, 1), kMem + 7);  // evicts 0 to L2; prefetch of 1088 evicts 64
  EXPECT_EQ(c.fetch(0, 1), kL2 + 7);      // back from L2, and 64 with it (prefetch)
  EXPECT_EQ(c.fetch(0, 128), 0);
  EXPECT_EQ(c.stats().prefetches, 3u);
  EXPECT_EQ(c.stats().l1_misses, c.stats().l2_hits + c.stats().l2_misses);
  config.l1_refill_cycles = -1;
  EXPECT_THROW(ICache bad(config), std::invalid_argument);
}

TEST(ICachePrefetch, PrefetchCanEvict) {
  ICache c(small({1024, 2, 64}, true));  // set 1 holds lines at 64, 576, 1088
  c.fetch(64, 1);                        // set 1 <- 64, prefetch 128 into set 2
  c.fetch(576, 1);                       // set 1 <- 576, prefetch 640 into set 2
  ASSERT_TRUE(c.in_l1(64));
  ASSERT_TRUE(c.in_l1(576));
  c.fetch(1024, 1);  // set 0 miss; its prefetch of 1088 evicts 64 from set 1
  EXPECT_FALSE(c.in_l1(64));
  EXPECT_TRUE(c.in_l1(576));
  EXPECT_TRUE(c.in_l1(1088));
  EXPECT_EQ(c.stats().prefetches, 3u);
  EXPECT_EQ(c.fetch(1088, 1), 0);
  EXPECT_EQ(c.fetch(64, 1), kMem);
}

TEST(ICacheFetch, RangeTouchesEveryLine) {
  ICache c(small({1024, 2, 64}, false));
  EXPECT_EQ(c.fetch(32, 200), 4 * kMem);  // bytes 32..231: lines 0..3
  EXPECT_EQ(c.stats().line_accesses, 4u);
  EXPECT_EQ(c.stats().l1_misses, 4u);
  EXPECT_EQ(c.fetch(63, 2), 0);  // lines 0 and 1
  EXPECT_EQ(c.stats().line_accesses, 6u);
  EXPECT_EQ(c.fetch(256, 64), kMem);  // exactly one line
  EXPECT_EQ(c.stats().line_accesses, 7u);
  EXPECT_EQ(c.fetch(512, 0), 0);  // nothing
  EXPECT_EQ(c.stats().line_accesses, 7u);

  // With prefetch, a sequential run misses every other line.
  ICache p(small({1024, 2, 64}, true));
  EXPECT_EQ(p.fetch(32, 200), 2 * kMem);
  EXPECT_EQ(p.stats().line_accesses, 4u);
  EXPECT_EQ(p.stats().l1_misses, 2u);
  EXPECT_EQ(p.stats().prefetches, 2u);
}

TEST(ICacheExclusiveL2, VictimsGoToL2AndHitsMoveBack) {
  // L1 direct-mapped, 16 sets; L2 4-way, 16 sets: a and b share a set in both.
  ICache c(small({1024, 1, 64}, false, true, {4096, 4, 64}, true));
  const uint64_t a = 0, b = 1024;
  EXPECT_EQ(c.fetch(a, 1), kMem);
  EXPECT_FALSE(c.in_l2(a));  // exclusive: a memory fill goes to L1 only
  EXPECT_EQ(c.fetch(b, 1), kMem);
  EXPECT_FALSE(c.in_l1(a));
  EXPECT_TRUE(c.in_l2(a));  // the L1 victim
  EXPECT_FALSE(c.in_l2(b));
  EXPECT_EQ(c.fetch(a, 1), kL2);
  EXPECT_TRUE(c.in_l1(a));
  EXPECT_FALSE(c.in_l2(a));  // moved up, not copied
  EXPECT_TRUE(c.in_l2(b));
  EXPECT_EQ(c.fetch(b, 1), kL2);
  EXPECT_TRUE(c.in_l2(a));  // evicted again: re-inserted
  EXPECT_FALSE(c.in_l2(b));
  EXPECT_EQ(c.stats().l1_misses, 4u);
  EXPECT_EQ(c.stats().l2_hits, 2u);
  EXPECT_EQ(c.stats().l2_misses, 2u);
}

// Five lines sharing one L1 set and one 4-way L2 set: exclusive levels hold
// all five (1 + 4), inclusive ones only four (L1 is a copy).
TEST(ICacheExclusiveL2, CapacityIsL1PlusL2) {
  for (const bool exclusive : {true, false}) {
    ICache c(small({1024, 1, 64}, false, true, {4096, 4, 64}, exclusive));
    std::vector<uint64_t> lines;
    for (uint64_t i = 0; i < 5; ++i) lines.push_back(i * 1024);
    for (uint64_t a : lines) ASSERT_EQ(c.l2_set_of(a), c.l2_set_of(lines[0]));
    for (uint64_t a : lines) c.fetch(a, 1);
    c.reset_stats();
    for (int round = 0; round < 3; ++round)
      for (uint64_t a : lines) c.fetch(a, 1);
    EXPECT_EQ(c.stats().l1_misses, 15u);
    if (exclusive) {
      EXPECT_EQ(c.stats().l2_hits, 15u);
    } else {
      EXPECT_EQ(c.stats().l2_misses, 15u);
    }
  }
}

TEST(ICacheInclusiveL2, L2EvictionInvalidatesL1) {
  // L1 2-way, 8 sets; L2 direct-mapped, 64 sets: a and b share set 0 in both,
  // so L1 could hold both but L2 cannot.
  ICache inc(small({1024, 2, 64}, false, true, {4096, 1, 64}, false));
  const uint64_t a = 0, b = 4096;
  ASSERT_EQ(inc.l1_set_of(a), inc.l1_set_of(b));
  ASSERT_EQ(inc.l2_set_of(a), inc.l2_set_of(b));
  EXPECT_EQ(inc.fetch(a, 1), kMem);
  EXPECT_TRUE(inc.in_l1(a));
  EXPECT_TRUE(inc.in_l2(a));  // inclusive: fills go to both
  EXPECT_EQ(inc.fetch(b, 1), kMem);
  EXPECT_FALSE(inc.in_l2(a));
  EXPECT_FALSE(inc.in_l1(a));  // back-invalidated despite a free L1 way
  EXPECT_TRUE(inc.in_l1(b));
  EXPECT_EQ(inc.fetch(a, 1), kMem);

  // The same lines in exclusive levels both stay in L1.
  ICache exc(small({1024, 2, 64}, false, true, {4096, 1, 64}, true));
  exc.fetch(a, 1);
  exc.fetch(b, 1);
  EXPECT_EQ(exc.fetch(a, 1), 0);

  // Without back-invalidation (cachegrind's last level) L1 keeps a: it hits,
  // while L2 holds only b.
  ICacheConfig nb = small({1024, 2, 64}, false, true, {4096, 1, 64}, false);
  nb.l2_back_invalidate = false;
  ICache cg(nb);
  cg.fetch(a, 1);
  cg.fetch(b, 1);
  EXPECT_TRUE(cg.in_l1(a));
  EXPECT_FALSE(cg.in_l2(a));
  EXPECT_EQ(cg.fetch(a, 1), 0);
  EXPECT_EQ(cg.stats().l2_misses, 2u);
}

TEST(ICacheInclusiveL2, L1VictimStaysInL2) {
  ICache c(small({1024, 1, 64}, false, true, {4096, 4, 64}, false));
  const uint64_t a = 0, b = 1024;
  c.fetch(a, 1);
  c.fetch(b, 1);
  EXPECT_FALSE(c.in_l1(a));
  EXPECT_TRUE(c.in_l2(a));
  EXPECT_EQ(c.fetch(a, 1), kL2);
  EXPECT_TRUE(c.in_l2(a));  // inclusive: a hit leaves it in L2 too
  EXPECT_TRUE(c.in_l2(b));
}

TEST(ICachePageMap, PhysicalPlacementChangesL2Conflicts) {
  // Inclusive, L2 direct-mapped with 128 sets (8 KB: two pages). Virtual
  // pages 0 and 2 share L2 sets under the identity map.
  const auto cfg = small({1024, 2, 64}, false, true, {8192, 1, 64}, false);
  const uint64_t a = 0x0000, b = 0x2000;
  ICache c(cfg);
  ASSERT_EQ(c.l2_set_of(a), 0);
  ASSERT_EQ(c.l2_set_of(b), 0);
  c.fetch(a, 1);
  c.fetch(b, 1);
  EXPECT_EQ(c.fetch(a, 1), kMem);  // b's fill back-invalidated a

  // Virtual page 2 on physical page 3: b now uses L2 set 64.
  c.fetch(b, 1);
  c.set_page_map([](uint64_t vpage) { return vpage == 2 ? uint64_t{3} : vpage; });
  EXPECT_FALSE(c.in_l1(b));  // a new placement starts cold
  EXPECT_EQ(c.l2_set_of(a), 0);
  EXPECT_EQ(c.l2_set_of(b), 64);
  EXPECT_EQ(c.l1_set_of(b), c.l1_set_of(a));  // L1 is virtual: unchanged
  c.reset_stats();
  c.fetch(a, 1);
  c.fetch(b, 1);
  EXPECT_EQ(c.fetch(a, 1), 0);
  EXPECT_EQ(c.fetch(b, 1), 0);
  EXPECT_EQ(c.stats().l1_misses, 2u);
}

TEST(ICachePageMap, OffsetWithinPageIsKept) {
  ICache c(ICacheConfig{});  // 256 L2 sets of 64 bytes: a 16 KB period
  c.set_page_map([](uint64_t vpage) { return vpage + 1; });
  // 0x0fc0 is the last line of virtual page 0 -> physical 0x1fc0: line 127.
  EXPECT_EQ(c.l2_set_of(0x0fc0), 127);
  EXPECT_EQ(c.l2_set_of(0x0fc0 + 16384), 127);  // page 4 -> 5: 0x5fc0, line 383
}

// A plain reference model (per-set deques, MRU first) to cross-check the
// flat-array implementation on random streams in every mode.
class ReferenceCache {
 public:
  explicit ReferenceCache(const ICacheConfig& c) : c_(c) {
    l1_.resize(static_cast<size_t>(c.l1.size_bytes / (c.l1.assoc * c.l1.line_bytes)));
    l2_.resize(static_cast<size_t>(c.l2.size_bytes / (c.l2.assoc * c.l2.line_bytes)));
  }
  double fetch(uint64_t addr, uint64_t len) {
    double stall = 0;
    const uint64_t lb = static_cast<uint64_t>(c_.l1.line_bytes);
    for (uint64_t x = addr / lb; x <= (addr + len - 1) / lb; ++x) {
      auto& s = set1(x);
      auto it = std::find(s.begin(), s.end(), x);
      if (it != s.end()) {
        s.erase(it);
        s.push_front(x);
        continue;
      }
      ++misses;
      stall += fill(x);
      if (c_.next_line_prefetch && !has(set1(x + 1), x + 1)) fill(x + 1);
    }
    return stall;
  }
  uint64_t misses = 0;

 private:
  using Set = std::deque<uint64_t>;
  Set& set1(uint64_t x) { return l1_[x % l1_.size()]; }
  Set& set2(uint64_t x) { return l2_[x % l2_.size()]; }
  static bool has(const Set& s, uint64_t x) { return std::find(s.begin(), s.end(), x) != s.end(); }
  static void erase(Set& s, uint64_t x) {
    if (auto it = std::find(s.begin(), s.end(), x); it != s.end()) s.erase(it);
  }
  // Puts x first; returns the line pushed out, or -1.
  static int64_t push(Set& s, uint64_t x, int assoc) {
    s.push_front(x);
    if (static_cast<int>(s.size()) <= assoc) return -1;
    const auto v = static_cast<int64_t>(s.back());
    s.pop_back();
    return v;
  }
  double fill(uint64_t x) {
    double stall = c_.memory_cycles;
    if (!c_.l2_enabled) {
      push(set1(x), x, c_.l1.assoc);
      return stall;
    }
    const bool hit = has(set2(x), x);
    if (hit) stall = c_.l2_hit_cycles;
    if (c_.l2_exclusive) {
      erase(set2(x), x);
      const int64_t v = push(set1(x), x, c_.l1.assoc);
      if (v >= 0) push(set2(static_cast<uint64_t>(v)), static_cast<uint64_t>(v), c_.l2.assoc);
    } else {
      erase(set2(x), x);
      const int64_t v = push(set2(x), x, c_.l2.assoc);
      if (v >= 0) erase(set1(static_cast<uint64_t>(v)), static_cast<uint64_t>(v));
      push(set1(x), x, c_.l1.assoc);
    }
    return stall;
  }
  ICacheConfig c_;
  std::vector<Set> l1_, l2_;
};

TEST(ICacheModel, MatchesReferenceAndStallSplitsByLevel) {
  std::mt19937_64 rng(42);
  for (const bool l2 : {false, true})
    for (const bool exclusive : {true, false})
      for (const bool prefetch : {true, false}) {
        const auto cfg = small({2048, 2, 64}, prefetch, l2, {8192, 4, 64}, exclusive);
        ICache c(cfg);
        ReferenceCache ref(cfg);
        double stall = 0, ref_stall = 0;
        // Code-like stream: ranges from a 32 KB region, reused often.
        std::uniform_int_distribution<uint64_t> start(0, 32768), len(1, 400);
        std::vector<std::pair<uint64_t, uint64_t>> hot;
        for (int i = 0; i < 40; ++i) hot.emplace_back(start(rng), len(rng));
        for (int i = 0; i < 20000; ++i) {
          const auto& [a, n] = hot[rng() % hot.size()];
          stall += c.fetch(a, n);
          ref_stall += ref.fetch(a, n);
        }
        SCOPED_TRACE(::testing::Message()
                     << "l2=" << l2 << " exclusive=" << exclusive << " prefetch=" << prefetch);
        const auto& s = c.stats();
        EXPECT_EQ(s.l1_misses, ref.misses);
        EXPECT_DOUBLE_EQ(stall, ref_stall);
        EXPECT_EQ(s.l1_misses, s.l2_hits + s.l2_misses);
        EXPECT_DOUBLE_EQ(
            stall, static_cast<double>(s.l2_hits) * kL2 + static_cast<double>(s.l2_misses) * kMem);
        EXPECT_GT(s.l1_misses, 0u);
        EXPECT_LT(s.l1_misses, s.line_accesses);
        if (l2) {
          EXPECT_GT(s.l2_hits, 0u);
        } else {
          EXPECT_EQ(s.l2_hits, 0u);
        }
      }
}

TEST(ICacheModel, FlushEmptiesBothLevelsAndKeepsStats) {
  ICache c(small({1024, 1, 64}, false, true, {4096, 4, 64}, true));
  c.fetch(0, 1);
  c.fetch(1024, 1);
  c.flush();
  EXPECT_FALSE(c.in_l1(1024));
  EXPECT_FALSE(c.in_l2(0));
  EXPECT_EQ(c.stats().l1_misses, 2u);
  EXPECT_EQ(c.fetch(0, 1), kMem);
}

}  // namespace
}  // namespace simloop::models
