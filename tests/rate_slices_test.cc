// The within-run rate variation's bins: equal slices stay equal however
// many times the bins have grown, sleeps count as time without packets, and
// a real change of rate shows as the cv it should.
#include "sim/engine/rate_slices.h"

#include <gtest/gtest.h>

#include <cmath>

namespace simloop::engine {
namespace {

// `batches` batches of `per_batch` packets, each taking `dt` seconds.
double steady_cv(int batches, double dt, double per_batch) {
  RateSlices r;
  for (int i = 0; i < batches; ++i) r.add(i * dt, (i + 1) * dt, per_batch);
  return r.cv(0, batches * dt);
}

TEST(RateSlicesTest, ASteadyRunHasNoVariationAtAnyLength) {
  // 100 to a million batches: from no growth of the bins to eight.
  for (int batches : {100, 10000, 100000, 1000000}) {
    const double cv = steady_cv(batches, 1.7e-5, 4);
    EXPECT_LT(cv, 1e-6) << batches << " batches";
  }
}

TEST(RateSlicesTest, EqualSlicesWhateverTheBinWidth) {
  RateSlices r;
  const int n = 50000;  // bins grow several times
  for (int i = 0; i < n; ++i) r.add(i * 1e-3, (i + 1) * 1e-3, 1);
  const auto counts = r.slice_counts(0, n * 1e-3, 20);
  ASSERT_EQ(counts.size(), 20u);
  for (double c : counts) EXPECT_NEAR(c, n / 20.0, 1e-6 * n);
}

TEST(RateSlicesTest, SleepIsTimeWithoutPackets) {
  // The first half of the run sends, the second half sleeps: ten slices of
  // n/10 packets and ten of none, a cv of sqrt(20/19).
  RateSlices r;
  const int n = 40000;
  for (int i = 0; i < n; ++i) r.add(i * 1e-6, (i + 1) * 1e-6, 1);
  r.add(n * 1e-6, n * 1e-6, 0);  // the ENOBUFS batch, then asleep as long again
  const double elapsed = 2 * n * 1e-6;
  const auto counts = r.slice_counts(0, elapsed, 20);
  for (int k = 0; k < 20; ++k) EXPECT_NEAR(counts[k], k < 10 ? n / 10.0 : 0, 1e-6 * n) << k;
  EXPECT_NEAR(r.cv(0, elapsed), std::sqrt(20.0 / 19.0), 1e-6);
}

TEST(RateSlicesTest, TooFewBatchesSayNothing) {
  RateSlices r;
  // Half the run at 1 packet a batch, half at 100: far from steady.
  for (int i = 0; i < 39; ++i) r.add(i, i + 1, i < 20 ? 1 : 100);
  EXPECT_EQ(r.cv(0, 39), 0);
  r.add(39, 40, 100);
  EXPECT_GT(r.cv(0, 40), 0.9);
}

}  // namespace
}  // namespace simloop::engine
