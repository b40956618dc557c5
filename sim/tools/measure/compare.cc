#include "sim/tools/measure/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>

#include "sim/report/csv_table.h"
#include "sim/report/stats.h"

namespace simloop::measure {

ErrorSummary summarize(const std::vector<Comparison>& cs, const std::string& set,
                       const std::function<bool(const Comparison&)>& keep) {
  ErrorSummary s;
  std::vector<double> abs, cabs;
  double signed_sum = 0;
  for (const auto& c : cs) {
    if (!set.empty() && c.set != set) continue;
    if (keep && !keep(c)) continue;
    abs.push_back(c.abs_error_pct());
    cabs.push_back(std::abs(c.constant_error_pct()));
    signed_sum += c.error_pct();
    if (!c.relies_on.empty()) ++s.relying;
    if (abs.size() == 1 || c.abs_error_pct() > s.worst_abs_pct) {
      s.worst_abs_pct = c.abs_error_pct();
      s.worst_signed_pct = c.error_pct();
      s.worst_point = c.point;
    }
  }
  s.points = static_cast<int>(abs.size());
  if (abs.empty()) return s;
  s.median_abs_pct = report::median(abs);
  s.mean_signed_pct = signed_sum / static_cast<double>(abs.size());
  s.constant_median_abs_pct = report::median(cabs);
  s.constant_worst_abs_pct = *std::max_element(cabs.begin(), cabs.end());
  return s;
}

std::string describe(const ErrorSummary& s) {
  if (s.points == 0) return "no points";
  std::string out = fmt::format(
      "{:3} points: median |error| {:.2f} %, worst {:+.2f} % ({}), mean {:+.2f} %; constant "
      "(mean of the training points): median {:.2f} %, worst {:.2f} %: ",
      s.points, s.median_abs_pct, s.worst_signed_pct, s.worst_point, s.mean_signed_pct,
      s.constant_median_abs_pct, s.constant_worst_abs_pct);
  out += s.beats_constant() ? "the model beats it" : "the model does NOT beat it";
  if (s.relying > 0)
    out += fmt::format("; {} point(s) rely on parameters the training data do not determine",
                       s.relying);
  return out;
}

void flag_extrapolation(std::vector<Comparison>& cs, const std::vector<std::string>& numeric_keys) {
  auto number = [](const Comparison& c, const std::string& k) -> std::optional<double> {
    for (const auto& [key, v] : c.keys)
      if (key == k) {
        double x = 0;
        if (report::parse_number(v, &x)) return x;
      }
    return std::nullopt;
  };
  for (const auto& k : numeric_keys) {
    std::optional<double> lo, hi;
    for (const auto& c : cs)
      if (c.set == "train")
        if (const auto x = number(c, k)) {
          lo = lo ? std::min(*lo, *x) : *x;
          hi = hi ? std::max(*hi, *x) : *x;
        }
    if (!lo) continue;
    for (auto& c : cs) {
      if (c.set != "validation") continue;
      const auto x = number(c, k);
      if (!x || (*x >= *lo && *x <= *hi)) continue;
      const std::string why =
          *x > *hi ? fmt::format("extrapolated: {} {:g} above the trained {:g}", k, *x, *hi)
                   : fmt::format("extrapolated: {} {:g} below the trained {:g}", k, *x, *lo);
      c.caveat += (c.caveat.empty() ? "" : "; ") + why;
    }
  }
}

std::string sources_of(const std::vector<Comparison>& cs) {
  std::vector<std::string> seen;
  for (const auto& c : cs)
    if (!c.source.empty() && std::find(seen.begin(), seen.end(), c.source) == seen.end())
      seen.push_back(c.source);
  std::string out;
  for (const auto& s : seen) out += (out.empty() ? "" : "; ") + s;
  return out;
}

report::Row comparison_row(const Comparison& c) {
  report::Row row;
  row.set("source", c.source);
  for (const auto& [k, v] : c.keys) {
    // Payload stays numeric so that plots and filters treat it as a number.
    if (k == "payload")
      row.set(k, int64_t{std::atoll(v.c_str())});
    else
      row.set(k, v);
  }
  row.set("set", c.set)
      .set("measured_kpps", c.measured)
      .set("predicted_kpps", c.predicted)
      .set("measured_ns_per_packet", 1e6 / c.measured)
      .set("predicted_ns_per_packet", 1e6 / c.predicted)
      .set("error_pct", c.error_pct())
      .set("abs_error_pct", c.abs_error_pct())
      .set("constant_kpps", c.constant)
      .set("constant_error_pct", c.constant_error_pct())
      .set("predicted_kpps_lo", c.lo)
      .set("predicted_kpps_hi", c.hi)
      .set("relies_on", c.relies_on)
      .set("caveat", c.caveat);
  return row;
}

}  // namespace simloop::measure
