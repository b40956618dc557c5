// Randomized property test of the mbuf layer: long random sequences of
// operations of the model in mbuf_model.h, checked after every step.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <random>
#include <unordered_map>
#include <vector>

#include "mbuf_model.h"

namespace simloop::net::bsd {
namespace {

// Long random sequences of the model's operations, one seed each.
class PropertyRun {
 public:
  explicit PropertyRun(uint64_t seed) : rng_(seed), model_(rng_, rng_) {}

  void Run(int steps) {
    for (int step = 0; step < steps; ++step) {
      model_.Step(step);
      const auto op = model_.Draw();
      model_.Apply(op);
      if (::testing::Test::HasFatalFailure()) return model_.Report(op);
      model_.CheckAll();
      if (::testing::Test::HasFatalFailure()) return model_.Report(op);
    }
    model_.FreeAll();
    model_.ExpectCoverage();
  }

 private:
  std::mt19937_64 rng_;
  model::MbufModel<std::mt19937_64, std::mt19937_64> model_;
};

class MbufProperty : public ::testing::TestWithParam<uint64_t> {};

TEST_P(MbufProperty, RandomOperationsKeepEveryInvariant) {
  PropertyRun run(GetParam());
  run.Run(10000);
}

INSTANTIATE_TEST_SUITE_P(MbufSeeds, MbufProperty,
                         ::testing::Values(1u, 2u, 3u, 4u, 5u, 42u, 20060601u,
                                           0x9e3779b97f4a7c15u));

}  // namespace
}  // namespace simloop::net::bsd
