#include "sim/tools/measure/link_order.h"

#include <algorithm>
#include <set>

#include "sim/tools/measure/icache_check.h"

namespace simloop::measure {

std::vector<double> predict_order(const OrderProblem& pb, const std::vector<std::string>& order) {
  const auto placed = models::place_sections(pb.map, pb.symbols, order);
  const auto syms = models::relink_symbols(pb.symbols, pb.map, placed);
  std::vector<double> cells;
  cells.reserve(pb.paths.size() * pb.geometries.size());
  for (const auto& p : pb.paths) {
    // As `simloop icache` builds it from the nm map.
    const auto linked =
        models::layout_from_nm(syms, pb.owners, 1.0, &p.profile.hot, &p.profile.walks, false);
    for (const auto& g : pb.geometries)
      cells.push_back(predict_misses(linked, g, p.trace, pb.fetch).i1_misses);
  }
  return cells;
}

namespace {

// The text symbols `want` picks that the order file can move: one a section
// (its first in address order), none of a runtime library's.
template <class Want>
std::vector<const models::NmSymbol*> movable_symbols(const OrderProblem& pb, Want want) {
  std::vector<const models::NmSymbol*> out;
  std::set<int> taken;
  for (const auto& s : pb.symbols) {
    if (!s.text || !want(s)) continue;
    const int sec = models::section_of(pb.map, s.addr);
    if (sec < 0 || pb.map.text[static_cast<size_t>(sec)].runtime) continue;
    if (taken.insert(sec).second) out.push_back(&s);
  }
  return out;
}

}  // namespace

std::vector<std::string> hot_functions(const OrderProblem& pb) {
  std::set<std::string> hot;
  for (const auto& p : pb.paths)
    for (const auto& [sym, ranges] : p.profile.hot) hot.insert(sym);
  std::vector<std::string> out;
  for (const auto* s :
       movable_symbols(pb, [&](const models::NmSymbol& s) { return hot.count(s.name) != 0; }))
    out.push_back(s->name);
  return out;
}

std::map<uint64_t, std::vector<std::string>> order_fillers(const OrderProblem& pb) {
  std::map<uint64_t, std::vector<std::string>> out;
  for (const auto* s : movable_symbols(
           pb, [](const models::NmSymbol& s) { return s.size != 0 && is_order_filler(s.name); }))
    out[s->size].push_back(s->name);
  return out;
}

std::vector<std::string> call_order(const OrderProblem& pb, const std::vector<size_t>& paths) {
  const auto hot = hot_functions(pb);
  const std::set<std::string> orderable(hot.begin(), hot.end());
  std::vector<std::string> out;
  std::set<std::string> seen;
  auto add = [&](const std::string& s) {
    if (orderable.count(s) != 0 && seen.insert(s).second) out.push_back(s);
  };
  for (size_t pi : paths) {
    const auto& walks = pb.paths.at(pi).profile.walks;
    std::set<std::pair<std::string, uint64_t>> done;
    // Depth first, iteratively: (walk, next item).
    std::vector<std::pair<const models::Walk*, size_t>> stack;
    auto enter = [&](const std::pair<std::string, uint64_t>& key) {
      add(key.first);
      const auto w = walks.find(key);
      if (w != walks.end() && done.insert(key).second) stack.emplace_back(&w->second, 0);
    };
    for (const auto& [key, walk] : walks) {
      if (walk.calls_per_packet != 0) continue;  // not a loop around the packets
      enter(key);
      while (!stack.empty()) {
        auto& [w, i] = stack.back();
        if (i == w->items.size()) {
          stack.pop_back();
          continue;
        }
        const models::WalkItem& item = w->items[i++];
        if (!item.target.empty()) enter({item.target, item.target_offset});
      }
    }
  }
  for (const auto& s : hot) add(s);
  return out;
}

double order_cost(const OrderProblem& pb, const std::vector<double>& cells) {
  const size_t g = pb.geometries.size();
  double c = 0;
  for (size_t p = 0; p < pb.paths.size(); ++p)
    for (size_t k = 0; k < g; ++k) c += pb.paths[p].weight * cells[p * g + k];
  return c;
}

}  // namespace simloop::measure
