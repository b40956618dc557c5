// The branch target model: its predictor by hand-worked sequences, and the
// probe component's charges to the account and the ledger.
#include "models/branch_targets.h"

#include <gtest/gtest.h>

#include "models/cycle_account.h"
#include "models/fn_ledger.h"
#include "models/tee.h"
#include "sim/stack/bsd/fns.h"

namespace simloop::models {
namespace {

using net::bsd::Fn;
using net::bsd::id;

TEST(BranchPredictor, RefusesWhatIsNotAPredictor) {
  EXPECT_THROW(BranchPredictor(0, 4), std::invalid_argument);
  EXPECT_THROW(BranchPredictor(12, 4), std::invalid_argument);
  EXPECT_THROW(BranchPredictor(16, 0), std::invalid_argument);
}

// A return stack of two entries: calls four deep overwrite the outer two
// frames' entries, so the two innermost returns are predicted and the two
// outer ones are not. Four entries hold them all.
TEST(BranchPredictor, ReturnsDeeperThanTheStackMispredict) {
  for (const auto& [depth, want] : {std::pair{2, 2u}, std::pair{3, 1u}, std::pair{4, 0u}}) {
    BranchPredictor bp(1024, depth);
    for (uint32_t f = 0; f < 4; ++f) bp.call(bp.current(), f);  // cold: four call misses
    EXPECT_EQ(bp.mispredicts(), 4u);
    EXPECT_EQ(bp.current(), 3u);
    int missed = 0;
    for (int r = 0; r < 4; ++r) missed += bp.ret() ? 0 : 1;
    EXPECT_EQ(static_cast<unsigned>(missed), want) << "return stack of " << depth;
    EXPECT_EQ(bp.current(), BranchPredictor::kOutside);
    EXPECT_TRUE(bp.ret());  // nothing called: nothing to mispredict
    EXPECT_EQ(bp.branches(), 8u);
  }
}

// A site is held once seen; a one-entry buffer holds one site, so two
// sites called in turn evict each other every time.
TEST(BranchPredictor, TheBufferHoldsSitesItHasRoomFor) {
  BranchPredictor big(1024, 8);
  BranchPredictor one(1, 8);
  for (int round = 0; round < 10; ++round)
    for (uint32_t callee : {1u, 2u}) {
      const bool hit_big = big.call(0, callee);
      big.ret();
      const bool hit_one = one.call(0, callee);
      one.ret();
      EXPECT_EQ(hit_big, round > 0) << round;
      EXPECT_FALSE(hit_one) << round;
    }
  EXPECT_EQ(big.mispredicts(), 2u);
  EXPECT_EQ(one.mispredicts(), 20u);
  // The same callee from another caller is another site.
  EXPECT_FALSE(big.call(5, 1));
}

// Each misprediction costs mispredict_cycles in the branch stage and, in
// the ledger, goes to the function called (a helper's to the helper).
TEST(BranchTargets, ChargesEachMispredictionToTheBranchStageAndTheCallee) {
  MachineCosts m;
  StackCosts s{.fns = &net::bsd::kFnTable};
  CycleAccount acct(m, s);
  FnLedger ledger;
  acct.attach_ledger(&ledger);
  BranchConfig c;
  c.enabled = true;
  c.btb_entries = 1024;
  c.ras_depth = 1;
  c.mispredict_cycles = 7;
  BranchTargets bt(acct, c);
  Tee<CycleAccount&, BranchTargets&> probe(acct, bt);
  auto packet = [&] {
    probe.enter(id(Fn::udp_output));
    probe.enter(id(Fn::ip_output));
    probe.cksum(nullptr, 20);  // a helper: called and returned at once
    probe.leave(id(Fn::ip_output));
    probe.leave(id(Fn::udp_output));
  };
  packet();
  // Cold: three call sites miss. The return stack of one entry: the
  // checksum's call overwrites ip_output's entry, whose return then
  // mispredicts, and ip_output's call had overwritten udp_output's.
  EXPECT_EQ(bt.predictor().mispredicts(), 5u);
  packet();  // warm: only the two returns
  EXPECT_EQ(bt.predictor().mispredicts(), 7u);
  const auto branch = static_cast<size_t>(Stage::branch);
  EXPECT_DOUBLE_EQ(acct.pending()[branch], 7 * 7);
  EXPECT_DOUBLE_EQ(models::total(acct.pending()), 7 * 7);
  const auto kind = static_cast<size_t>(CostKind::cache);
  EXPECT_DOUBLE_EQ(ledger.cycles[slot(id(Fn::udp_output))][kind], 3 * 7);
  EXPECT_DOUBLE_EQ(ledger.cycles[slot(id(Fn::ip_output))][kind], 3 * 7);
  EXPECT_DOUBLE_EQ(ledger.cycles[slot(Code::cksum)][kind], 7);
  EXPECT_DOUBLE_EQ(ledger.total(), models::total(acct.pending()));
  EXPECT_EQ(bt.columns(0.5)[0], 3.5);
}

}  // namespace
}  // namespace simloop::models
