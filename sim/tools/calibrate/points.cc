#include "sim/tools/calibrate/points.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <numeric>

#include "sim/report/stats.h"
#include "sim/tools/calibrate/calibrate_detail.h"
#include "sim/tools/measure/native.h"

namespace simloop::measure {

std::optional<Stat> parse_stat(const std::string& s) {
  if (s == "median") return Stat::median;
  if (s == "min") return Stat::min;
  return std::nullopt;
}

double apply_stat(Stat stat, std::vector<double> v) {
  if (v.empty()) return 0;
  if (stat == Stat::min) return *std::min_element(v.begin(), v.end());
  return report::median(std::move(v));
}

namespace detail {

std::string key_default(const std::string& k) {
  if (k == "misalign" || k == "buffer_misalign") return "0";
  if (k == "service") return "full";
  if (k == "path") return "unconnected";
  // The stack's options as measure native runs them by default (the
  // harness's stack, stacks::HarnessKind).
  if (k == "ether_mtu") return std::to_string(NativeOptions{}.stack.ether_mtu);
  if (k == "max_linkhdr") return std::to_string(NativeOptions{}.stack.max_linkhdr);
  return "";
}

}  // namespace detail

namespace {}  // namespace

const std::vector<std::string>& point_keys() {
  static const std::vector<std::string> keys = {
      "payload",         "dest", "align",     "copy",       "misalign", "service",
      "buffer_misalign", "path", "ether_mtu", "max_linkhdr"};
  return keys;
}

using detail::key_default;

int Point::payload() const {
  const auto it = keys.find("payload");
  return it == keys.end() ? 0 : std::stoi(it->second);
}

std::string Point::key(const std::string& k, const std::string& fallback) const {
  const auto it = keys.find(k);
  return it == keys.end() ? fallback : it->second;
}

std::string Point::value(const std::string& k) const {
  if (!keys.count(k)) {
    // Defaults only where the key means something: the stack's options on
    // native points, how the loop addressed its datagrams on kernel ones.
    const bool shared = k == "payload" || k == "dest";
    if (native() ? k == "path" : !shared && k != "path") return "";
  }
  return key(k, key_default(k));
}

std::string Point::label() const {
  std::string s;
  for (const auto& k : point_keys())
    if (auto it = keys.find(k); it != keys.end())
      s += fmt::format("{}{}={}", s.empty() ? "" : " ", k, it->second);
  if (!native() && source != "kernel")
    s += fmt::format(" ({})", source.size() > 40 ? source.substr(0, 37) + "..." : source);
  return s;
}

void Point::summarize(Stat stat) {
  std::vector<size_t> all(repeats.size());
  std::iota(all.begin(), all.end(), size_t{0});
  summarize(stat, all);
}

void Point::summarize(Stat stat, const std::vector<size_t>& pick) {
  std::vector<double> ns, nulls, os, op;
  std::map<std::string, std::vector<double>> split;
  for (size_t i : pick) {
    const Repeat& r = repeats.at(i);
    ns.push_back(r.ns);
    if (r.null_ns) nulls.push_back(*r.null_ns);
    for (const auto& [f, v] : r.split) split[f].push_back(v);
    os.push_back(r.overhead_self_ns);
    op.push_back(r.overhead_parent_ns);
  }
  ns_value = apply_stat(stat, ns);
  null_syscall_ns.reset();
  if (!nulls.empty()) null_syscall_ns = apply_stat(stat, nulls);
  split_value.clear();
  for (auto& [f, v] : split) split_value[f] = apply_stat(stat, v);
  // The instrumentation's own cost is a property of the machine, not of the
  // point: its median over the repeats.
  overhead_self_ns = apply_stat(Stat::median, os);
  overhead_parent_ns = apply_stat(Stat::median, op);
}

bool Split::trains(const Point& p) const {
  for (const auto& [key, values] : allow) {
    const std::string v = p.key(key, key_default(key));
    if (values.count(v) == 0) return false;
  }
  return true;
}

std::vector<std::string> Split::specs() const {
  std::vector<std::string> out;
  for (const auto& [key, values] : allow)
    out.push_back(fmt::format("{}={}", key, fmt::join(values, ",")));
  return out;
}

Split parse_split(const std::vector<std::string>& specs, const std::string& option) {
  Split s;
  for (const auto& spec : specs) {
    const auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      throw InputError(fmt::format("{} '{}': expected KEY=V1,V2,...", option, spec));
    std::set<std::string> values;
    size_t start = eq + 1;
    while (start <= spec.size()) {
      const size_t comma = std::min(spec.find(',', start), spec.size());
      if (comma > start) values.insert(spec.substr(start, comma - start));
      start = comma + 1;
    }
    s.allow.emplace_back(spec.substr(0, eq), std::move(values));
  }
  return s;
}

}  // namespace simloop::measure
