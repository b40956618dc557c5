// The fetch model: which ranges each event fetches, in order, with call
// sites, loops, complete routines and the packet's root; and the layouts
// that carry call sites (YAML `calls`, walks from a profile).
#include "models/fetch_plan.h"

#include <gtest/gtest.h>

#include <random>
#include <sstream>

#include "models/cycle_account.h"
#include "models/icache.h"
#include "models/icache_probe.h"
#include "models/tee.h"
#include "sim/layout/layout.h"
#include "sim/stack/bsd/fns.h"

namespace simloop::models {
namespace {

using Range = std::pair<uint64_t, uint64_t>;
using Ranges = std::vector<Range>;

// The owner slot of `name` in the BSD stack.
size_t owner(const std::string& name) {
  return owner_slot(net::bsd::fn_table(), name).value();
}

// Records what each event fetches.
struct Recorder {
  const FetchPlan* plan;
  Ranges got;
  void operator()(uint32_t segment) {
    for (const auto& r : plan->segments[segment]) got.push_back(r);
  }
};

// udp_output's code calls ip_output half-way through its hot bytes.
Layout two_level() {
  Layout l;
  l.name = "two";
  l.text_base = 0x1000;
  ObjectFile a{"udp.o", 0x400, 16, {}};
  HotFunction f{"udp_output", "udp_output", 0, 0x100, 0x80, 0, 0, {{0x40, "ip_output"}}};
  a.functions.push_back(f);
  ObjectFile b{"ip.o", 0x400, 16, {}};
  b.functions.push_back({"ip_output", "ip_output", 0, 0x100, 0x40, 1, 0, {}});
  l.objects = {a, b};
  return l;
}

TEST(FetchPlan, CallerUpToTheCallThenCalleeThenTheRest) {
  const LinkedLayout linked = link(two_level());
  ASSERT_EQ(linked.routines.size(), 1u);
  EXPECT_EQ(linked.entry.at("udp_output"), 0);
  const FetchPlan plan = fetch_plan(linked, FetchMode::call_sites, 64, net::bsd::fn_table());
  CodeFetcher f;
  f.attach(&plan);
  Recorder r{&plan, {}};
  f.enter(owner("udp_output"), r);
  EXPECT_EQ(r.got.size(), 0u);  // nothing yet: up to the call comes later
  f.enter(owner("ip_output"), r);
  EXPECT_EQ(r.got.size(), 2u);  // the caller's first half, the callee
  f.leave(owner("ip_output"), r);
  EXPECT_EQ(r.got.size(), 2u);
  f.leave(owner("udp_output"), r);
  EXPECT_EQ(r.got.size(), 3u);  // the rest of the caller
  EXPECT_EQ(r.got, (Ranges{{0x1000, 0x40}, {0x1400, 0x40}, {0x1040, 0x40}}));
  EXPECT_EQ(f.depth(), 0u);

  // The model before: each owner's code in one piece as it is entered.
  const FetchPlan old = fetch_plan(linked, FetchMode::entry, 64, net::bsd::fn_table());
  f.attach(&old);
  Recorder e{&old, {}};
  f.enter(owner("udp_output"), e);
  f.enter(owner("ip_output"), e);
  f.leave(owner("ip_output"), e);
  f.leave(owner("udp_output"), e);
  EXPECT_EQ(e.got, (Ranges{{0x1000, 0x80}, {0x1400, 0x40}}));
}

TEST(FetchPlan, TheOrderOfCallerAndCalleeChangesTheMisses) {
  // 1 KiB 2-way (8 sets): udp_output's lines 0x1000 (calling ip_output from
  // its middle) and 0x1200, and ip_output's 0x1400 share set 0. Fetched at
  // entry the three lines cycle through two ways: three misses a packet.
  // Fetched as they run (0x1000, 0x1400, 0x1000 again, 0x1200), 0x1000 is
  // used twice in a row of the set and stays: two misses.
  Layout l = two_level();
  l.objects[0].functions[0].hot_bytes = 0x40;
  l.objects[0].functions[0].calls = {{0x20, "ip_output"}};
  l.objects[0].functions.push_back({"udp_send", "udp_output", 0x200, 0x40, 0x40, 2, 0, {}});
  const LinkedLayout linked = link(l);
  ICacheConfig c;
  c.l1 = {1024, 2, 64};
  c.next_line_prefetch = false;
  c.l2_enabled = false;
  for (auto [mode, misses] : {std::pair{FetchMode::call_sites, 2}, {FetchMode::entry, 3}}) {
    const FetchPlan plan = fetch_plan(linked, mode, 64, net::bsd::fn_table());
    ICache ic(c);
    ASSERT_EQ(ic.l1_set_of(0x1000), ic.l1_set_of(0x1200));
    ASSERT_EQ(ic.l1_set_of(0x1000), ic.l1_set_of(0x1400));
    CodeFetcher f;
    f.attach(&plan);
    auto fetch = [&](uint32_t i) {
      for (const auto& [a, b] : plan.segments[i]) ic.fetch(a, b);
    };
    for (int packet = 0; packet < 4; ++packet) {
      if (packet == 3) ic.reset_stats();
      f.enter(owner("udp_output"), fetch);
      f.enter(owner("ip_output"), fetch);
      f.leave(owner("ip_output"), fetch);
      f.leave(owner("udp_output"), fetch);
    }
    EXPECT_EQ(ic.stats().l1_misses, static_cast<uint64_t>(misses)) << fetch_mode_name(mode);
  }
}

TEST(FetchPlan, AnEventComingRoundAgainRunsItsLoopBodyAgain) {
  // ip_output: [0, 0x20) then a header store, [0x20, 0x30) then another,
  // then the rest; four stores come: the last two loop over the second site.
  Layout l;
  l.text_base = 0x4000;
  ObjectFile o{"ip.o", 0x400, 16, {}};
  o.functions.push_back({"ip_output",
                         "ip_output",
                         0,
                         0x100,
                         0x60,
                         0,
                         0,
                         {{0x20, "header_access"}, {0x30, "header_access"}}});
  o.functions.push_back({"st16", "header_access", 0x200, 0x20, 0x10, 1, 0, {}});
  l.objects = {o};
  const FetchPlan plan = fetch_plan(link(l), FetchMode::call_sites, 64, net::bsd::fn_table());
  CodeFetcher f;
  f.attach(&plan);
  Recorder r{&plan, {}};
  f.enter(owner("ip_output"), r);
  for (int i = 0; i < 4; ++i) f.point(owner("header_access"), r);
  f.leave(owner("ip_output"), r);
  EXPECT_EQ(r.got, (Ranges{{0x4000, 0x20},
                           {0x4200, 0x10},
                           {0x4020, 0x10},
                           {0x4200, 0x10},
                           {0x4020, 0x10},  // round again: the nearest site behind, its body
                           {0x4200, 0x10},
                           {0x4020, 0x10},
                           {0x4200, 0x10},
                           {0x4030, 0x30}}));
}

TEST(FetchPlan, CompleteRoutinesHoldTheirHelpersAndUserLoopStartsAPacket) {
  // A profile's routines: user_loop calls sendto (a stack function: a call
  // site) and memcpy (a helper: expanded in place).
  LinkedLayout l;
  l.routines.push_back({"user_loop", "loop", {{0x100, 0x10}, {0, 0, 0, 1}, {0x110, 0x8}}, true});
  l.routines.push_back({"sendto", "sendto", {{0x200, 0x30}, {0x400, 0x20}, {0x230, 0x10}}, true});
  l.entry = {{"user_loop", 0}, {"sendto", 1}};
  l.by_owner["copy"] = {{0x400, 0x20, "memcpy"}};
  const FetchPlan plan = fetch_plan(l, FetchMode::call_sites, 64, net::bsd::fn_table());
  CodeFetcher f;
  f.attach(&plan);
  Recorder r{&plan, {}};
  for (int packet = 0; packet < 2; ++packet) {
    f.point(owner("user_loop"), r);
    f.enter(owner("sendto"), r);
    f.point(owner("copy"), r);          // inside sendto's walk: already there
    f.enter(owner("sosend_dgram"), r);  // no code of its own: nothing
    f.leave(owner("sosend_dgram"), r);
    f.leave(owner("sendto"), r);
  }
  EXPECT_EQ(r.got, (Ranges{{0x100, 0x10},
                           {0x200, 0x30},  // sendto's walk, with the copy inside it
                           {0x400, 0x20},
                           {0x230, 0x10},
                           {0x110, 0x8},  // the rest of the loop, when the next packet starts
                           {0x100, 0x10},
                           {0x200, 0x30},
                           {0x400, 0x20},
                           {0x230, 0x10}}));
  EXPECT_EQ(f.depth(), 1u);  // the second packet's loop is still running
  // Outside any routine, a helper's event runs the helper's own code.
  CodeFetcher g;
  g.attach(&plan);
  Recorder h{&plan, {}};
  g.point(owner("copy"), h);
  EXPECT_EQ(h.got, (Ranges{{0x400, 0x20}}));
}

TEST(FetchPlan, JoinsRangesOnlyWhereTheLinesComeInTheSameOrder) {
  LinkedLayout l;
  l.by_owner["sendto"] = {{0x1000, 0x10, "a"},  // 64-byte lines: one line with b
                          {0x1028, 0x8, "b"},   // 16-byte lines: skips line 0x1010
                          {0x1040, 0x8, "c"},   // the next 64-byte line: joins
                          {0x10c0, 0x8, "d"},   // skips line 0x1080: apart
                          {0x10a0, 0x8, "e"}};  // backwards: apart
  const FetchPlan p64 = fetch_plan(l, FetchMode::call_sites, 64, net::bsd::fn_table());
  ASSERT_EQ(p64.steps.size(), 3u);
  EXPECT_EQ(p64.steps[0].start, 0x1000u);
  EXPECT_EQ(p64.steps[0].bytes, 0x48u);
  EXPECT_EQ(fetch_plan(l, FetchMode::call_sites, 16, net::bsd::fn_table()).steps.size(), 5u);
  EXPECT_THROW(fetch_plan(l, FetchMode::call_sites, 48, net::bsd::fn_table()),
               std::invalid_argument);
}

TEST(FetchPlan, CycleAccountChargesTheStallsOfEnterAndLeave) {
  const LinkedLayout linked = link(two_level());
  const FetchPlan plan = fetch_plan(linked, FetchMode::call_sites, 64, net::bsd::fn_table());
  MachineCosts m;
  StackCosts s{.fns = &net::bsd::kFnTable};
  CycleAccount acct(m, s);
  ICacheConfig c;
  c.l1 = {1024, 1, 64};
  c.next_line_prefetch = false;
  c.l2_enabled = false;
  c.memory_cycles = 100;
  ICacheProbe ic(acct, linked, c, FetchMode::call_sites, true, nullptr);
  Tee<ICacheProbe&, CycleAccount&> probe(ic, acct);
  probe.enter(net::bsd::id(net::bsd::Fn::udp_output));
  probe.enter(net::bsd::id(net::bsd::Fn::ip_output));
  probe.leave(net::bsd::id(net::bsd::Fn::ip_output));
  probe.settle();
  EXPECT_DOUBLE_EQ(acct.pending()[static_cast<size_t>(Stage::cache)], 200);
  probe.leave(net::bsd::id(net::bsd::Fn::udp_output));  // its second line: one more miss
  probe.settle();
  EXPECT_DOUBLE_EQ(acct.pending()[static_cast<size_t>(Stage::cache)], 300);
}

// The probe holds events until a settle and goes straight to where a batch
// seen before led (ICacheProbe::follow_held). Against the same events
// followed one by one (no replay): the same stall at every settle, bit for
// bit, and the same cache statistics. The packets are of three kinds, with
// helpers that have code of their own (a checksum, a copy, system call
// entry); settles come after a packet, inside one now and then (part of a
// batch seen before), after runs of more events than the probe holds, and
// now and then twice in a row. Phases of a packet a settle alternate with
// phases of settles of random lengths, which fill the replay's tree until it
// starts over (so batches of an earlier phase meet a tree that is gone);
// with a limit of three fetcher states the fetcher goes on by itself early.
TEST(FetchPlan, HeldEventsGiveWhatFollowingEachGives) {
  Layout l = two_level();
  ObjectFile lib{"lib.o", 0x400, 16, {}};
  lib.functions.push_back({"in_cksum", "cksum", 0, 0x100, 0x80, 0, 0, {}});
  lib.functions.push_back({"bcopy", "copy", 0x100, 0x100, 0xc0, 0, 0, {}});
  lib.functions.push_back({"Xsyscall", "syscall_entry", 0x200, 0x100, 0x40, 0, 0, {}});
  l.objects.push_back(lib);
  const LinkedLayout linked = link(l);
  MachineCosts m;
  StackCosts s{.fns = &net::bsd::kFnTable};
  ICacheConfig c;
  c.l1 = {512, 1, 64};  // eight sets: the functions and the helpers collide
  c.l2_enabled = false;
  c.memory_cycles = 100;
  const auto udp = net::bsd::id(net::bsd::Fn::udp_output);
  const auto ip = net::bsd::id(net::bsd::Fn::ip_output);
  for (const uint32_t states : {MemoFetcher::kMaxStates, 3u}) {
    CycleAccount held_acct(m, s);
    CycleAccount each_acct(m, s);
    ICacheProbe held(held_acct, linked, c, FetchMode::call_sites, true, nullptr, states);
    ICacheProbe each(each_acct, linked, c, FetchMode::call_sites, false, nullptr);
    Tee<ICacheProbe&, CycleAccount&> a(held, held_acct);
    Tee<ICacheProbe&, CycleAccount&> b(each, each_acct);
    std::mt19937 rng(11);
    int settles = 0;
    auto settle = [&] {
      a.settle();
      b.settle();
      ++settles;
      ASSERT_EQ(held_acct.take(), each_acct.take()) << "settle " << settles;
    };
    auto both = [&](auto&& event) {
      event(a);
      event(b);
    };
    auto packet = [&](int kind, bool cut) {
      both([](auto& p) { p.run(Code::user_loop); });
      both([](auto& p) { p.run(Code::syscall_entry); });
      both([&](auto& p) { p.enter(udp); });
      if (cut && rng() % 15 == 0) settle();
      if (kind != 1) {
        both([&](auto& p) { p.enter(ip); });
        if (cut && rng() % 15 == 0) settle();
        both([](auto& p) { p.cksum(nullptr, 0); });
        both([&](auto& p) { p.leave(ip); });
      }
      if (kind == 2) both([](auto& p) { p.copy(net::CopyKind::uiomove, nullptr, nullptr, 0); });
      both([&](auto& p) { p.leave(udp); });
    };
    for (int phase = 0; phase < 5; ++phase) {
      for (int i = 0; i < 1500; ++i) {
        if (phase % 2 == 1) {
          // Settles of 1 to 40 packets of random kinds: sequences the
          // replay has not seen, until its tree starts over.
          for (uint32_t k = rng() % 40 + 1; k > 0; --k) packet(static_cast<int>(rng() % 3), false);
        } else {
          const auto kind = static_cast<int>(rng() % 3);
          // Now and then packets run on without a settle: past what is held.
          const int repeat = rng() % 500 == 0 ? 20000 : 1;
          for (int r = 0; r < repeat; ++r) packet(kind, repeat == 1);
        }
        settle();
        if (rng() % 50 == 0) settle();  // nothing held since the last one
      }
    }
    EXPECT_EQ(held.cache().stats().l1_misses, each.cache().stats().l1_misses);
    EXPECT_EQ(held.cache().stats().line_accesses, each.cache().stats().line_accesses);
    EXPECT_GT(held.cache().stats().l1_misses, 10000u);
    if (states == MemoFetcher::kMaxStates) {
      EXPECT_GT(held.batch_hits(), 3000u);
      EXPECT_GE(held.replay_counts().forgotten, 2u);  // the tree started over
    }
  }
}

// The call-site tables the fetcher uses (FetchPlan::next_call) against the
// straightforward search over a routine's steps, for every routine, step
// and owner of random plans: routines with many call sites, the same owner
// called from several, call sites next to each other and at either end.
TEST(FetchPlan, CallSiteTablesAgreeWithSearchingTheSteps) {
  // The search the tables stand for: the owner's first call site at or after
  // `pos`; else the nearest behind, its body from the step after the call
  // site (of any owner) before it.
  auto search = [](const FetchPlan& plan, int32_t r, uint32_t pos, size_t owner) {
    const FetchPlan::Routine& rt = plan.routines[static_cast<size_t>(r)];
    const FetchPlan::Step* s = &plan.steps[rt.first];
    const auto o = static_cast<int32_t>(owner);
    uint32_t j = pos, from = pos;
    while (j < rt.count && s[j].call != o) ++j;
    if (j == rt.count) {
      j = pos;
      while (j > 0 && s[j - 1].call != o) --j;
      if (j == 0) return FetchPlan::Call{};
      from = --j;
      while (from > 0 && s[from - 1].call < 0) --from;
    }
    return FetchPlan::Call{static_cast<int32_t>(j), from};
  };
  const auto& owners = layout_owners();
  std::mt19937_64 rng(20261205);
  uint64_t found = 0, behind = 0;
  for (int round = 0; round < 200; ++round) {
    LinkedLayout l;
    // A few owners called often, so one routine has several sites of each.
    std::vector<size_t> callees;
    for (int k = 0, n = 1 + static_cast<int>(rng() % 6); k < n; ++k)
      callees.push_back(rng() % owners.size());
    for (size_t o = 0; o < owners.size(); ++o) {
      if (rng() % 3 == 0) continue;
      Routine r;
      r.owner = owners[o];
      r.complete = rng() % 2 == 0;
      for (int k = 0, n = static_cast<int>(rng() % 24); k < n; ++k) {
        if (rng() % 2 == 0)
          r.steps.push_back({0, 0, static_cast<int>(callees[rng() % callees.size()]), -1});
        else
          r.steps.push_back({0x100000 + (rng() % 0x4000), 1 + rng() % 200, -1, -1});
      }
      l.entry[owners[o]] = static_cast<int>(l.routines.size());
      l.routines.push_back(r);
    }
    const FetchPlan plan = fetch_plan(l, FetchMode::call_sites, 64, net::bsd::fn_table());
    for (size_t r = 0; r < plan.routines.size(); ++r)
      for (uint32_t pos = 0; pos <= plan.routines[r].count; ++pos)
        for (size_t o = 0; o < kOwnerCount; ++o) {
          const auto want = search(plan, static_cast<int32_t>(r), pos, o);
          const auto got = plan.next_call(static_cast<int32_t>(r), pos, o);
          ASSERT_EQ(got.at, want.at)
              << "round " << round << " routine " << r << " pos " << pos << " owner " << o;
          if (want.at < 0) continue;
          ASSERT_EQ(got.from, want.from)
              << "round " << round << " routine " << r << " pos " << pos << " owner " << o;
          ++found;
          if (static_cast<uint32_t>(want.at) < pos) ++behind;
        }
  }
  // Both ways of finding a site were exercised, many times.
  EXPECT_GT(found, 10000u);
  EXPECT_GT(behind, 1000u);
}

TEST(LayoutCalls, OrderAndCallSitesMakeTheOwnersRoutine) {
  // sosend_dgram: lock before, unlock after the protocol (order 1).
  Layout l;
  l.text_base = 0x10000;
  ObjectFile mtx{"kern_mutex.o", 0x200, 16, {}};
  mtx.functions.push_back({"lock", "sosend_dgram", 0x0, 0x40, 0x40, 0, 0, {}});
  mtx.functions.push_back({"unlock", "sosend_dgram", 0x100, 0x40, 0x20, 1, 1, {}});
  ObjectFile so{"uipc_socket.o", 0x400, 16, {}};
  so.functions.push_back(
      {"sosend", "sosend_dgram", 0x0, 0x300, 0x200, 2, 0, {{0x180, "udp_output"}}});
  l.objects = {mtx, so};
  const LinkedLayout linked = link(l);
  ASSERT_EQ(linked.routines.size(), 1u);
  const Routine& r = linked.routines[0];
  EXPECT_EQ(r.owner, "sosend_dgram");
  EXPECT_FALSE(r.complete);
  const int udp = static_cast<int>(owner("udp_output"));
  EXPECT_EQ(
      r.steps,
      (std::vector<CodeStep>{
          {0x10000, 0x40}, {0x10200, 0x180}, {0, 0, udp, -1}, {0x10380, 0x80}, {0x10100, 0x20}}));
  // by_owner keeps the whole ranges, in the same order.
  ASSERT_EQ(linked.by_owner.at("sosend_dgram").size(), 3u);
  EXPECT_EQ(linked.by_owner.at("sosend_dgram")[2].symbol, "unlock");
  // Merging with a layout that has code of the same owner is refused.
  LinkedLayout other;
  other.by_owner["sosend_dgram"] = {{0x90000, 0x10, "x"}};
  EXPECT_THROW(merge(linked, other), LayoutError);
}

TEST(LayoutCalls, WalksExpandHelpersAndCallOtherStackFunctions) {
  std::istringstream nm(
      "0000000000001000 0000000000000100 T udp\n"
      "0000000000001100 0000000000000040 T st16\n"
      "0000000000001140 0000000000000040 T check\n"
      "0000000000001200 0000000000000100 T ip\n"
      "0000000000001300 0000000000000040 T adj\n"
      "0000000000001340 0000000000000040 T rec\n");
  const std::multimap<std::string, std::string> owners = {
      {"udp", "udp_output"}, {"st16", "header_access"}, {"check", "header_access"},
      {"ip", "ip_output"},   {"adj", "ip_output"},      {"adj", "udp_output"}};
  WalkProfile w;
  w[{"udp", 0}] = {1,
                   {{0x0, 0x10, {}, 0},
                    {0x10, 0, "st16", 0},  // a helper: in place
                    {0x15, 0x20, {}, 0},
                    {0x30, 0, "adj", 0},  // also one of udp_output's own: in place
                    {0x40, 0, "ip", 0},   // another stack function: a call site
                    {0x45, 0x8, {}, 0},
                    {0x50, 0, "rec", 0}},
                   {}};  // unowned, calls itself
  w[{"st16", 0}] = {4, {{0x0, 0x8, {}, 0}, {0x8, 0, "check", 0}}, {}};
  w[{"check", 0}] = {4, {{0x0, 0x20, {}, 0}}, {}};
  w[{"ip", 0}] = {1, {{0x0, 0x40, {}, 0}, {0x40, 0, "adj", 0}}, {}};
  w[{"adj", 0}] = {2, {{0x0, 0x10, {}, 0}}, {}};
  w[{"rec", 0}] = {1, {{0x0, 0x4, {}, 0}, {0x4, 0, "rec", 0}}, {}};
  const HotProfile hot = {{"udp", {{0, 0x50}}}};
  const LinkedLayout l = layout_from_nm(nm, owners, 1.0, &hot, &w);
  ASSERT_EQ(l.entry.count("udp_output"), 1u);
  ASSERT_EQ(l.entry.count("ip_output"), 1u);
  const Routine& udp = l.routines[static_cast<size_t>(l.entry.at("udp_output"))];
  EXPECT_TRUE(udp.complete);
  const int ip = l.entry.at("ip_output");
  EXPECT_EQ(udp.steps, (std::vector<CodeStep>{{0x1000, 0x10},
                                              {0x1100, 0x8},
                                              {0x1140, 0x20},
                                              {0x1015, 0x20},
                                              {0x1300, 0x10},
                                              {0, 0, static_cast<int>(owner("ip_output")), ip},
                                              {0x1045, 0x8},
                                              {0x1340, 0x4}}));
  EXPECT_EQ(l.routines[static_cast<size_t>(ip)].steps,
            (std::vector<CodeStep>{{0x1200, 0x40}, {0x1300, 0x10}}));
  // Helpers get entry routines too (for their events outside any walk).
  EXPECT_EQ(l.routines[static_cast<size_t>(l.entry.at("header_access"))].steps,
            (std::vector<CodeStep>{{0x1100, 0x8}, {0x1140, 0x20}}));
  // A walk past its symbol's end is refused.
  w[{"adj", 0}] = {2, {{0x30, 0x20, {}, 0}}, {}};
  std::istringstream nm2(nm.str());
  EXPECT_THROW(layout_from_nm(nm2, owners, 1.0, &hot, &w), LayoutError);
}

// A loop that calls a routine as often as a packet does runs each call's
// own walk, in order (a harness's recvfrom: the datagram, then an empty
// queue); a caller with fewer calls runs the one walk.
TEST(LayoutCalls, EachCallOfAPacketRunsItsOwnWalk) {
  const std::string text =
      "0000000000001000 0000000000000100 T loop\n"
      "0000000000001200 0000000000000100 T recv\n";
  const std::multimap<std::string, std::string> owners = {{"loop", "user_loop"},
                                                          {"recv", "soreceive"}};
  const HotProfile hot = {{"loop", {{0, 0x20}}}, {"recv", {{0, 0x40}, {0x80, 0x8}}}};
  WalkProfile w;
  w[{"loop", 0}] = {0,
                    {{0x0, 0x10, {}, 0},
                     {0x10, 0, "recv", 0},
                     {0x15, 0x8, {}, 0},
                     {0x10, 0, "recv", 0},
                     {0x15, 0x8, {}, 0}},
                    {}};
  w[{"recv", 0}] = {2, {{0x0, 0x40, {}, 0}, {0x80, 0x8, {}, 0}}, {}};
  w[{"recv", 0}].per_call = {{{0x0, 0x40, {}, 0}}, {{0x0, 0x8, {}, 0}, {0x80, 0x8, {}, 0}}};
  const int fn = static_cast<int>(owner("soreceive"));
  {
    std::istringstream nm(text);
    const LinkedLayout l = layout_from_nm(nm, owners, 1.0, &hot, &w);
    const auto& loop = l.routines[static_cast<size_t>(l.entry.at("user_loop"))].steps;
    ASSERT_EQ(loop.size(), 5u);
    ASSERT_EQ(loop[1].call, fn);
    ASSERT_EQ(loop[3].call, fn);
    EXPECT_EQ(l.routines[static_cast<size_t>(loop[1].callee)].steps,
              (std::vector<CodeStep>{{0x1200, 0x40}}));
    EXPECT_EQ(l.routines[static_cast<size_t>(loop[3].callee)].steps,
              (std::vector<CodeStep>{{0x1200, 0x8}, {0x1280, 0x8}}));
    // The event outside the loop's walk: the one walk.
    EXPECT_EQ(l.routines[static_cast<size_t>(l.entry.at("soreceive"))].steps,
              (std::vector<CodeStep>{{0x1200, 0x40}, {0x1280, 0x8}}));
  }
  {
    // One call in the loop's turn, where a packet makes two: the one walk.
    w[{"loop", 0}].items.resize(3);
    std::istringstream nm(text);
    const LinkedLayout l = layout_from_nm(nm, owners, 1.0, &hot, &w);
    const auto& loop = l.routines[static_cast<size_t>(l.entry.at("user_loop"))].steps;
    ASSERT_EQ(loop.size(), 3u);
    EXPECT_EQ(loop[1].callee, l.entry.at("soreceive"));
  }
}

// Hot code no owner's event reaches is named, so a renamed function (the
// sender's loop, once its template arguments changed) cannot silently drop
// out of every prediction.
TEST(LayoutCalls, HotCodeNoEventFetchesIsNamed) {
  const std::string text =
      "0000000000001000 0000000000000100 T udp\n"
      "0000000000001100 0000000000000040 T helper\n"
      "0000000000001200 0000000000000100 T loop_renamed\n"
      "0000000000001300 0000000000000040 T never_ran\n"
      "0000000000001340 0000000000000040 T small\n";
  const std::multimap<std::string, std::string> owners = {{"udp", "udp_output"},
                                                          {"loop_old_name", "user_loop"}};
  const HotProfile hot = {{"udp", {{0, 0x50}}},
                          {"helper", {{0, 0x20}}},
                          {"loop_renamed", {{0x10, 0x30}, {0x80, 0x10}}},
                          {"small", {{0, 0x8}}},
                          {"not_in_this_build", {{0, 0x10}}}};
  WalkProfile w;
  w[{"udp", 0}] = {1, {{0x0, 0x10, {}, 0}, {0x10, 0, "helper", 0}}, {}};
  w[{"helper", 0}] = {1, {{0x0, 0x20, {}, 0}}, {}};
  using Missed = std::vector<std::pair<std::string, uint64_t>>;
  {
    // With walks: the helper runs inside udp's walk; the loop (its owner
    // line names an older symbol) and `small` run under no event.
    std::istringstream nm(text);
    const LinkedLayout l = layout_from_nm(nm, owners, 1.0, &hot, &w);
    EXPECT_EQ(l.unfetched, (Missed{{"loop_renamed", 0x40}, {"small", 0x8}}));
    const std::string why = unfetched_warning(l, "B.nm");
    EXPECT_NE(why.find("B.nm: 2 function(s)"), std::string::npos) << why;
    EXPECT_NE(why.find("72 B a packet"), std::string::npos) << why;
    EXPECT_NE(why.find("loop_renamed (64 B)"), std::string::npos) << why;
    // A function the map does not have (a PLT plain nm leaves out) is named too.
    EXPECT_EQ(l.absent, (Missed{{"not_in_this_build", 0x10}}));
    const std::string absent = absent_warning(l, "B.nm");
    EXPECT_NE(absent.find("not in this build's symbol map"), std::string::npos) << absent;
    EXPECT_NE(absent.find("not_in_this_build (16 B)"), std::string::npos) << absent;
  }
  {
    // Hot ranges alone: only owned symbols run, so the helper is missed too.
    std::istringstream nm(text);
    const LinkedLayout l = layout_from_nm(nm, owners, 1.0, &hot, nullptr);
    EXPECT_EQ(l.unfetched, (Missed{{"loop_renamed", 0x40}, {"helper", 0x20}, {"small", 0x8}}));
  }
  {
    // The loop's current name listed: nothing is missed, and nothing is said.
    auto fixed = owners;
    fixed.emplace("loop_renamed", "user_loop");
    fixed.emplace("small", "udp_output");
    std::istringstream nm(text);
    const LinkedLayout l = layout_from_nm(nm, fixed, 1.0, &hot, &w);
    EXPECT_TRUE(l.unfetched.empty());
    EXPECT_EQ(unfetched_warning(l, "B.nm"), "");
    EXPECT_EQ(l.absent.size(), 1u);
  }
  {
    // Without a profile nothing is known to run.
    std::istringstream nm(text);
    const LinkedLayout l = layout_from_nm(nm, owners, 0.5);
    EXPECT_TRUE(l.unfetched.empty());
    EXPECT_TRUE(l.absent.empty());
    EXPECT_EQ(absent_warning(l, "B.nm"), "");
  }
}

TEST(HotBytes, CountsARangeSharedByOwnersOnce) {
  LinkedLayout l;
  l.by_owner["ip_input"] = {{0x100, 0x40, "adj"}, {0x200, 0x10, "ip"}};
  l.by_owner["udp_input"] = {{0x100, 0x40, "adj"}, {0x130, 0x20, "x"}};
  EXPECT_EQ(total_hot_bytes(l), 0x40u + 0x10 + 0x10);
}

}  // namespace
}  // namespace simloop::models
