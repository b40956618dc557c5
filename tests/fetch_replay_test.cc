// FetchReplay must give exactly what simulating every fetch gives: the same
// stall sums (bit for bit), the same counters, the same cache contents. Run
// both side by side over random code maps, geometries and sequences that
// repeat the way packets do (a few per-packet paths, interrupts in between).
#include "models/fetch_replay.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "models/cycle_account.h"
#include "models/fetch_memo.h"
#include "models/fetch_plan.h"
#include "models/icache.h"
#include "sim/layout/layout.h"
#include "sim/stack/bsd/fns.h"

namespace simloop::models {
namespace {

struct Scenario {
  ICacheConfig cfg;
  std::vector<CodeRanges> code;
  std::vector<std::vector<uint16_t>> paths;  // code ids per "packet"
};

Scenario random_scenario(std::mt19937_64& rng) {
  Scenario s;
  const int64_t l1_sizes[] = {1024, 4096, 16384, 65536};
  const int assocs[] = {1, 2, 4, 8};
  s.cfg.l1 = {l1_sizes[rng() % 4], assocs[rng() % 4], 64};
  s.cfg.l1_refill_cycles = static_cast<double>(rng() % 3) * 0.7;  // not only integers
  s.cfg.next_line_prefetch = rng() % 2 == 0;
  s.cfg.l2_enabled = rng() % 4 != 0;
  s.cfg.l2 = {int64_t{1} << (13 + rng() % 4), assocs[rng() % 4] * 2, 64};
  s.cfg.l2_exclusive = rng() % 2 == 0;
  s.cfg.l2_hit_cycles = 11.3;
  s.cfg.memory_cycles = 150.1;
  // Whole stalls too, each way (the replay then counts tallies instead of
  // adding them), and mixed: whole ones first, a fraction later.
  if (rng() % 2 == 0) s.cfg.l2_hit_cycles = 11;
  if (rng() % 2 == 0) s.cfg.memory_cycles = 150;
  if (rng() % 2 == 0) s.cfg.l1_refill_cycles = static_cast<double>(rng() % 3) * 9;
  const int codes = 12 + static_cast<int>(rng() % 20);
  for (int c = 0; c < codes; ++c) {
    CodeRanges r;
    for (int k = 0, n = 1 + static_cast<int>(rng() % 3); k < n; ++k)
      r.emplace_back(0x100000 + (rng() % 0x20000), 8 + rng() % 600);
    s.code.push_back(r);
  }
  for (int p = 0; p < 4; ++p) {
    std::vector<uint16_t> path;
    for (int k = 0, n = 5 + static_cast<int>(rng() % 40); k < n; ++k)
      path.push_back(static_cast<uint16_t>(rng() % static_cast<uint64_t>(codes)));
    s.paths.push_back(path);
  }
  return s;
}

// The misses by line (what the per-function report is made of): the same
// counts and the same stall sums, bit for bit.
void expect_same_tallies(const ICache& plain, const ICache& memo) {
  const auto x = plain.line_misses();
  const auto y = memo.line_misses();
  EXPECT_EQ(x.size(), y.size());
  for (const auto& [line, m] : x) {
    const auto it = y.find(line);
    ASSERT_NE(it, y.end()) << "line " << line;
    EXPECT_EQ(m.misses, it->second.misses) << "line " << line;
    EXPECT_EQ(m.stall, it->second.stall) << "line " << line;
  }
}

TEST(FetchReplay, MatchesSimulatingEveryFetchBitForBit) {
  std::mt19937_64 rng(20261203);
  uint64_t replayed = 0, simulated = 0, chained = 0;
  for (int round = 0; round < 60; ++round) {
    const Scenario s = random_scenario(rng);
    ICache plain(s.cfg), memo(s.cfg);
    plain.tally_lines(true);
    memo.tally_lines(true);
    FetchReplay direct(plain, s.code, false), replay(memo, s.code, true);
    double a = 0, b = 0;
    for (int packet = 0; packet < 400; ++packet) {
      // Mostly path 0, an "interrupt" (path 1) now and then, rarer others.
      const uint64_t r = rng() % 100;
      const auto& path = s.paths[r < 80 ? 0 : r < 92 ? 1 : r < 97 ? 2 : 3];
      for (uint16_t id : path) {
        direct.fetch(id, a);
        replay.fetch(id, b);
      }
      direct.settle(a);
      replay.settle(b);
      ASSERT_EQ(a, b) << "round " << round << " packet " << packet;  // exact
      // Now and then mid-run, the same contents, read through the replays
      // the cache has not written yet (reading writes nothing).
      if (packet % 50 == 49)
        for (const auto& ranges : s.code)
          for (const auto& [start, bytes] : ranges)
            for (uint64_t addr = start; addr < start + bytes; addr += 64) {
              ASSERT_EQ(plain.in_l1(addr), memo.in_l1(addr)) << round << " " << packet;
              ASSERT_EQ(plain.in_l2(addr), memo.in_l2(addr)) << round << " " << packet;
            }
    }
    const auto& x = plain.stats();
    const auto& y = memo.stats();
    EXPECT_EQ(x.line_accesses, y.line_accesses);
    EXPECT_EQ(x.l1_misses, y.l1_misses);
    EXPECT_EQ(x.l2_hits, y.l2_hits);
    EXPECT_EQ(x.l2_misses, y.l2_misses);
    EXPECT_EQ(x.prefetches, y.prefetches);
    // The same contents: every line of the code is cached in both or neither.
    for (const auto& ranges : s.code)
      for (const auto& [start, bytes] : ranges)
        for (uint64_t addr = start; addr < start + bytes; addr += 64) {
          EXPECT_EQ(plain.in_l1(addr), memo.in_l1(addr));
          EXPECT_EQ(plain.in_l2(addr), memo.in_l2(addr));
        }
    expect_same_tallies(plain, memo);
    replayed += replay.counts().replayed;
    simulated += replay.counts().simulated;
    chained += replay.counts().chained;
  }
  // And it did replay (most of the time): otherwise this test shows nothing.
  EXPECT_GT(replayed, 2 * simulated);
  // Some replays were known to hold from the records run before them.
  EXPECT_GT(chained, 100u);
}

// A sequence that thrashes (three lines in one direct-mapped set) never
// leaves the cache as it found it within one run, yet still repeats: the
// replay must charge its misses every time, not only the first.
TEST(FetchReplay, ThrashingSequenceChargesItsMissesEveryTime) {
  ICacheConfig cfg;
  cfg.l1 = {1024, 1, 64};
  cfg.l2_enabled = false;
  cfg.next_line_prefetch = false;
  cfg.memory_cycles = 100;
  const std::vector<CodeRanges> code = {{{0x0, 64}}, {{0x400, 64}}, {{0x800, 64}}};
  ICache cache(cfg);
  FetchReplay replay(cache, code, true);
  for (int packet = 0; packet < 50; ++packet) {
    double c = 0;
    for (uint16_t id : {0, 1, 2}) replay.fetch(id, c);
    replay.settle(c);
    EXPECT_EQ(c, 300) << packet;
  }
  EXPECT_EQ(cache.stats().l1_misses, 150u);
  EXPECT_GT(replay.counts().replayed, 45u);
}

// A packet's path that leaves the cache as it found it, with an interrupt
// between runs of it that evicts some of its lines, after a varying number
// of packets. The packets after each interrupt change the cache back; those
// runs follow the same records every time, however many packets came
// between: after the first few interrupts every replay is known to hold
// from the runs before it, and none has to compare the cache's sets.
TEST(FetchReplay, AnInterruptAtAnyDistanceIsKnownFromTheRunsBefore) {
  ICacheConfig cfg;
  cfg.l1 = {4096, 2, 64};  // 32 sets: 0x800 bytes apart share one
  cfg.l2 = {16384, 4, 64};
  cfg.l2_exclusive = true;
  cfg.l2_hit_cycles = 11;
  cfg.memory_cycles = 150;
  // Code 0: a packet's path over 8 sets; code 1: an interrupt handler in 4
  // of those sets, two lines each (a 2-way set loses both of the path's).
  const std::vector<CodeRanges> code = {{{0x10000, 512}}, {{0x20000, 256}, {0x30000, 256}}};
  ICache plain(cfg), memo(cfg);
  FetchReplay direct(plain, code, false), replay(memo, code, true);
  std::mt19937_64 rng(20261205);
  double a = 0, b = 0;
  int interrupts = 0;
  for (int packet = 0; packet < 4000; ++packet) {
    if (rng() % 12 == 0) {  // about one packet in 12, at random
      ++interrupts;
      direct.fetch(1, a);
      replay.fetch(1, b);
      direct.settle(a);
      replay.settle(b);
    }
    direct.fetch(0, a);
    replay.fetch(0, b);
    direct.settle(a);
    replay.settle(b);
    ASSERT_EQ(a, b) << "packet " << packet;
  }
  EXPECT_EQ(plain.stats().l1_misses, memo.stats().l1_misses);
  EXPECT_EQ(plain.stats().l2_hits, memo.stats().l2_hits);
  ASSERT_GT(interrupts, 200);
  const auto& n = replay.counts();
  EXPECT_LE(n.simulated, 6u);
  EXPECT_LE(n.compared, 4u);
  // The interrupt and the packet after it, at every interrupt but the first few.
  EXPECT_GE(n.chained, 2u * static_cast<uint64_t>(interrupts) - 8);
  // Those replays are written to the sets only when something looks: each
  // interrupt changes 4 sets of L1 and the packets after it change them
  // back, yet the few writes are those of the first interrupts.
  EXPECT_LE(memo.replay_writes(), 32u);
  // The same contents as simulating every fetch, read through the replays
  // not yet written.
  for (uint64_t addr = 0x10000; addr < 0x10200; addr += 64) {
    EXPECT_EQ(plain.in_l1(addr), memo.in_l1(addr)) << addr;
    EXPECT_EQ(plain.in_l2(addr), memo.in_l2(addr)) << addr;
  }
  for (uint64_t addr : {0x20000, 0x20040, 0x30000, 0x300c0}) {
    EXPECT_EQ(plain.in_l1(addr), memo.in_l1(addr)) << addr;
    EXPECT_EQ(plain.in_l2(addr), memo.in_l2(addr)) << addr;
  }
}

// The same with the fetch model between the events and the replay: a random
// layout whose routines have call sites (some of them complete, as walks
// from a profile are), nested enter/leave events and helper events as
// packets produce them, and both fetch modes. The replay keys on the plan's
// segments; it must give exactly what simulating every one gives.
struct Event {
  enum Kind : uint8_t { enter, leave, point } kind;
  size_t owner;
};

LinkedLayout random_layout(std::mt19937_64& rng) {
  const auto& owners = layout_owners();
  LinkedLayout l;
  for (size_t o = 0; o < owners.size(); ++o) {
    if (rng() % 5 == 0) continue;  // some owners run no code of their own
    auto& ranges = l.by_owner[owners[o]];
    for (int k = 0, n = 1 + static_cast<int>(rng() % 3); k < n; ++k)
      ranges.push_back({0x100000 + (rng() % 0x20000), 8 + rng() % 400, owners[o]});
  }
  for (size_t o = 0; o < owners.size(); ++o) {
    if (rng() % 2 == 0) continue;  // the others run their ranges whole
    Routine r;
    r.owner = owners[o];
    r.complete = rng() % 4 == 0;
    for (int k = 0, n = 2 + static_cast<int>(rng() % 6); k < n; ++k) {
      if (rng() % 3 == 0)
        r.steps.push_back({0, 0, static_cast<int>(rng() % owners.size()), -1});
      else
        r.steps.push_back({0x100000 + (rng() % 0x20000), 8 + rng() % 300, -1, -1});
    }
    l.entry[owners[o]] = static_cast<int>(l.routines.size());
    l.routines.push_back(r);
  }
  return l;
}

// One packet: the sender's loop, then stack functions nested a few deep,
// with helper events (header access, checksum, buffers, copies) among them.
void random_calls(std::mt19937_64& rng, int depth, std::vector<Event>& out) {
  for (int k = 0, n = 1 + static_cast<int>(rng() % 3); k < n; ++k) {
    if (rng() % 3 == 0) {
      out.push_back({Event::point, static_cast<size_t>(Code::header_access) + rng() % 5});
      continue;
    }
    const size_t fn = rng() % net::bsd::fn_table().size();
    out.push_back({Event::enter, fn});
    if (depth < 4) random_calls(rng, depth + 1, out);
    out.push_back({Event::leave, fn});
  }
}

// Hands one event to a fetcher (a CodeFetcher or a MemoFetcher).
template <class Fetcher, class F>
void play(Fetcher& f, const Event& e, F& fetch) {
  if (e.kind == Event::enter)
    f.enter(e.owner, fetch);
  else if (e.kind == Event::leave)
    f.leave(e.owner, fetch);
  else
    f.point(e.owner, fetch);
}

std::vector<Event> random_packet(std::mt19937_64& rng) {
  std::vector<Event> p = {{Event::point, kUserLoopOwner},
                          {Event::point, static_cast<size_t>(Code::syscall_entry)}};
  random_calls(rng, 0, p);
  p.push_back({Event::point, static_cast<size_t>(Code::syscall_exit)});
  return p;
}

TEST(FetchReplay, MatchesSimulatingEveryStepOfTheFetchModel) {
  std::mt19937_64 rng(20261204);
  for (const FetchMode mode : {FetchMode::call_sites, FetchMode::entry}) {
    uint64_t replayed = 0, simulated = 0;
    for (int round = 0; round < 40; ++round) {
      const ICacheConfig cfg = random_scenario(rng).cfg;
      const LinkedLayout linked = random_layout(rng);
      const FetchPlan plan = fetch_plan(linked, mode, cfg.l1.line_bytes, net::bsd::fn_table());
      const auto& steps = plan.segments;
      std::vector<std::vector<Event>> packets;
      for (int p = 0; p < 4; ++p) packets.push_back(random_packet(rng));
      ICache plain(cfg), memo(cfg);
      plain.tally_lines(true);
      memo.tally_lines(true);
      FetchReplay direct(plain, steps, false), replay(memo, steps, true);
      CodeFetcher fa, fb;
      fa.attach(&plan);
      fb.attach(&plan);
      double a = 0, b = 0;
      auto fetch_a = [&](uint32_t step) { direct.fetch(step, a); };
      auto fetch_b = [&](uint32_t step) { replay.fetch(step, b); };
      for (int packet = 0; packet < 300; ++packet) {
        const uint64_t r = rng() % 100;
        const auto& events = packets[r < 80 ? 0 : r < 92 ? 1 : r < 97 ? 2 : 3];
        // Settled now and then inside a packet too, as the engine does.
        const size_t cut = rng() % (events.size() + 1);
        for (size_t i = 0; i < events.size(); ++i) {
          if (i == cut) {
            direct.settle(a);
            replay.settle(b);
          }
          play(fa, events[i], fetch_a);
          play(fb, events[i], fetch_b);
        }
        direct.settle(a);
        replay.settle(b);
        ASSERT_EQ(a, b) << fetch_mode_name(mode) << " round " << round << " packet " << packet;
      }
      EXPECT_EQ(plain.stats().line_accesses, memo.stats().line_accesses);
      EXPECT_EQ(plain.stats().l1_misses, memo.stats().l1_misses);
      EXPECT_EQ(plain.stats().l2_misses, memo.stats().l2_misses);
      EXPECT_EQ(plain.stats().prefetches, memo.stats().prefetches);
      EXPECT_GT(plain.stats().line_accesses, 0u);
      for (const auto& ranges : steps)
        for (const auto& [start, bytes] : ranges)
          for (uint64_t addr = start; addr < start + bytes; addr += 64) {
            EXPECT_EQ(plain.in_l1(addr), memo.in_l1(addr));
            EXPECT_EQ(plain.in_l2(addr), memo.in_l2(addr));
          }
      expect_same_tallies(plain, memo);
      replayed += replay.counts().replayed;
      simulated += replay.counts().simulated;
    }
    EXPECT_GT(replayed, simulated) << fetch_mode_name(mode);
  }
}

// The memo must fetch what the fetcher fetches, range for range: on
// packets that repeat (its use), on events in any order (states that do
// not repeat), and past its state limit (where the fetcher goes on alone).
TEST(MemoFetcher, FetchesExactlyWhatTheFetcherFetches) {
  std::mt19937_64 rng(20261203);
  // Events come only for the owners of the plan's stack (its slots).
  const std::vector<size_t> slots = owner_slots(net::bsd::fn_table());
  size_t remembered = 0, events = 0, alone = 0;
  for (const FetchMode mode : {FetchMode::call_sites, FetchMode::entry}) {
    for (int round = 0; round < 60; ++round) {
      const FetchPlan plan = fetch_plan(random_layout(rng), mode, 64, net::bsd::fn_table());
      std::vector<std::vector<Event>> packets;
      for (int p = 0; p < 4; ++p) packets.push_back(random_packet(rng));
      const uint32_t limit =
          round % 3 == 0 ? 1 + static_cast<uint32_t>(rng() % 8) : MemoFetcher::kMaxStates;
      CodeFetcher plain;
      MemoFetcher memo(limit);
      plain.attach(&plan);
      memo.attach(&plan);
      MemoFetcher::Ranges a, b;  // what each fetched, in order
      auto fetch_a = [&](uint32_t s) {
        a.insert(a.end(), plan.segments[s].begin(), plan.segments[s].end());
      };
      auto fetch_b = [&](uint32_t c) {
        ASSERT_FALSE(memo.codes()[c].empty());
        b.insert(b.end(), memo.codes()[c].begin(), memo.codes()[c].end());
      };
      for (int packet = 0; packet < 200; ++packet) {
        std::vector<Event> events_now = packets[rng() % 4];
        if (rng() % 10 == 0)  // now and then, any events in any order
          for (auto& e : events_now)
            e = {static_cast<Event::Kind>(rng() % 3), slots[rng() % slots.size()]};
        for (const Event& e : events_now) {
          play(plain, e, fetch_a);
          play(memo, e, fetch_b);
          ASSERT_EQ(a, b) << fetch_mode_name(mode) << " round " << round << " packet " << packet;
        }
        events += events_now.size();
      }
      EXPECT_LE(memo.states(), limit);
      alone += memo.by_itself() ? 1 : 0;
      if (!memo.by_itself()) remembered += memo.moves();
    }
  }
  // Most events were looked up, not followed; some runs went past the limit.
  EXPECT_LT(remembered * 5, events);
  EXPECT_GT(alone, 0u);
}

// An owner the plan calls inert (no code of its own, no call site of it)
// may have its events skipped, as the memo does: each of them, in any
// state, must fetch nothing and leave the fetcher's frames as they were.
TEST(FetchPlan, AnInertOwnersEventsLeaveTheFetcherAsItWas) {
  std::mt19937_64 rng(20261205);
  const std::vector<size_t> slots = owner_slots(net::bsd::fn_table());
  size_t tried = 0, inert_seen = 0, codeless_but_called = 0;
  for (const FetchMode mode : {FetchMode::call_sites, FetchMode::entry}) {
    for (int round = 0; round < 60; ++round) {
      const FetchPlan plan = fetch_plan(random_layout(rng), mode, 64, net::bsd::fn_table());
      std::vector<size_t> inert;
      for (const size_t o : slots) {
        if (plan.inert(o)) inert.push_back(o);
        if (!plan.inert(o) && plan.entry[o] < 0 && o != kUserLoopOwner) ++codeless_but_called;
      }
      inert_seen += inert.size();
      if (inert.empty()) continue;
      CodeFetcher f;
      f.attach(&plan);
      auto ignore = [](uint32_t) {};
      for (int packet = 0; packet < 20; ++packet)
        for (const Event& e : random_packet(rng)) {
          CodeFetcher g = f;
          size_t fetched = 0;
          auto count = [&](uint32_t) { ++fetched; };
          play(g, {static_cast<Event::Kind>(rng() % 3), inert[rng() % inert.size()]}, count);
          ASSERT_EQ(fetched, 0u) << fetch_mode_name(mode) << " round " << round;
          ASSERT_TRUE(std::ranges::equal(g.frames(), f.frames(),
                                         [](const auto& a, const auto& b) {
                                           return a.routine == b.routine && a.pos == b.pos &&
                                                  a.owner == b.owner;
                                         }))
              << fetch_mode_name(mode) << " round " << round;
          ++tried;
          play(f, e, ignore);
        }
    }
  }
  EXPECT_GT(tried, 1000u);
  // Running no code is not enough: a call site of the owner makes its
  // events move the caller along.
  EXPECT_GT(codeless_but_called, 0u);
  EXPECT_GT(inert_seen, 0u);
  EXPECT_FALSE(fetch_plan(random_layout(rng), FetchMode::call_sites, 64, net::bsd::fn_table())
                   .inert(kUserLoopOwner));
}

}  // namespace
}  // namespace simloop::models

namespace simloop::models {
namespace {

// The memo keeps a row per owner of the plan's stack, not per slot: an
// event of a slot the stack leaves unused is refused, not mixed up with
// another owner's.
TEST(MemoFetcher, RefusesAnEventOfASlotTheStackDoesNotUse) {
  std::mt19937_64 rng(7);
  const FetchPlan plan =
      fetch_plan(random_layout(rng), FetchMode::call_sites, 64, net::bsd::fn_table());
  MemoFetcher memo;
  memo.attach(&plan);
  auto nothing = [](uint32_t /*code*/) {};
  const size_t unused = net::bsd::fn_table().size();  // the first slot past BSD's functions
  ASSERT_LT(unused, kCodeBase);
  EXPECT_THROW(memo.enter(unused, nothing), std::logic_error);
  EXPECT_NO_THROW(memo.enter(0, nothing));
}

}  // namespace
}  // namespace simloop::models
