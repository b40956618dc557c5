// Randomized property test of the sk_buff layer: long random sequences of
// the operations of the model in skbuff_model.h, checked after every step.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <tuple>

#include "skbuff_model.h"

namespace simloop::lnx {
namespace {

class PropertyRun {
 public:
  PropertyRun(uint64_t seed, bool small_heads) : rng_(seed), model_(rng_, rng_, small_heads) {}

  void Run(int steps) {
    for (int step = 0; step < steps; ++step) {
      model_.Step(step);
      const auto op = model_.Draw();
      model_.Apply(op);
      if (::testing::Test::HasFailure()) return model_.Report(op);
      model_.CheckAll();
      if (::testing::Test::HasFailure()) return model_.Report(op);
    }
    model_.FreeAll();
    model_.ExpectCoverage();
  }

 private:
  std::mt19937_64 rng_;
  model::SkbModel<std::mt19937_64, std::mt19937_64> model_;
};

// (seed, whether heads of up to 640 bytes come from skb_small_head_cache as
// in Linux >= 6.3, or from kmalloc-512/1024 as before).
class SkbProperty : public ::testing::TestWithParam<std::tuple<uint64_t, bool>> {};

TEST_P(SkbProperty, RandomOperationsKeepEveryInvariant) {
  PropertyRun run(std::get<0>(GetParam()), std::get<1>(GetParam()));
  run.Run(10000);
}

INSTANTIATE_TEST_SUITE_P(SmallHeadCache, SkbProperty,
                         ::testing::Combine(::testing::Values(1u, 2u, 3u, 4u, 5u, 42u, 20060601u,
                                                              0x9e3779b97f4a7c15u),
                                            ::testing::Values(true)));
INSTANTIATE_TEST_SUITE_P(KmallocOnly, SkbProperty,
                         ::testing::Combine(::testing::Values(6u, 7u, 8u),
                                            ::testing::Values(false)));

}  // namespace
}  // namespace simloop::lnx
