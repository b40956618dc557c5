// The objects a recommended link order moves: the fewest, checked against
// every subset on small random orders.
#include "sim/tools/advise/layout_advice.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace simloop::models {
namespace {

std::vector<std::string> names(size_t n) {
  std::vector<std::string> v;
  for (size_t i = 0; i < n; ++i) {
    std::string name = "o";
    name += std::to_string(i);
    name += ".o";
    v.push_back(name);
  }
  return v;
}

// The longest subsequence of `now` in `before`'s order, by trying every
// subset.
size_t brute_force_kept(const std::vector<std::string>& before,
                        const std::vector<std::string>& now) {
  std::map<std::string, size_t> pos;
  for (size_t i = 0; i < before.size(); ++i) pos[before[i]] = i;
  size_t best = 0;
  for (uint32_t mask = 0; mask < (1u << now.size()); ++mask) {
    size_t last = 0, n = 0;
    bool ok = true;
    for (size_t i = 0; i < now.size() && ok; ++i) {
      if ((mask & (1u << i)) == 0) continue;
      const size_t p = pos.at(now[i]);
      ok = n == 0 || p > last;
      last = p;
      ++n;
    }
    if (ok) best = std::max(best, n);
  }
  return best;
}

TEST(MovedObjects, FewestMovesOnRandomOrdersAgreeWithBruteForce) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 2000; ++trial) {
    const size_t n = static_cast<size_t>(trial % 10);
    const auto before = names(n);
    auto now = before;
    std::shuffle(now.begin(), now.end(), rng);
    const auto moved = moved_objects(before, now);
    ASSERT_EQ(moved.size(), n - brute_force_kept(before, now)) << "trial " << trial;
    // The moved ones are objects of `now`, in its order, each once...
    std::vector<std::string> kept;
    size_t m = 0;
    for (const auto& o : now) {
      if (m < moved.size() && moved[m] == o) {
        ++m;
      } else {
        kept.push_back(o);
      }
    }
    ASSERT_EQ(m, moved.size()) << "moved objects out of the new order";
    // ...and those left keep their old relative order.
    std::map<std::string, size_t> pos;
    for (size_t i = 0; i < before.size(); ++i) pos[before[i]] = i;
    for (size_t i = 1; i < kept.size(); ++i)
      ASSERT_LT(pos[kept[i - 1]], pos[kept[i]]) << "trial " << trial;
  }
}

TEST(MovedObjects, SmallCases) {
  EXPECT_TRUE(moved_objects({}, {}).empty());
  EXPECT_TRUE(moved_objects(names(5), names(5)).empty());
  // One object taken to the front: only it moves.
  EXPECT_EQ(moved_objects({"a", "b", "c", "d"}, {"d", "a", "b", "c"}),
            std::vector<std::string>{"d"});
  // Reversed: all but one move; the one kept is the first of the new order
  // (the earliest-ending longest run).
  EXPECT_EQ(moved_objects({"a", "b", "c"}, {"c", "b", "a"}), (std::vector<std::string>{"b", "a"}));
  // A name the old order lacks counts as moved.
  EXPECT_EQ(moved_objects({"a", "b"}, {"a", "x", "b"}), std::vector<std::string>{"x"});
}

}  // namespace
}  // namespace simloop::models
