// Comparison: predicted against measured, point by point, with the errors
// that accuracy targets are stated in (kpps, relative to the measurement).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "report/table.h"

namespace simloop::measure {

struct Comparison {
  std::string point;                                      // "payload=18 dest=loopback ..."
  std::vector<std::pair<std::string, std::string>> keys;  // payload, dest, align, copy
  std::string set;                                        // train | validation
  double measured = 0, predicted = 0;                     // kpps, or the metric compared
  double error_pct() const { return 100 * (predicted - measured) / measured; }
  double abs_error_pct() const { return error_pct() < 0 ? -error_pct() : error_pct(); }
};

struct ErrorSummary {
  int points = 0;
  double median_abs_pct = 0;
  double worst_abs_pct = 0;
  double worst_signed_pct = 0;  // the signed error of the worst point
  std::string worst_point;
};

// Over the comparisons of `set` ("" for all).
ErrorSummary summarize(const std::vector<Comparison>& cs, const std::string& set);

// One row per point: its configuration, the set, measured and predicted
// kpps and ns per packet, signed and absolute error in percent.
report::Row comparison_row(const std::string& source, const Comparison& c);

}  // namespace simloop::measure
