// The harness under valgrind: parsers on recorded output, the hot profile on
// hand-made counts, and the model's view of the harness's path.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "models/cycle_account.h"
#include "sim/stack/bsd/fns.h"
#include "sim/tools/measure/code_walk.h"
#include "sim/tools/measure/harness_run.h"
#include "sim/tools/measure/icache_check.h"

using namespace simloop;
using measure::parse_cachegrind;
using measure::parse_callgrind_instr;

namespace {
const std::filesystem::path kData = std::filesystem::path(SIMLOOP_SOURCE_DIR) / "tests/data";
}

TEST(Cachegrind, ParsesTheRecordedSummary) {
  std::ifstream in(kData / "cachegrind.out");
  const auto t = parse_cachegrind(in, "cachegrind.out");
  ASSERT_EQ(t.size(), 9u);
  EXPECT_EQ(t.at("Ir"), 29743705u);
  EXPECT_EQ(t.at("I1mr"), 2398113u);
  EXPECT_EQ(t.at("D1mw"), 5269u);
  EXPECT_EQ(t.at("DLmw"), 5107u);
}

TEST(Cachegrind, NamesWhatIsMissingOrShort) {
  std::istringstream none("events: Ir I1mr\n");
  try {
    parse_cachegrind(none, "x.out");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "x.out: no 'summary:' line");
  }
  std::istringstream shorter("desc: x\nevents: Ir I1mr\nsummary: 5\n");
  try {
    parse_cachegrind(shorter, "x.out");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "x.out:3: summary has 1 counts for 2 events (line 2)");
  }
}

TEST(Callgrind, CountsEachInstructionAndSkipsCallCosts) {
  std::ifstream in(kData / "callgrind.out");
  const auto m = parse_callgrind_instr(in, "callgrind.out");
  ASSERT_EQ(m.size(), 7u);
  EXPECT_EQ(m.at(0x401008), 100u);  // not 55100: the call's inclusive cost is skipped
  EXPECT_EQ(m.at(0x40100d), 100u);
  EXPECT_EQ(m.at(0x401040), 3u);
  EXPECT_EQ(m.at(0x401104), 200u);  // listed twice: summed
}

TEST(Callgrind, ReadsJumpsAndCallsBesideTheCounts) {
  std::ifstream in(kData / "callgrind_jumps.out");
  const auto f = measure::parse_callgrind_flow(in, "callgrind_jumps.out");
  EXPECT_EQ(f.instr.at(0x1008), 3u);  // the call's inclusive cost is not an instruction count
  EXPECT_EQ(f.instr.at(0x100d), 3u);  // the jump's source line carries no count
  EXPECT_EQ(f.calls.at({0x1008, 0x2000}), 3u);
  EXPECT_EQ(f.calls.at({0x3000, 0x1000}), 1u);
  EXPECT_EQ(f.jumps.at({0x100d, 0x1004}), 2u);  // taken, of 3 executed
  EXPECT_EQ(f.jumps.at({0x100f, 0x1030}), 1u);
  EXPECT_EQ(f.jumps.size(), 2u);
  std::istringstream bad("positions: instr\njcnd=two 0x10\n0x4\n");
  try {
    measure::parse_callgrind_flow(bad, "x.out");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("x.out:2: expected 'calls=COUNT TARGET' or a jump", 0),
              0u)
        << e.what();
  }
}

