// Calibration: fit a cost profile to a training subset of measured runs.
//
// Measured rows (from `measure native` or `measure kernel`) are grouped into
// points (one configuration, the median over its repeats). A split names
// which points train the fit; every other point is held out for `compare`.
//
// native: the real stack runs each point's configuration under the timing
// model (models::CycleAccount) with one cost parameter priced at 1 and all
// others at 0, which gives that parameter's count per packet. Predicted ns
// per packet is then exactly the model's price, linear in the costs, so the
// costs are fitted by non-negative least squares and written as a machine
// and a stack YAML that `simloop run` prices the same way.
//
// kernel: ns per packet = 2 * null syscall (measured) + a + b * payload.
#pragma once

#include <Eigen/Dense>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "models/costs.h"

namespace simloop::measure {

// min ||A x - b||_2 subject to x >= 0 (Lawson and Hanson's active set
// method). Throws std::invalid_argument on mismatched sizes.
Eigen::VectorXd nnls(const Eigen::MatrixXd& A, const Eigen::VectorXd& b, int max_iter = 0);

// How a point's repeats become one value. On a shared machine interference
// only ever adds time, so the minimum is the least disturbed estimate of a
// CPU-bound loop's cost; the median is the usual, noisier choice.
enum class Stat { median, min };
std::optional<Stat> parse_stat(const std::string& s);

// One measured configuration: its repeats and their summary.
struct Point {
  std::string source;                       // native | kernel
  std::map<std::string, std::string> keys;  // payload, dest, align, copy (what is present)
  std::vector<double> ns;                   // ns per packet of each repeat
  double null_syscall_ns = 0;               // kernel: median over the repeats
  double ns_value = 0;                      // the repeats' median or minimum
  double kpps() const { return ns_value > 0 ? 1e6 / ns_value : 0; }
  int payload() const;
  std::string label() const;  // "payload=18 dest=loopback ..."
};

// Reads measured CSVs; rows with a fault are left out. Points are in order
// of first appearance.
std::vector<Point> read_points(const std::vector<std::filesystem::path>& csvs,
                               Stat stat = Stat::median);

// Which points train the fit: for each named key, the values allowed
// ("payload=18,200,1000"); a point trains if all its keys are allowed.
struct Split {
  std::vector<std::pair<std::string, std::set<std::string>>> allow;
  bool trains(const Point& p) const;
  std::vector<std::string> specs() const;
};
// Throws std::invalid_argument on a spec without "=".
Split parse_split(const std::vector<std::string>& specs);

// A cost parameter of the timing model: its config key and where it lives.
struct Param {
  std::string key;  // e.g. "stack.functions.ip_output", "machine.copy.cycles_per_byte"
  std::function<double&(models::MachineCosts&, models::StackCosts&)> ref;
};
const std::vector<Param>& native_params();

// Each native parameter's count per packet for the point's configuration
// (payload, dest, align, copy), from `packets` packets of the real stack.
// Throws std::invalid_argument on an unknown dest/align/copy.
std::vector<double> native_features(const Point& p, int packets = 2000);

// The model's price of one packet for the given costs (ns when the costs
// are in ns, i.e. cycles at 1 GHz).
double native_price(const std::vector<double>& features, const models::MachineCosts& m,
                    const models::StackCosts& s);

struct Residual {
  std::string label;
  double measured_ns = 0, fitted_ns = 0;
};

struct Fit {
  std::string source;
  Split split;
  std::vector<std::string> names;   // parameter keys
  std::vector<double> values;       // fitted (ns per event, per byte)
  std::vector<Residual> residuals;  // on the training points
  int training_points = 0, held_out_points = 0;
  double rms_rel_residual() const;
  nlohmann::json to_json() const;
  static Fit from_json(const nlohmann::json& j);
};

// Fits the source's model to the training points of `points` (only points
// of that source count). Weighted by 1 / measured ns so that the relative
// error is what is minimised, as kpps errors are relative. Throws
// std::runtime_error when there is nothing to fit.
Fit calibrate(const std::vector<Point>& points, const std::string& source, const Split& split);

// The fitted native costs as a machine and a stack profile (clock_hz 1e9:
// every cost is in ns), and an experiment that names both.
void write_native_profile(const Fit& fit, const std::filesystem::path& dir,
                          const std::string& name);

// The fitted kernel costs as a profile for `simloop run` on the kernel
// loop's path (127.0.0.1, a receiver draining each datagram): a null system
// call (the median over the training points) on each system call's entry,
// the fixed cost on sendto, and the cost per byte spread over the bytes the
// simulated stack copies per payload byte (counted by running it).
void write_kernel_profile(const Fit& fit, const std::vector<Point>& points,
                          const std::filesystem::path& dir, const std::string& name);

// The cost tables of a fit (native).
void fitted_costs(const Fit& fit, models::MachineCosts& m, models::StackCosts& s);

// Predicted ns per packet of a kernel point under a kernel fit.
double kernel_predict_ns(const Fit& fit, const Point& p);

}  // namespace simloop::measure
