// Calibration: fit a cost profile to a training subset of measured runs, say
// which of its parameters the data determine, and predict other points.
//
// Measured rows (from `measure native`, `measure kernel`, or a user's own
// CSV in the documented format, docs/measured-data.md) are grouped into
// points (one configuration; its repeats summarised by one statistic). A
// split names which points train the fit; every other point is held out.
//
// native: the parameters are the cost keys of the configuration schema
// (config::cost_keys()). The real stack runs each point's configuration
// under the timing model with one cost priced at 1 and all others at 0,
// which gives that cost's count per packet, in total and inside each stack
// function. A packet's predicted ns is linear in the costs, so they are
// fitted by non-negative least squares to two kinds of observation of the
// training points: the ns per packet of the plain run, and (where the rows
// have them, `measure native --split`) the self time of each function from
// the instrumented run, less the instrumentation's own cost. The split is
// what tells the functions apart: totals alone only fix sums of costs that
// every training path pays alike.
//
// kernel (any operating system's stack: this machine's `measure kernel`, or
// imported rows): ns per packet = system calls x null syscall (when
// measured) + send_fixed + send_per_byte x payload + (receiver on the same
// CPU: dest other than wire) x (recv_fixed + recv_per_byte x payload).
#pragma once

#include <Eigen/Dense>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/costs.h"

namespace simloop::measure {

// Bad measured data or arguments: the message names the file, line and
// column. The CLI exits with status 2.
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// min ||A x - b||_2 subject to x >= 0 (Lawson and Hanson's active set
// method). Throws std::invalid_argument on mismatched sizes.
Eigen::VectorXd nnls(const Eigen::MatrixXd& A, const Eigen::VectorXd& b, int max_iter = 0);

// How a point's repeats become one value: the same statistic for every
// measured quantity of the point (ns per packet, null syscall, split). On a
// shared machine interference only ever adds time, so the minimum is the
// least disturbed estimate of a CPU-bound loop's cost; the median is the
// usual, noisier choice.
enum class Stat { median, min };
std::optional<Stat> parse_stat(const std::string& s);
double apply_stat(Stat stat, std::vector<double> v);

// One repeat of a point: everything measured in the same run.
struct Repeat {
  double ns = 0;                        // ns per packet
  std::optional<double> null_ns;        // a null system call, same repeat
  std::map<std::string, double> split;  // function -> self ns per packet (instrumented run)
  double overhead_self_ns = 0, overhead_parent_ns = 0;  // the instrumentation's cost per call
};

// One measured configuration.
struct Point {
  std::string source;                       // "native", or a measured system ("kernel", free text)
  std::map<std::string, std::string> keys;  // payload, dest, align, copy, misalign
  std::vector<Repeat> repeats;
  // Summaries of the repeats under one statistic (summarize()).
  double ns_value = 0;
  std::optional<double> null_syscall_ns;
  std::map<std::string, double> split_value;
  double overhead_self_ns = 0, overhead_parent_ns = 0;
  std::string where;  // file:line of its first row
  bool native() const { return source == "native"; }
  double kpps() const { return ns_value > 0 ? 1e6 / ns_value : 0; }
  int payload() const;
  std::string key(const std::string& k, const std::string& fallback = "") const;
  std::string label() const;  // "payload=18 dest=loopback ..."
  void summarize(Stat stat);
  void summarize(Stat stat, const std::vector<size_t>& pick);  // a resample of the repeats
};

// Canonical column names and what a measured file calls them
// ("kpps=Throughput"); columns to skip.
struct ColumnMap {
  std::map<std::string, std::string> rename;  // canonical -> the file's name
  std::set<std::string> ignore;               // the file's names
};
// Throws InputError on a spec that is not CANONICAL=NAME or names no
// canonical column.
ColumnMap parse_columns(const std::vector<std::string>& specs,
                        const std::vector<std::string>& ignore = {});
// The canonical columns a measured CSV may have, with what they mean.
const std::vector<std::pair<std::string, std::string>>& canonical_columns();

// Reads measured CSVs. Rows with a fault are left out. Missing required
// columns, columns nobody knows, empty or malformed cells are InputErrors
// naming the file (and line) and the column. Points are in order of first
// appearance.
std::vector<Point> read_points(const std::vector<std::filesystem::path>& csvs, Stat stat,
                               const ColumnMap& columns = {});

// Which points train the fit: for each named key, the values allowed
// ("payload=18,200,1000"); a point trains if all its keys are allowed.
struct Split {
  std::vector<std::pair<std::string, std::set<std::string>>> allow;
  bool trains(const Point& p) const;
  std::vector<std::string> specs() const;
};
// Throws InputError on a spec without "=".
Split parse_split(const std::vector<std::string>& specs, const std::string& option = "--train");

// ---------------------------------------------------------------- models

// A point's features: ns = known + sum_j total[j] x_j; and, per stack
// function, its self time = sum_j split[f][j] x_j (native only).
struct Features {
  double known = 0;
  std::vector<double> total;
  std::map<std::string, std::vector<double>> split;
  std::map<std::string, double> calls, child_calls;  // per function and packet (native)
};

// The native model's parameters: the schema's cost keys.
std::vector<std::string> native_params();
// Each native parameter's count per packet for the point's configuration
// (payload, dest, align, copy, misalign), in total and by function, from
// `packets` packets of the real stack driven as `measure native` drives it.
// Throws InputError on an unknown dest/align/copy.
Features native_features(const Point& p, int packets = 1000);

// The kernel model's parameters, and a point's features.
const std::vector<std::string>& kernel_params();
Features kernel_features(const Point& p);

// Costs by parameter name -> the model's ns per packet.
double predict_ns(const Features& f, const std::vector<double>& values);

// ---------------------------------------------------------------- the fit

struct Residual {
  std::string label;
  double measured_ns = 0, fitted_ns = 0;
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
  Eigen::VectorXd scale;              // column scaling the basis is expressed in
  std::vector<std::string> measured;  // the files
  std::string dest;                   // the path the written profile's experiment takes

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

// The features of a point under a fit's model.
Features features_for(const Fit& fit, const Point& p);

// Writes the fit as a machine, a stack and an experiment (NAME.yaml) that
// `simloop run` loads: clock_hz 1e9, so every cost is in ns. The files are
// emitted from the schema's keys and values. `points` are the measured
// points (the kernel profile takes its null syscall from the training
// points). Undetermined parameters are written as 0 with a comment.
void write_profile(const Fit& fit, const std::vector<Point>& points,
                   const std::filesystem::path& dir, const std::string& name);

}  // namespace simloop::measure
