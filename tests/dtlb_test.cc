// The data TLB model: distinct pages, least-recently-used eviction, and the
// charge per miss (to the tlb stage and to whoever touched the page).
#include "models/dtlb.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "models/fn_ledger.h"
#include "models/tee.h"
#include "sim/stack/bsd/fns.h"

namespace {

using namespace simloop;
using models::Tlb;

TEST(Tlb, CountsEachDistinctPageOnce) {
  Tlb t(8, 4096);
  EXPECT_EQ(t.touch(0x10000, 1), 1);
  EXPECT_EQ(t.touch(0x10fff, 1), 0);         // the same page
  EXPECT_EQ(t.touch(0x10ff0, 0x20), 1);      // crosses into the next page
  EXPECT_EQ(t.touch(0x20000, 3 * 4096), 3);  // three new pages
  EXPECT_EQ(t.touch(0x20000, 0), 0);         // nothing touched
  EXPECT_EQ(t.misses(), 5u);
  EXPECT_EQ(t.accesses(), 2u + 2u + 3u);
}

TEST(Tlb, EvictsTheLeastRecentlyUsedPage) {
  Tlb t(2, 64);  // two 64-byte "pages": a tiny data cache
  EXPECT_EQ(t.touch(0 * 64, 1), 1);
  EXPECT_EQ(t.touch(1 * 64, 1), 1);
  EXPECT_EQ(t.touch(0 * 64, 1), 0);  // 0 is now the most recent
  EXPECT_EQ(t.touch(2 * 64, 1), 1);  // evicts 1, the least recent
  EXPECT_EQ(t.touch(0 * 64, 1), 0);
  EXPECT_EQ(t.touch(1 * 64, 1), 1);  // 1 was evicted; now evicts 2
  EXPECT_EQ(t.touch(2 * 64, 1), 1);
  // A loop over one page more than it holds misses every time.
  Tlb u(4, 4096);
  int misses = 0;
  for (int pass = 0; pass < 10; ++pass)
    for (uintptr_t p = 0; p < 5; ++p) misses += u.touch(p * 4096, 8);
  EXPECT_EQ(misses, 50);
}

TEST(Tlb, RefusesWhatIsNotATlb) {
  EXPECT_THROW(Tlb(0, 4096), std::invalid_argument);
  EXPECT_THROW(Tlb(4, 3000), std::invalid_argument);
}

TEST(DataTlb, ChargesEachMissToTheTlbStageAndTheToucher) {
  models::MachineCosts m;
  models::StackCosts s{.fns = &net::bsd::kFnTable};
  models::CycleAccount acct(m, s);
  models::FnLedger ledger;
  acct.attach_ledger(&ledger);
  models::DtlbConfig c;
  c.enabled = true;
  c.entries = 2;
  c.page_bytes = 4096;
  c.miss_cycles = 25;
  models::DataTlb dtlb(acct, c);
  models::Tee<models::CycleAccount&, models::DataTlb&> probe(acct, dtlb);
  const auto* page = reinterpret_cast<const uint8_t*>(uintptr_t{0x7000000});
  probe.enter(net::bsd::id(net::bsd::Fn::udp_output));
  probe.copy(net::CopyKind::uiomove, page, page + 2 * 4096, 64);  // two pages: 2 misses
  probe.header(net::bsd::id(net::bsd::Fn::ip_output), page + 2 * 4096 + 20, 2,
               true);             // held: no miss
  probe.cksum(page + 4096, 100);  // a third page: evicts the copy's source
  probe.leave(net::bsd::id(net::bsd::Fn::udp_output));
  probe.free(net::Obj::mbuf, page);  // outside every function: the helper pays; a miss
  const double stall = acct.pending()[static_cast<size_t>(models::Stage::tlb)];
  EXPECT_EQ(acct.pending()[static_cast<size_t>(models::Stage::cache)], 0);
  EXPECT_DOUBLE_EQ(stall, 4 * 25);
  EXPECT_EQ(dtlb.tlb().misses(), 4u);
  const auto kind = static_cast<size_t>(models::CostKind::cache);
  EXPECT_DOUBLE_EQ(ledger.cycles[static_cast<size_t>(net::bsd::Fn::udp_output)][kind], 3 * 25);
  EXPECT_DOUBLE_EQ(ledger.cycles[static_cast<size_t>(models::Code::mbuf_free)][kind], 25);
  EXPECT_DOUBLE_EQ(ledger.total(), models::total(acct.pending()));
}

}  // namespace
