// The function-order search: its starting orders (C3 among them), the
// repair of a start that breaks a cell's bound, and the local search.
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

// Misses above the limit, weighted as order_cost weighs them.
double excess(const OrderProblem& pb, const std::vector<double>& cells,
              const std::vector<double>& limit) {
  std::vector<double> over(cells.size());
  for (size_t i = 0; i < cells.size(); ++i) over[i] = std::max(0.0, cells[i] - limit[i]);
  return order_cost(pb, over);
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

  // Each start, repaired if it breaks a bound: steps that lower the excess,
  // first found in an order shuffled by its own generator (the search's is
  // left as it was), within an equal share of half the budget.
  std::mt19937_64 repair_rng(opt.seed ^ 0x9e3779b97f4a7c15ULL);
  const int share =
      starts.empty() ? 0 : std::max(1, opt.max_evaluations / (2 * static_cast<int>(starts.size())));
  for (const auto& [name, order] : starts) {
    if (budget.spent(r.evaluations)) break;
    OrderStart st{name, order, predict(order), order, {}, false, 0};
    st.cells = st.given_cells;
    const int until = r.evaluations + share;
    double ex = excess(pb, st.cells, limit);
    bool stepped = true;
    while (ex > kEps && stepped) {
      stepped = false;
      auto cands = moves(st.order, movable_now(hot, fillers, st.order));
      std::shuffle(cands.begin(), cands.end(), repair_rng);
      for (auto& c : cands) {
        if (r.evaluations >= until || budget.spent(r.evaluations)) break;
        const auto cells = predict(c);
        const double e = excess(pb, cells, limit);
        if (e < ex - kEps) {
          st.order = std::move(c);
          st.cells = cells;
          ex = e;
          ++st.repair_steps;
          stepped = true;
          break;
        }
      }
    }
    st.within = ex <= kEps && within(st.cells, limit);
    const double c = order_cost(pb, st.cells);
    if (st.within && c < cost - kEps) {
      r.order = st.order;
      r.cells = st.cells;
      r.start = st.repair_steps > 0 ? name + " (repaired)" : name;
      cost = c;
    }
    r.starts.push_back(std::move(st));
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
