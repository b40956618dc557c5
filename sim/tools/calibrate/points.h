// Measured points: one configuration (payload, path, options) with its
// repeats, summarised by one statistic, and the split of points into the
// ones a fit trains on and the ones held out.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace simloop::measure {

// Bad measured data or arguments: the message names the file, line and
// column. The CLI exits with status 2.
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

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

// The keys that name a configuration (a point's path and options), in the
// order labels and comparisons list them.
const std::vector<std::string>& point_keys();

// One measured configuration.
struct Point {
  std::string source;                       // "native", or a measured system ("kernel", free text)
  std::map<std::string, std::string> keys;  // point_keys(), each only if not its default
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
  // The key's value, or what a point without it means ("" where the key
  // means nothing for the point's source: path on native points, the
  // stack's options on measured systems).
  std::string value(const std::string& k) const;
  std::string label() const;  // "payload=18 dest=loopback ..."
  void summarize(Stat stat);
  void summarize(Stat stat, const std::vector<size_t>& pick);  // a resample of the repeats
};

// Which points train the fit: for each named key, the values allowed
// ("payload=18,200,1000"); a point trains if all its keys are allowed.
struct Split {
  std::vector<std::pair<std::string, std::set<std::string>>> allow;
  bool trains(const Point& p) const;
  std::vector<std::string> specs() const;
};
// Throws InputError on a spec without "=".
Split parse_split(const std::vector<std::string>& specs, const std::string& option = "--train");

}  // namespace simloop::measure