TEST(Callgrind, KeepsOneObjectsCostsWhenAsked) {
  // A program calling into a shared library whose addresses (from its own
  // base) fall on the program's: only the program's are kept, the rest
  // counted; valgrind's "???" (PLT stubs) stays with the program.
  const std::string text =
      "positions: instr\nevents: Ir\n"
      "ob=/no/such/prog\nfn=main\n0x1000 5\n"
      "cob=/no/such/libc.so\ncfn=puts\ncalls=2 0x1010\n0x1004 40\n"
      "cob=???\ncfn=0x5000 [PLT]\ncalls=1 0x5000\n0x1008 3\n"
      "jump=2 0x1000\n0x100c\n"
      "ob=/no/such/libc.so\nfn=puts\n0x1010 7\njump=1 0x1000\n0x1014\n"
      "ob=???\nfn=0x5000 [PLT]\n0x5000 1\n";
  std::istringstream all_in(text);
  const auto all = measure::parse_callgrind_flow(all_in, "x.out");
  EXPECT_EQ(all.instr.at(0x1000), 5u);
  EXPECT_EQ(all.instr.at(0x1010), 7u);  // the library's, on the program's addresses
  EXPECT_EQ(all.elsewhere, 0u);
  std::istringstream own_in(text);
  const auto own = measure::parse_callgrind_flow(own_in, "x.out", "/no/such/prog");
  EXPECT_EQ(own.instr.count(0x1010), 0u);
  EXPECT_EQ(own.instr.at(0x1000), 5u);
  EXPECT_EQ(own.instr.at(0x5000), 1u);               // "???": kept
  EXPECT_EQ(own.elsewhere, 7u);                      // the library's instructions
  EXPECT_EQ(own.calls.count({0x1004, 0x1010}), 0u);  // into the library: dropped
  EXPECT_EQ(own.calls.at({0x1008, 0x5000}), 1u);     // into a PLT stub: kept
  EXPECT_EQ(own.jumps.at({0x100c, 0x1000}), 2u);
  EXPECT_EQ(own.jumps.count({0x1014, 0x1000}), 0u);  // the library's jump
}

TEST(Walks, FollowTheLoopAroundItsCallAsOftenAsItRuns) {
  // f: 0x0 (4 bytes), a loop head 0x4 (4), a call of g 0x8 (5), a jump back
  // 0xd (2) taken twice of three times, then 0xf jumps to 0x30 (2); 0x20
  // never runs; 0x40 runs once a packet off the path (it is appended).
  std::ifstream in(kData / "callgrind_jumps.out");
  measure::CallgrindFlow hi = measure::parse_callgrind_flow(in, "callgrind_jumps.out");
  hi.instr[0x1040] = 1;
  const measure::CallgrindFlow lo;
  const std::vector<models::NmSymbol> syms = {
      {0x1000, 0x50, true, "f"}, {0x2000, 0x10, true, "g"}, {0x3000, 0x10, true, "main"}};
  const std::vector<uint64_t> starts = {0x1000, 0x1004, 0x1008, 0x100d, 0x100f, 0x1011,
                                        0x1020, 0x1030, 0x1034, 0x1040, 0x1042, 0x2000,
                                        0x2001, 0x3000, 0x3005, 0x3007};
  const auto w = measure::walk_profile(lo, hi, 1, syms, starts);
  using I = models::WalkItem;
  ASSERT_EQ(w.count({"f", 0}), 1u);
  EXPECT_DOUBLE_EQ(w.at({"f", 0}).calls_per_packet, 1);
  EXPECT_EQ(w.at({"f", 0}).items, (std::vector<I>{{0x0, 0xd, {}, 0},
                                                  {0x8, 0, "g", 0},
                                                  {0xd, 0x2, {}, 0},
                                                  {0x4, 0x9, {}, 0},
                                                  {0x8, 0, "g", 0},
                                                  {0xd, 0x2, {}, 0},
                                                  {0x4, 0x9, {}, 0},
                                                  {0x8, 0, "g", 0},
                                                  {0xd, 0x4, {}, 0},
                                                  {0x30, 0x4, {}, 0},
                                                  {0x40, 0x2, {}, 0}}));
  EXPECT_EQ(w.at({"g", 0}).items, (std::vector<I>{{0x0, 0x1, {}, 0}}));
  EXPECT_DOUBLE_EQ(w.at({"g", 0}).calls_per_packet, 3);
  // main is never called per packet: one turn of it, a packet's.
  EXPECT_DOUBLE_EQ(w.at({"main", 0}).calls_per_packet, 0);
  EXPECT_EQ(w.at({"main", 0}).items,
            (std::vector<I>{{0x0, 0x5, {}, 0}, {0x0, 0, "f", 0}, {0x5, 0x2, {}, 0}}));

  // Written and read back with the hot ranges.
  measure::CodeProfile p;
  p.hot = {{"f", {{0x0, 0x11}}}};
  p.walks = w;
  std::istringstream text(measure::format_profile(p, "walks"));
  const auto back = measure::load_profile(text, "p.txt");
  EXPECT_EQ(back.hot, p.hot);
  EXPECT_EQ(back.walks, p.walks);
  std::istringstream orphan("0x0 4 f\nrun 0x0 4\n");
  try {
    measure::load_profile(orphan, "p.txt");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "p.txt:2: expected a 'walk' line before 'run', got 'run 0x0 4'");
  }
}

