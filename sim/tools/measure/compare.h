// Comparison: predicted against measured, point by point, with the errors
// that accuracy targets are stated in (kpps, relative to the measurement).
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "sim/report/table.h"

namespace simloop::measure {

struct Comparison {
  std::string point;                                      // "payload=18 dest=loopback ..."
  std::vector<std::pair<std::string, std::string>> keys;  // payload, dest, align, copy
  std::string set;                                        // train | validation
  double measured = 0, predicted = 0;                     // kpps, or the metric compared
  double constant = 0;    // the constant predictor: the mean of the training points
  double lo = 0, hi = 0;  // the prediction's bootstrap interval (0, 0: none)
  std::string relies_on;  // undetermined parameters the prediction needs ("" if none)
  // Why the prediction is less than it seems ("" if nothing): a key past the
  // training range ("extrapolated: payload 8000 above the trained 1400"), a
  // key the model could not simulate.
  std::string caveat;
  // The measured point's source (its file's `source` column: "native",
  // "kernel", or whatever the user named the machine or tool it came from).
  std::string source;
  double error_pct() const { return 100 * (predicted - measured) / measured; }
  double abs_error_pct() const { return error_pct() < 0 ? -error_pct() : error_pct(); }
  double constant_error_pct() const { return 100 * (constant - measured) / measured; }
};

struct ErrorSummary {
  int points = 0;
  double median_abs_pct = 0;
  double worst_abs_pct = 0;
  double worst_signed_pct = 0;  // the signed error of the worst point
  std::string worst_point;
  double mean_signed_pct = 0;
  // The same figures for the constant predictor on the same points.
  double constant_median_abs_pct = 0, constant_worst_abs_pct = 0;
  bool beats_constant() const { return median_abs_pct < constant_median_abs_pct; }
  int relying = 0;  // points whose prediction needs an undetermined parameter
};

// Over the comparisons of `set` ("" for all) that `keep` accepts (all if empty).
ErrorSummary summarize(const std::vector<Comparison>& cs, const std::string& set,
                       const std::function<bool(const Comparison&)>& keep = {});

// "N points: median |error| M %, worst W % (point); constant (mean of the
// training points): median C %, worst D %: the model beats it / does NOT beat it".
std::string describe(const ErrorSummary& s);

// Flags each held-out comparison ("validation") whose numeric key lies
// outside the range of that key over the training comparisons ("train"):
// its caveat says which, and by how much. Keys no training point has are
// left alone.
void flag_extrapolation(std::vector<Comparison>& cs, const std::vector<std::string>& numeric_keys);

// One row per point: the measured point's source, its configuration, the
// set, measured and predicted kpps and ns per packet, signed and absolute
// error in percent.
report::Row comparison_row(const Comparison& c);

// The sources of the comparisons, each once, in order of appearance, joined
// by "; " (for a table's title); empty ones left out.
std::string sources_of(const std::vector<Comparison>& cs);

}  // namespace simloop::measure
