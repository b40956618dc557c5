// Arrays of zeros that cost nothing until touched: they start as zeros, keep
// what is written, and hand their memory over on a move.
#include "sim/support/zero_pages.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <utility>

namespace simloop::support {
namespace {

struct Bin {
  double packets, from, to;
};

TEST(ZeroPagesTest, StartsAsZerosAndKeepsWhatIsWritten) {
  ZeroPages<uint32_t> a(100000);
  ASSERT_EQ(a.size(), 100000u);
  EXPECT_EQ(std::accumulate(a.begin(), a.end(), uint64_t{0}), 0u);
  a[0] = 7;
  a[99999] = 9;
  EXPECT_EQ(std::accumulate(a.begin(), a.end(), uint64_t{0}), 16u);
  ZeroPages<Bin> bins(4096);
  for (const Bin& b : bins) {
    EXPECT_EQ(b.packets, 0.0);
    EXPECT_EQ(b.to, 0.0);
  }
}

TEST(ZeroPagesTest, AMoveHandsTheMemoryOver) {
  ZeroPages<uint8_t> a(5000);
  a[4999] = 1;
  ZeroPages<uint8_t> b = std::move(a);
  EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move): a moved-from array is empty
  ASSERT_EQ(b.size(), 5000u);
  EXPECT_EQ(b[4999], 1);
  ZeroPages<uint8_t> c(10);
  c = std::move(b);
  EXPECT_EQ(c.size(), 5000u);
  EXPECT_EQ(c[4999], 1);
  ZeroPages<uint8_t> none;
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(none.begin(), none.end());
}

}  // namespace
}  // namespace simloop::support