TEST(Walks, TheLoopAroundThePacketsRunsAsItsJumpsGo) {
  // The loop: 0x0 calls A, 0x5 jumps on to 0x100, which calls C and jumps
  // back to 0x9, which calls B and jumps to the top. In address order the
  // calls would come A, B, C; they run A, C, B.
  measure::CallgrindFlow lo, hi;
  for (uint64_t a : {0x5000, 0x5005, 0x5009, 0x500e, 0x5100, 0x5105, 0x6000, 0x6100, 0x6200})
    hi.instr[a] = 10;
  hi.jumps = {{{0x5005, 0x5100}, 10}, {{0x5105, 0x5009}, 10}, {{0x500e, 0x5000}, 10}};
  hi.calls = {{{0x5000, 0x6000}, 10}, {{0x5009, 0x6100}, 10}, {{0x5100, 0x6200}, 10}};
  const std::vector<models::NmSymbol> syms = {{0x5000, 0x200, true, "loop"},
                                              {0x6000, 0x10, true, "A"},
                                              {0x6100, 0x10, true, "B"},
                                              {0x6200, 0x10, true, "C"}};
  const std::vector<uint64_t> starts = {0x5000, 0x5005, 0x5009, 0x500e, 0x5010, 0x5100, 0x5105,
                                        0x5108, 0x6000, 0x6001, 0x6100, 0x6101, 0x6200, 0x6201};
  const auto w = measure::walk_profile(lo, hi, 10, syms, starts);
  using I = models::WalkItem;
  ASSERT_EQ(w.count({"loop", 0}), 1u);
  EXPECT_DOUBLE_EQ(w.at({"loop", 0}).calls_per_packet, 0);
  EXPECT_EQ(w.at({"loop", 0}).items, (std::vector<I>{{0x0, 0x5, {}, 0},
                                                     {0x0, 0, "A", 0},
                                                     {0x5, 0x4, {}, 0},
                                                     {0x100, 0x5, {}, 0},
                                                     {0x100, 0, "C", 0},
                                                     {0x105, 0x3, {}, 0},
                                                     {0x9, 0x5, {}, 0},
                                                     {0x9, 0, "B", 0},
                                                     {0xe, 0x2, {}, 0}}));
}

