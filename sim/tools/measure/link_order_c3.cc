// C3 (Pettis-Hansen clustering as hfsort orders functions) over the call
// graph of the profiles' walks: a baseline and a start of the order search.
#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "sim/tools/measure/link_order.h"

namespace simloop::measure {

namespace {

struct Node {
  std::string name;
  uint64_t bytes = 0;  // its section's, as the order moves it
  double runs = 0;     // instructions run per packet, weighted over paths
};

struct Cluster {
  std::vector<size_t> nodes;
  uint64_t bytes = 0;
  double runs = 0;
  double density() const { return runs / static_cast<double>(std::max<uint64_t>(bytes, 1)); }
};

}  // namespace

std::vector<std::string> c3_order(const OrderProblem& pb, uint64_t cluster_bytes) {
  // The nodes: the hot functions the order can move, by their sections.
  const auto hot = hot_functions(pb);
  std::vector<Node> nodes;
  std::map<int, size_t> node_of_section;
  for (const auto& name : hot)
    for (const auto& s : pb.symbols)
      if (s.text && s.name == name) {
        const int sec = models::section_of(pb.map, s.addr);
        if (sec < 0 || pb.map.text[static_cast<size_t>(sec)].runtime) continue;
        node_of_section.emplace(sec, nodes.size());
        nodes.push_back({name, pb.map.text[static_cast<size_t>(sec)].size, 0});
        break;
      }
  // Any symbol of the build to its node (an alias, or a second symbol of
  // the section, stands for the section's function).
  std::map<std::string, size_t> node_of;
  for (const auto& s : pb.symbols) {
    if (!s.text) continue;
    const auto n = node_of_section.find(models::section_of(pb.map, s.addr));
    if (n != node_of_section.end()) node_of.emplace(s.name, n->second);
  }
  auto find = [&](const std::string& sym) -> std::optional<size_t> {
    const auto n = node_of.find(sym);
    if (n == node_of.end()) return std::nullopt;
    return n->second;
  };

  // Runs and arcs: a loop around the packets (0 calls a packet) once.
  std::map<std::pair<size_t, size_t>, double> arcs;  // (caller, callee) -> calls a packet
  for (const auto& p : pb.paths) {
    for (const auto& [sym, ranges] : p.profile.hot) {
      const auto n = find(sym);
      if (!n) continue;
      double calls = 0;
      for (const auto& [key, walk] : p.profile.walks)
        if (key.first == sym) calls += walk.calls_per_packet == 0 ? 1 : walk.calls_per_packet;
      uint64_t bytes = 0;
      for (const auto& r : ranges) bytes += r.second;
      nodes[*n].runs += p.weight * std::max(calls, 1.0) * static_cast<double>(bytes);
    }
    for (const auto& [key, walk] : p.profile.walks) {
      const auto from = find(key.first);
      if (!from) continue;
      const double calls = walk.calls_per_packet == 0 ? 1 : walk.calls_per_packet;
      for (const auto& item : walk.items) {
        if (item.target.empty()) continue;
        const auto to = find(item.target);
        if (to && *to != *from) arcs[{*from, *to}] += p.weight * calls;
      }
    }
  }

  // Each function, most run first, joins its heaviest caller's cluster.
  std::vector<Cluster> clusters(nodes.size());
  std::vector<size_t> cluster_of(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    clusters[i] = {{i}, nodes[i].bytes, nodes[i].runs};
    cluster_of[i] = i;
  }
  std::vector<size_t> by_runs(nodes.size());
  std::iota(by_runs.begin(), by_runs.end(), 0);
  std::stable_sort(by_runs.begin(), by_runs.end(),
                   [&](size_t a, size_t b) { return nodes[a].runs > nodes[b].runs; });
  for (size_t f : by_runs) {
    std::optional<size_t> caller;
    double heaviest = 0;
    for (const auto& [arc, w] : arcs)
      if (arc.second == f && w > heaviest) {
        heaviest = w;
        caller = arc.first;
      }
    if (!caller) continue;
    Cluster& into = clusters[cluster_of[*caller]];
    Cluster& from = clusters[cluster_of[f]];
    if (&into == &from || into.bytes + from.bytes > cluster_bytes) continue;
    for (size_t n : from.nodes) cluster_of[n] = cluster_of[*caller];
    into.nodes.insert(into.nodes.end(), from.nodes.begin(), from.nodes.end());
    into.bytes += from.bytes;
    into.runs += from.runs;
    from = {};
  }
  std::vector<const Cluster*> live;
  for (const auto& c : clusters)
    if (!c.nodes.empty()) live.push_back(&c);
  std::stable_sort(live.begin(), live.end(),
                   [](const Cluster* a, const Cluster* b) { return a->density() > b->density(); });
  std::vector<std::string> out;
  for (const Cluster* c : live)
    for (size_t n : c->nodes) out.push_back(nodes[n].name);
  return out;
}

}  // namespace simloop::measure
