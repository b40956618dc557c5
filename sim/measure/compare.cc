#include "measure/compare.h"

#include <algorithm>
#include <cstdlib>

namespace simloop::measure {

ErrorSummary summarize(const std::vector<Comparison>& cs, const std::string& set) {
  ErrorSummary s;
  std::vector<double> abs;
  for (const auto& c : cs) {
    if (!set.empty() && c.set != set) continue;
    abs.push_back(c.abs_error_pct());
    if (abs.size() == 1 || c.abs_error_pct() > s.worst_abs_pct) {
      s.worst_abs_pct = c.abs_error_pct();
      s.worst_signed_pct = c.error_pct();
      s.worst_point = c.point;
    }
  }
  s.points = static_cast<int>(abs.size());
  if (abs.empty()) return s;
  std::sort(abs.begin(), abs.end());
  const size_t m = abs.size() / 2;
  s.median_abs_pct = abs.size() % 2 ? abs[m] : (abs[m - 1] + abs[m]) / 2;
  return s;
}

report::Row comparison_row(const std::string& source, const Comparison& c) {
  report::Row row;
  row.set("source", source);
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
      .set("abs_error_pct", c.abs_error_pct());
  return row;
}

}  // namespace simloop::measure