TEST(Walks, ARoutineCalledTwiceAlongTwoPathsGetsAWalkForEachCall) {
  // g, called twice a packet: its branch at 0x0 is taken in one call of
  // the two. The one walk takes the fall-through and appends the branch's
  // target; the first call's walk takes the fall-through, the second's
  // what is left: the branch.
  measure::CallgrindFlow lo, hi;
  hi.instr = {{0x7000, 2}, {0x7002, 1}, {0x7010, 1}};
  hi.jumps = {{{0x7000, 0x7010}, 1}};
  hi.calls = {{{0x3000, 0x7000}, 2}};
  const std::vector<models::NmSymbol> syms = {{0x7000, 0x20, true, "g"}};
  const std::vector<uint64_t> starts = {0x7000, 0x7002, 0x7004, 0x7010, 0x7012};
  auto w = measure::walk_profile(lo, hi, 1, syms, starts);
  using I = models::WalkItem;
  using Items = std::vector<I>;
  const models::Walk& g = w.at({"g", 0});
  EXPECT_DOUBLE_EQ(g.calls_per_packet, 2);
  EXPECT_EQ(g.items, (Items{{0x0, 0x4, {}, 0}, {0x10, 0x2, {}, 0}}));
  EXPECT_EQ(g.per_call,
            (std::vector<Items>{{{0x0, 0x4, {}, 0}}, {{0x0, 0x2, {}, 0}, {0x10, 0x2, {}, 0}}}));
  // Written and read back.
  measure::CodeProfile p;
  p.hot = {{"g", {{0x0, 0x4}, {0x10, 0x2}}}};
  p.walks = w;
  std::istringstream text(measure::format_profile(p, "per-call walks"));
  EXPECT_EQ(measure::load_profile(text, "p.txt").walks, w);
  std::istringstream skipped("0x0 4 g\nwalk g 0x0 2\nrun 0x0 4\nper-call 2\nrun 0x0 2\n");
  try {
    measure::load_profile(skipped, "p.txt");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("p.txt:4: expected 'per-call 1'", 0), 0u) << e.what();
  }
  // Both calls alike (the branch never taken): no per-call walks.
  hi.instr = {{0x7000, 2}, {0x7002, 2}};
  hi.jumps.clear();
  w = measure::walk_profile(lo, hi, 1, syms, starts);
  EXPECT_TRUE(w.at({"g", 0}).per_call.empty());
  // Both alike, each going round a loop four times (0x2 jumps back to 0x0
  // six times a packet): each call's walk takes its share of the turns,
  // so they are alike, and there are none.
  hi.instr = {{0x7000, 8}, {0x7002, 8}, {0x7004, 2}};
  hi.jumps = {{{0x7002, 0x7000}, 6}};
  w = measure::walk_profile(lo, hi, 1, syms, {0x7000, 0x7002, 0x7004, 0x7005});
  EXPECT_EQ(w.at({"g", 0}).items,
            (Items{{0x0, 0x4, {}, 0}, {0x0, 0x4, {}, 0}, {0x0, 0x4, {}, 0}, {0x0, 0x5, {}, 0}}));
  EXPECT_TRUE(w.at({"g", 0}).per_call.empty());
}

TEST(HotProfile, RangesEndWhereTheirLastInstructionEnds) {
  const std::vector<models::NmSymbol> syms = {{0x401000, 0x80, true, "f"}};
  const std::map<uint64_t, uint64_t> lo, hi = {{0x401000, 10}, {0x401004, 10}};
  const std::vector<uint64_t> starts = {0x401000, 0x401004, 0x40100b};
  using R = std::vector<std::pair<uint64_t, uint64_t>>;
  EXPECT_EQ(measure::hot_profile(lo, hi, 10, syms, 0.5, &starts).at("f"), (R{{0x0, 0xb}}));
  EXPECT_EQ(measure::hot_profile(lo, hi, 10, syms).at("f"), (R{{0x0, 0x5}}));
}

TEST(Objdump, InstructionStartsAndNotLabels) {
  std::istringstream in(
      "\nx:     file format elf64-x86-64\n\nDisassembly of section .text:\n\n"
      "0000000000401000 <f>:\n  401000:\tpush   %rbp\n  401001:\tmov    %rsp,%rbp\n"
      "  401004:\tret\n\n0000000000401010 <g>:\n  401010:\tret\n");
  EXPECT_EQ(measure::parse_objdump_starts(in),
            (std::vector<uint64_t>{0x401000, 0x401001, 0x401004, 0x401010}));
}

TEST(Callgrind, RefusesOutputWithLineNumbers) {
  std::istringstream in("positions: instr line\nevents: Ir\n0x10 1 5\n");
  EXPECT_THROW(parse_callgrind_instr(in, "x"), std::runtime_error);
}

