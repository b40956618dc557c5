// The function-order search: from the best starting order, a local search
// within a budget of evaluations.
#include <algorithm>
#include <chrono>
#include <map>
#include <random>
#include <set>

#include "sim/tools/measure/link_order.h"

namespace simloop::measure {

namespace {

constexpr double kEps = 1e-9;

bool within(const std::vector<double>& cells, const std::vector<double>& limit) {
  for (size_t i = 0; i < cells.size(); ++i)
    if (cells[i] > limit[i] + kEps) return false;
  return true;
}

// The hot functions, the fillers placed, and one unused filler of each
// size (any other of that size would do the same).
std::vector<std::string> movable_now(const std::vector<std::string>& hot,
                                     const std::map<uint64_t, std::vector<std::string>>& fillers,
                                     const std::vector<std::string>& cur) {
  std::vector<std::string> movable = hot;
  for (const auto& [size, names] : fillers) {
    bool spare = false;
    for (const auto& n : names) {
      if (std::find(cur.begin(), cur.end(), n) != cur.end())
        movable.push_back(n);
      else if (!spare) {
        spare = true;
        movable.push_back(n);
      }
    }
  }
  return movable;
}

// Every move of one of `movable` to another place in `cur`, and every drop
// of one from it (back to its place in the link).
std::vector<std::vector<std::string>> moves(const std::vector<std::string>& cur,
                                            const std::vector<std::string>& movable) {
  std::vector<std::vector<std::string>> cands;
  for (const auto& f : movable) {
    std::vector<std::string> rest = cur;
    const auto at = std::find(rest.begin(), rest.end(), f);
    if (at != rest.end()) {
      rest.erase(at);
      cands.push_back(rest);
    }
    for (size_t j = 0; j <= rest.size(); ++j) {
      auto c = rest;
      c.insert(c.begin() + static_cast<std::ptrdiff_t>(j), f);
      if (c != cur) cands.push_back(std::move(c));
    }
  }
  return cands;
}

class Budget {
 public:
  explicit Budget(const OrderSearchOptions& opt) : opt_(opt), t0_(Clock::now()) {}
  // Whether another evaluation may run; notes which bound stopped it.
  bool spent(int evaluations) {
    if (evaluations >= opt_.max_evaluations) return true;
    if (std::chrono::duration<double>(Clock::now() - t0_).count() >= opt_.budget_s) {
      by_time_ = true;
      return true;
    }
    return false;
  }
  bool by_time() const { return by_time_; }

 private:
  using Clock = std::chrono::steady_clock;
  OrderSearchOptions opt_;
  Clock::time_point t0_;
  bool by_time_ = false;
};

}  // namespace

OrderResult search_order(
    const OrderProblem& pb, const std::vector<double>& limit,
    const std::vector<std::pair<std::string, std::vector<std::string>>>& starts,
    const OrderSearchOptions& opt) {
  Budget budget(opt);
  OrderResult r;
  r.max_evaluations = opt.max_evaluations;
  r.start = "default link";
  r.cells = limit;
  double cost = order_cost(pb, limit);
  const auto hot = hot_functions(pb);
  const auto fillers = order_fillers(pb);
  auto predict = [&](const std::vector<std::string>& order) {
    ++r.evaluations;
    return predict_order(pb, order);
  };

  for (const auto& [name, order] : starts) {
    const auto cells = predict(order);
    const double c = order_cost(pb, cells);
    if (within(cells, limit) && c < cost - kEps) {
      r.order = order;
      r.cells = cells;
      r.start = name;
      cost = c;
    }
  }

  std::mt19937_64 rng(opt.seed);
  bool improved = true, cut = false;
  while (improved && cost > 0 && !(cut = budget.spent(r.evaluations))) {
    improved = false;
    auto cands = moves(r.order, movable_now(hot, fillers, r.order));
    std::shuffle(cands.begin(), cands.end(), rng);
    for (auto& c : cands) {
      if ((cut = budget.spent(r.evaluations))) break;
      const auto cells = predict(c);
      const double cc = order_cost(pb, cells);
      if (within(cells, limit) && cc < cost - kEps) {
        r.order = std::move(c);
        r.cells = cells;
        cost = cc;
        improved = true;
        break;
      }
    }
  }
  r.stopped_by_time = budget.by_time();
  r.stopped_by_budget = cut && !r.stopped_by_time;
  return r;
}

}  // namespace simloop::measure
