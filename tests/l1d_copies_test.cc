// The L1 data cache as copies see it (models/l1d_copies.h): both ends of a
// copy occupy it, a byte in a line it did not hold is a missed byte, and a
// datagram's copies that outgrow it miss on every pass.
#include "models/l1d_copies.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <utility>

#include "models/cycle_account.h"
#include "sim/stack/linux/fns.h"

namespace {

using namespace simloop;
using models::L1dCopies;

TEST(L1dCopies, ACopyThatFitsMissesOnlyWhenCold) {
  L1dCopies c(4096, 4, 64);
  EXPECT_EQ(c.copy(0x10000, 0x20000, 1024), 2048u);  // both ends cold
  EXPECT_EQ(c.copy(0x10000, 0x20000, 1024), 0u);
  EXPECT_EQ(c.lines(), 64u);
  EXPECT_EQ(c.misses(), 32u);
  EXPECT_EQ(c.copy(0x10000, 0x20000, 0), 0u);
}

// A destination off the source's alignment spans one line more; its bytes
// are split between the lines they land in, and a line missed once in a
// copy holds the rest of its bytes.
TEST(L1dCopies, BytesAreCountedInTheLinesTheyLandIn) {
  L1dCopies c(4096, 4, 64);
  // The source's 64 + 36 bytes miss; of the destination, 32 + 32 in the
  // first source line's step, then 32 that hit the line just fetched and 4
  // in a third line.
  EXPECT_EQ(c.copy(0x10000, 0x20020, 100), 100u + 68u);
  EXPECT_EQ(c.misses(), 2u + 3u);
  EXPECT_EQ(c.copy(0x20060, 0x30000, 4), 4u);  // the source's line is held now
}

// The loop of a datagram through the stack: the sender's buffer copied into
// the socket buffer, then out to the receiver's. Three buffers of P bytes
// a pass hit while 3 x P fits. Past that, the sender's and the receiver's
// buffers, each last touched a whole pass before, miss every pass (least
// recently used out); the socket buffer, read soon after it is written,
// holds until 2 x P does not fit either.
TEST(L1dCopies, ADatagramsCopiesMissOnceTheirThreeBuffersOutgrowTheCache) {
  auto steady_misses = [](size_t payload) {
    L1dCopies c(48 * 1024, 12, 64);
    size_t missed = 0;
    for (int pass = 0; pass < 4; ++pass) {
      missed = c.copy(0x100000, 0x200000, payload);
      missed += c.copy(0x200000, 0x300000, payload);
    }
    return missed;
  };
  EXPECT_EQ(steady_misses(8192), 0u);
  EXPECT_EQ(steady_misses(16384), 0u);  // 48 KiB: just fits
  EXPECT_EQ(steady_misses(20480), 2u * 20480);
  EXPECT_EQ(steady_misses(32768), 4u * 32768);  // every byte of both copies
}

TEST(L1dCopies, RefusesAGeometryThatIsNotWhole) {
  EXPECT_THROW(L1dCopies(1000, 8, 64), std::invalid_argument);
  EXPECT_THROW(L1dCopies(4096, 4, 48), std::invalid_argument);
  EXPECT_THROW(L1dCopies(4096, 0, 64), std::invalid_argument);
  EXPECT_NE(L1dCopies::problem(int64_t{2} << 30, 8, 64), "");
  EXPECT_NE(L1dCopies::problem(4096 * 2048, 2048, 64), "");
  EXPECT_EQ(L1dCopies::problem(48 * 1024, 12, 64), "");
  EXPECT_EQ(L1dCopies::problem(3 * 64, 1, 64), "");  // 3 sets: not a power of two
}

// Where the sets span more than a page (64 KiB 4-way: 256 sets of 64 B),
// which pages the buffers sit on must not matter: they move from run to
// run. Two caches given the same copies between buffers on other pages
// (the same offsets in them) miss alike, copy by copy; so do two caches
// whose sets are not a power of two.
TEST(L1dCopies, WherePagesLandDoesNotMatter) {
  for (const auto& [bytes, ways] : {std::pair<int64_t, int>{65536, 4}, {3 * 64 * 8, 8}}) {
    L1dCopies a(bytes, ways, 64), b(bytes, ways, 64);
    for (int pass = 0; pass < 4; ++pass)
      for (const size_t len : {size_t{3000}, size_t{20000}, size_t{64}}) {
        EXPECT_EQ(a.copy(0x100000, 0x200040, len), b.copy(0x7f3000, 0x1234000 + 0x40, len))
            << bytes << " " << len;
        EXPECT_EQ(a.copy(0x200040, 0x300000, len), b.copy(0x1234040, 0x55000, len))
            << bytes << " " << len;
      }
    EXPECT_GT(a.misses(), 0u);
  }
}

// The account charges a missed byte the machine's extra, and only with a
// cache given; the bytes are counted as the price's uses.
TEST(L1dCopies, TheAccountChargesMissedBytesTheirExtra) {
  models::MachineCosts machine;
  machine.copy_cycles_per_byte = 0.5;
  machine.copy_l1d_miss_extra_cycles_per_byte = 0.25;
  models::StackCosts stack;
  stack.fns = &net::lnx::fn_table();
  alignas(64) static uint8_t buf[4096];
  const auto copy_cycles = [&](models::CycleAccount& acct) {
    acct.copy(net::CopyKind::uiomove, buf, buf + 2048, 1024);
    return acct.take()[static_cast<size_t>(models::Stage::copy)];
  };
  models::CycleAccount off(machine, stack);
  EXPECT_EQ(copy_cycles(off), 512);
  EXPECT_EQ(off.uses().of[static_cast<size_t>(models::Price::copy_l1d_miss_per_byte)], 0);
  machine.copy_l1d_bytes = 32768;
  machine.copy_l1d_ways = 8;
  models::CycleAccount on(machine, stack);
  EXPECT_EQ(copy_cycles(on), 512 + 0.25 * 2048);  // cold: both ends
  EXPECT_EQ(copy_cycles(on), 512);
  EXPECT_EQ(on.uses().of[static_cast<size_t>(models::Price::copy_l1d_miss_per_byte)], 2048);
}

}  // namespace