TEST(HotProfile, GroupsHotInstructionsIntoRangesOfTheirFunction) {
  const std::vector<models::NmSymbol> syms = {{0x401000, 0x80, true, "sendto"},
                                              {0x401080, 0x10, false, "data"},
                                              {0x401100, 0x40, true, "udp_output"}};
  // 100 more packets in `hi` than in `lo`.
  const std::map<uint64_t, uint64_t> lo = {{0x401000, 7}, {0x401040, 50}, {0x401050, 900}};
  const std::map<uint64_t, uint64_t> hi = {
      {0x401000, 107},                                    // 1 per packet
      {0x401003, 100}, {0x40100d, 100}, {0x401030, 100},  // 0x23 bytes on: a range of its own
      {0x401040, 52},                                     // 0.02 per packet: cold
      {0x401050, 400},  // ran less in the longer run (an address-dependent path): not hot
      {0x401084, 500},  // in a data symbol: skipped
      {0x401100, 100}, {0x401104, 200}, {0x401200, 100}};  // past every symbol: skipped
  const auto p = measure::hot_profile(lo, hi, 100, syms);
  ASSERT_EQ(p.size(), 2u);
  using R = std::vector<std::pair<uint64_t, uint64_t>>;
  EXPECT_EQ(p.at("sendto"), (R{{0x0, 0xe}, {0x30, 0x1}}));
  EXPECT_EQ(p.at("udp_output"), (R{{0x0, 0x5}}));
}

TEST(HotProfile, FormatsAndLoadsBack) {
  const models::HotProfile p = {{"f", {{0x0, 14}, {0x30, 1}}}, {"g", {{0x8, 5}}}};
  std::istringstream in(measure::format_hot_profile(p, "a header\nof two lines"));
  EXPECT_EQ(measure::load_hot_profile(in, "p.txt"), p);
  std::istringstream bad("# comment\n0x0 14 f\n0x30 zero f\n");
  try {
    measure::load_hot_profile(bad, "p.txt");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("p.txt:3: expected 'OFFSET BYTES SYMBOL'"),
              std::string::npos)
        << e.what();
  }
}

TEST(Geometry, ParsesValgrindsFormAndRefusesImpossibleCaches) {
  const auto g = measure::parse_geometry("4096,2,64");
  EXPECT_EQ(g.size_bytes, 4096);
  EXPECT_EQ(g.assoc, 2);
  EXPECT_EQ(g.line_bytes, 64);
  EXPECT_EQ(measure::geometry_spec(g), "4096,2,64");
  EXPECT_THROW(measure::parse_geometry("4096,2"), std::invalid_argument);
  EXPECT_THROW(measure::parse_geometry("4096,3,64"), std::invalid_argument);  // not whole sets
  EXPECT_THROW(measure::parse_geometry("3072,1,64"), std::invalid_argument);  // 48 sets
  EXPECT_THROW(measure::parse_geometry("4k,2,64"), std::invalid_argument);
}

TEST(RankAgreement, HandCountedPairs) {
  auto r = measure::rank_agreement({1, 2, 3}, {10, 20, 30});
  EXPECT_TRUE(r.same_order);
  EXPECT_DOUBLE_EQ(r.kendall_tau, 1);
  r = measure::rank_agreement({1, 2, 3}, {30, 20, 10});
  EXPECT_FALSE(r.same_order);
  EXPECT_DOUBLE_EQ(r.kendall_tau, -1);
  // One pair of three swapped: 2 concordant, 1 discordant.
  r = measure::rank_agreement({1, 2, 3}, {10, 30, 20});
  EXPECT_FALSE(r.same_order);
  EXPECT_DOUBLE_EQ(r.kendall_tau, 1.0 / 3);
  // A tie in one list where the other orders the pair: not the same order,
  // and tau-b counts it (1 of 3 pairs tied in the predictions).
  r = measure::rank_agreement({1, 2, 3}, {10, 10, 20});
  EXPECT_FALSE(r.same_order);
  EXPECT_TRUE(r.meaningful);
  EXPECT_DOUBLE_EQ(r.kendall_tau, 2 / std::sqrt(3.0 * 2));
  // Differences within the noise are ties: 0.0001 orders nothing.
  r = measure::rank_agreement({5, 5.0001, 5.0002}, {4, 6, 8}, 0.01);
  EXPECT_FALSE(r.meaningful);
  EXPECT_FALSE(r.same_order);
  EXPECT_TRUE(std::isnan(r.kendall_tau));
  // All predictions 0: no ranking, whatever the measured order.
  r = measure::rank_agreement({1, 2, 3}, {0, 0, 0}, 0.01);
  EXPECT_TRUE(r.meaningful);
  EXPECT_FALSE(r.same_order);
  EXPECT_TRUE(std::isnan(r.kendall_tau));
  EXPECT_EQ(r.tied_predicted, 3);
}

