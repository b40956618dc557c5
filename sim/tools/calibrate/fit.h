// A fit of one model's parameters to the training points: the values, how
// well they are determined (rank, condition, the directions the data leave
// free), bootstrap intervals over the repeats, and the fit as JSON.
#pragma once

#include <Eigen/Dense>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sim/tools/calibrate/features.h"
#include "sim/tools/calibrate/points.h"

namespace simloop::measure {

struct Residual {
  std::string label;
  double measured_ns = 0, fitted_ns = 0;
};

// Per-function times or totals only, chosen on the training points alone:
// each training point predicted by fits that never saw its path (every key
// but payload), and by fits that never saw its payload, with each kind of
// observation. The kind whose predictions err less (median |error| of
// kpps) is chosen; per-function times win a tie.
struct SplitChoice {
  bool split = true;
  double split_error = 0, totals_error = 0;  // median |relative error|
  size_t predictions = 0;                    // per kind
  size_t folds = 0;
};
struct Fit {
  std::string source;  // native | kernel
  Stat stat = Stat::median;
  Split split;
  double split_weight = 0;  // weight of a function's self time against a total
  double slowdown = 1;      // the instrumented run's self times over the plain run's
  // The instrumentation's cost the fit found beyond the measured one: per
  // call of a function, per call it makes (ns, instrumented time).
  std::vector<double> split_overhead;
  std::vector<std::string> names;          // parameters
  std::vector<double> values;              // fitted (ns per event, per byte)
  std::vector<double> lo, hi;              // bootstrap interval over repeats (empty: none)
  std::vector<std::vector<double>> draws;  // the bootstrap refits, one set of values each
  std::vector<Residual> residuals;         // on the training points (totals)
  int training_points = 0, held_out_points = 0;
  double constant_kpps = 0;  // the constant predictor: the mean of the training points
  // Identifiability: rank and condition number of the scaled design, the
  // parameters the data do not determine, and a basis of the directions
  // they leave free (in scaled units, one column per direction).
  int rank = 0;
  double condition = 0;
  std::vector<std::string> undetermined;
  Eigen::MatrixXd null_basis;
  Eigen::VectorXd scale;                    // column scaling the basis is expressed in
  std::vector<std::string> measured;        // the files
  std::string dest;                         // the path the written profile's experiment takes
  std::optional<SplitChoice> split_choice;  // when the observations were chosen (choose_split)

  double rms_rel_residual() const;
  // For an undetermined parameter, the others it is determined with only
  // in combination (empty: the training points never exercise it);
  // nullopt for a determined one.
  std::optional<std::vector<std::string>> tied_to(const std::string& name) const;
  double value(const std::string& name) const;  // throws std::runtime_error
  // Which undetermined parameters a prediction from these features relies
  // on (empty: the prediction is fixed by the data).
  std::vector<std::string> relies_on(const Features& f) const;
  nlohmann::json to_json() const;
  static Fit from_json(const nlohmann::json& j);  // throws InputError
};

struct FitOptions {
  std::string source = "native";
  Stat stat = Stat::median;  // the statistic the points were summarised with
  Split split;
  double split_weight = 0.5;
  int bootstrap = 0;  // resamples of the repeats for intervals (0: none)
  uint64_t seed = 1;
  bool use_split = true;  // native: use the per-function times where present
};

// Fits the source's model to the training points of `points` (only points
// of that model count). Weighted by 1 / measured ns so that the relative
// error is what is minimised, as kpps errors are relative. Throws
// InputError when there is nothing to fit.
Fit calibrate(std::vector<Point> points, const FitOptions& opt);

// Throws InputError when no training point has per-function times, and
// as calibrate() does.
SplitChoice choose_split(const std::vector<Point>& points, const FitOptions& opt);

// The features of a point under a fit's model.
Features features_for(const Fit& fit, const Point& p);

}  // namespace simloop::measure
