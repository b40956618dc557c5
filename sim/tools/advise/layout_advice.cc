#include "sim/tools/advise/layout_advice.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>

namespace simloop::models {

double kpps(double clock_hz, double cycles) {
  return cycles > 0 ? clock_hz / cycles / 1e3 : 0;
}

std::vector<std::string> moved_objects(const std::vector<std::string>& before,
                                       const std::vector<std::string>& now) {
  std::map<std::string, size_t> pos_of;
  for (size_t i = 0; i < before.size(); ++i) pos_of.emplace(before[i], i);
  // Positions in `before` of the names of `now` found there.
  std::vector<size_t> at, pos;
  for (size_t i = 0; i < now.size(); ++i)
    if (const auto it = pos_of.find(now[i]); it != pos_of.end()) {
      at.push_back(i);
      pos.push_back(it->second);
    }
  // Longest increasing subsequence of pos, quadratic: a link order has a
  // few hundred objects at most.
  std::vector<size_t> len(pos.size(), 1), prev(pos.size(), SIZE_MAX);
  size_t best = 0;
  for (size_t i = 0; i < pos.size(); ++i) {
    for (size_t k = 0; k < i; ++k)
      if (pos[k] < pos[i] && len[k] + 1 > len[i]) {
        len[i] = len[k] + 1;
        prev[i] = k;
      }
    if (len[i] > len[best]) best = i;
  }
  std::vector<bool> kept(now.size(), false);
  for (size_t i = best; !pos.empty() && i != SIZE_MAX; i = prev[i]) kept[at[i]] = true;
  std::vector<std::string> moved;
  for (size_t i = 0; i < now.size(); ++i)
    if (!kept[i]) moved.push_back(now[i]);
  return moved;
}

Advice advise_layout(const AdviceRequest& req) {
  Advice a;
  PathSpec spec = req.path;
  spec.packets_per_interrupt = 0;
  a.trace = record_path(spec);
  EvalOptions detail;
  detail.detail = true;
  detail.fetch = req.fetch;
  a.before = evaluate(req.input, req.cache, a.trace, detail);
  // Interrupts moderated by time come once per interval: at the rate the
  // stalls leave, not the rate without them. One step of that fixed point.
  const double interval_s = spec.interrupts.moderation_interval_s;
  if (a.trace.packets_per_interrupt > 0 && interval_s > 0) {
    const int ppi = std::max(1, static_cast<int>(std::lround(interval_s * spec.machine.clock_hz /
                                                             (a.trace.cycles_per_packet +
                                                              a.before.stall_cycles_per_packet))));
    if (ppi != a.trace.packets_per_interrupt) {
      spec.packets_per_interrupt = ppi;
      a.trace = record_path(spec);
      a.before = evaluate(req.input, req.cache, a.trace, detail);
    }
  }
  if (!req.kernel || !req.search) return a;
  SearchOptions so = req.search_options;
  so.fetch = req.fetch;
  a.result = search_layout(*req.kernel, req.user, req.cache, a.trace, so);
  std::vector<std::string> old_order;
  for (const auto& o : req.kernel->objects) old_order.push_back(o.name);
  a.moved = moved_objects(old_order, a.result->order);
  a.changed = !a.moved.empty() || a.result->padding.bytes > 0;
  return a;
}

}  // namespace simloop::models