TEST(MissErrors, RelativeFromOneMissAbsoluteBelow) {
  // A measured 0 (two runs subtracted: -0.0013) is judged in misses, not
  // percent: no -100 %, no NaN.
  const auto e = measure::summarize_errors({-0.0013, 0.5, 10, 20, 4}, {0, 0.75, 11, 18, 4});
  EXPECT_EQ(e.relative_points, 3);
  EXPECT_EQ(e.absolute_points, 2);
  EXPECT_DOUBLE_EQ(e.median_rel_pct, 10);
  EXPECT_DOUBLE_EQ(e.worst_rel_pct, 10);  // +10 % (10 -> 11) and -10 % (20 -> 18): the first
  EXPECT_DOUBLE_EQ(e.worst_abs, 0.25);
  EXPECT_NEAR(e.median_abs, (0.0013 + 0.25) / 2, 1e-12);
  // The bias over every point, in misses: +1 and -2 leave -1 with the rest.
  EXPECT_NEAR(e.mean_signed, (0.0013 + 0.25 + 1 - 2 + 0) / 5, 1e-12);
}

TEST(HarnessTrace, NotesTheLoopOnceAPacketAndEveryFunctionLeft) {
  measure::NativeOptions opt;
  opt.warmup = 5;
  const models::PathTrace t = measure::harness_trace(opt, 10);
  EXPECT_EQ(t.packets, 10);
  ASSERT_GE(t.code.size(), 2u);
  EXPECT_EQ(t.code[0], static_cast<uint8_t>(models::Code::user_loop));
  EXPECT_EQ(t.code[1], static_cast<uint8_t>(net::bsd::Fn::sendto));
  auto count = [&](size_t c) {
    return std::count(t.code.begin(), t.code.end(), static_cast<uint8_t>(c));
  };
  EXPECT_EQ(count(static_cast<size_t>(net::bsd::Fn::sendto)), 10);
  EXPECT_EQ(count(static_cast<size_t>(net::bsd::Fn::ip_input)), 10);
  // The loop starts each packet, before its sendto; every function is left.
  EXPECT_EQ(count(static_cast<size_t>(models::Code::user_loop)), 10);
  EXPECT_EQ(count(static_cast<size_t>(net::bsd::Fn::sendto) | models::kLeave), 10);
  EXPECT_EQ(count(static_cast<size_t>(net::bsd::Fn::soreceive) | models::kLeave),
            count(static_cast<size_t>(net::bsd::Fn::soreceive)));
  EXPECT_GE(count(static_cast<size_t>(models::Code::header_access)), 10);
}

TEST(ICachePrediction, TwoFunctionsInOneDirectMappedSetMissEveryPacket) {
  measure::NativeOptions opt;
  opt.warmup = 5;
  const models::PathTrace t = measure::harness_trace(opt, 10);
  models::LinkedLayout l;
  // 1 KiB direct-mapped, 64-byte lines: 0x10000 and 0x10400 share set 0;
  // 0x10040 has set 1 to itself.
  l.by_owner["sendto"] = {{0x10000, 64, "a"}};
  l.by_owner["ip_input"] = {{0x10400, 64, "b"}};
  l.by_owner["udp_input"] = {{0x10040, 64, "c"}};
  EXPECT_DOUBLE_EQ(measure::predict_i1_misses(l, {1024, 1, 64}, t), 2.0);
  EXPECT_DOUBLE_EQ(measure::predict_i1_misses(l, {2048, 2, 64}, t), 0.0);
}
