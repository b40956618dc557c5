#include "sim/tools/calibrate/calibrate.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <numeric>
#include <random>
#include <set>

#include "models/cycle_account.h"
#include "sim/config/experiment.h"
#include "sim/report/stats.h"
#include "sim/report/table.h"
#include "sim/stack/bsd/stack.h"
#include "sim/stack/workload/driver.h"
#include "sim/tools/measure/native.h"

namespace simloop::measure {

namespace fs = std::filesystem;

// ---------------------------------------------------------------- NNLS

Eigen::VectorXd nnls(const Eigen::MatrixXd& A, const Eigen::VectorXd& b, int max_iter) {
  if (A.rows() != b.size()) throw std::invalid_argument("nnls: A and b have different row counts");
  const Eigen::Index n = A.cols();
  if (max_iter <= 0) max_iter = static_cast<int>(3 * n + 10);
  Eigen::VectorXd x = Eigen::VectorXd::Zero(n);
  std::vector<bool> passive(static_cast<size_t>(n), false);
  const double tol = 1e-10 * std::max(1.0, A.norm() * b.norm());

  // Least squares on the passive columns only; the others are held at 0.
  auto solve_passive = [&] {
    std::vector<Eigen::Index> idx;
    for (Eigen::Index j = 0; j < n; ++j)
      if (passive[static_cast<size_t>(j)]) idx.push_back(j);
    Eigen::MatrixXd Ap(A.rows(), static_cast<Eigen::Index>(idx.size()));
    for (size_t k = 0; k < idx.size(); ++k) Ap.col(static_cast<Eigen::Index>(k)) = A.col(idx[k]);
    const Eigen::VectorXd zp = Ap.completeOrthogonalDecomposition().solve(b);
    Eigen::VectorXd z = Eigen::VectorXd::Zero(n);
    for (size_t k = 0; k < idx.size(); ++k) z(idx[k]) = zp(static_cast<Eigen::Index>(k));
    return z;
  };

  for (int outer = 0; outer < max_iter; ++outer) {
    const Eigen::VectorXd w = A.transpose() * (b - A * x);  // the negative gradient
    Eigen::Index best = -1;
    double best_w = tol;
    for (Eigen::Index j = 0; j < n; ++j)
      if (!passive[static_cast<size_t>(j)] && w(j) > best_w) best_w = w(j), best = j;
    if (best < 0) break;  // Kuhn-Tucker conditions hold
    passive[static_cast<size_t>(best)] = true;
    for (int inner = 0; inner < max_iter; ++inner) {
      Eigen::VectorXd z = solve_passive();
      bool feasible = true;
      for (Eigen::Index j = 0; j < n; ++j)
        if (passive[static_cast<size_t>(j)] && z(j) <= 0) feasible = false;
      if (feasible) {
        x = z;
        break;
      }
      // Step from x towards z as far as feasibility allows, then drop the
      // variables that reached zero.
      double alpha = std::numeric_limits<double>::infinity();
      for (Eigen::Index j = 0; j < n; ++j)
        if (passive[static_cast<size_t>(j)] && z(j) <= 0)
          alpha = std::min(alpha, x(j) / (x(j) - z(j)));
      x += alpha * (z - x);
      for (Eigen::Index j = 0; j < n; ++j)
        if (passive[static_cast<size_t>(j)] && x(j) <= 1e-15)
          passive[static_cast<size_t>(j)] = false, x(j) = 0;
    }
  }
  return x.cwiseMax(0.0);
}

// ---------------------------------------------------------------- points

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

namespace {

// The keys that name a configuration, in this order.
constexpr std::array<const char*, 7> kConfigKeys = {"payload",  "dest",    "align",          "copy",
                                                    "misalign", "service", "buffer_misalign"};

// The keys with a few values, what they allow and how an error says it.
struct Enumerated {
  const char* key;
  std::set<std::string> allowed;
  const char* expected;
};
const std::array<Enumerated, 3> kEnumerated = {{
    {"misalign", {"0", "1", "2", "3"}, "0..3"},
    {"service", {"full", "send-only"}, "full or send-only"},
    {"buffer_misalign", {"0", "1", "2", "3", "4", "5", "6", "7"}, "0..7"},
}};

// What a point without the key means: rows of files without the column,
// and keys dropped when they say the default.
std::string key_default(const std::string& k) {
  if (k == "misalign" || k == "buffer_misalign") return "0";
  if (k == "service") return "full";
  return "";
}

}  // namespace

int Point::payload() const {
  const auto it = keys.find("payload");
  return it == keys.end() ? 0 : std::stoi(it->second);
}

std::string Point::key(const std::string& k, const std::string& fallback) const {
  const auto it = keys.find(k);
  return it == keys.end() ? fallback : it->second;
}

std::string Point::label() const {
  std::string s;
  for (const char* k : kConfigKeys)
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

const std::vector<std::pair<std::string, std::string>>& canonical_columns() {
  static const std::vector<std::pair<std::string, std::string>> cols = {
      {"payload", "UDP payload bytes per datagram (an integer >= 0); required"},
      {"ns_per_packet", "ns per datagram; one of the four rates is required"},
      {"kpps", "thousands of datagrams per second"},
      {"pps", "datagrams per second"},
      {"payload_mbps", "payload throughput in 10^6 bit/s (netperf's UDP_STREAM figure)"},
      {"dest", "the path: loopback, broadcast, wire or self; required"},
      {"source",
       "free text: where the numbers come from (machine, system, tool, publication); 'native' "
       "marks rows of simloop's own stack (measure native); default: the file's name"},
      {"null_syscall_ns", "ns of a null system call measured in the same run (optional)"},
      {"align", "alignment policy (native rows): none, copy-down, strict, copy-down-unsafe"},
      {"copy", "simplex loop copy (native rows): m_copy or m_dup"},
      {"misalign", "bytes past a 4-byte boundary of the received sockaddr (native rows), 0-3"},
      {"service",
       "what serves the host after each sendto() (native rows): full (the netisr, the receiver, "
       "transmit completion; the default) or send-only (transmit completion only)"},
      {"buffer_misalign",
       "bytes past an 8-byte boundary of the sender's buffer (native rows), 0-7; default 0"},
      {"repeat", "which repeat the row is (rows of one configuration are its repeats)"},
      {"fault", "non-empty: the run failed and the row is left out"},
  };
  return cols;
}

namespace {

bool is_canonical(const std::string& c) {
  for (const auto& [name, doc] : canonical_columns())
    if (name == c) return true;
  return false;
}

// Columns simloop's own measurements write that calibration does not read
// (or reads by prefix): known, not an error.
bool is_informational(const std::string& c) {
  static const std::set<std::string> known = {"packets",
                                              "elapsed_s",
                                              "delivered",
                                              "delivered_bytes",
                                              "enobufs_retries",
                                              "send_errors",
                                              "empty_reads",
                                              "cpu_model",
                                              "cores",
                                              "kernel",
                                              "layout",
                                              "harness",
                                              "loadavg_1m",
                                              "split_overhead_self_ns",
                                              "split_overhead_parent_ns",
                                              "split_ns_per_packet"};
  if (known.count(c)) return true;
  if (c.starts_with("drop_")) return true;
  if (c.starts_with("stage_") && c.ends_with("_ns")) return true;
  return false;
}

std::string trim(std::string s) {
  s.erase(0, s.find_first_not_of(" \t\r"));
  s.erase(s.find_last_not_of(" \t\r") + 1);
  return s;
}

bool parse_double(const std::string& s, double* v) {
  const std::string t = trim(s);
  if (t.empty()) return false;
  const auto r = std::from_chars(t.data(), t.data() + t.size(), *v);
  return r.ec == std::errc() && r.ptr == t.data() + t.size() && std::isfinite(*v);
}

}  // namespace

ColumnMap parse_columns(const std::vector<std::string>& specs,
                        const std::vector<std::string>& ignore) {
  ColumnMap m;
  for (const auto& spec : specs) {
    const auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      throw InputError(
          fmt::format("--columns '{}': expected CANONICAL=NAME, e.g. kpps=Throughput", spec));
    const std::string canon = spec.substr(0, eq);
    if (!is_canonical(canon)) {
      std::vector<std::string> names;
      for (const auto& [n, d] : canonical_columns()) names.push_back(n);
      throw InputError(fmt::format("--columns '{}': {} is not a column simloop reads (one of {})",
                                   spec, canon, fmt::join(names, ", ")));
    }
    if (m.rename.count(canon))
      throw InputError(fmt::format("--columns: {} is mapped twice", canon));
    m.rename[canon] = spec.substr(eq + 1);
  }
  for (const auto& i : ignore) m.ignore.insert(i);
  return m;
}

std::vector<Point> read_points(const std::vector<fs::path>& csvs, Stat stat,
                               const ColumnMap& columns) {
  std::vector<Point> points;
  for (const auto& path : csvs) {
    const std::string file = path.string();
    std::ifstream f(path);
    if (!f) throw InputError(fmt::format("{}: cannot open", file));
    std::string line;
    if (!std::getline(f, line)) throw InputError(fmt::format("{}: empty file", file));
    auto header = report::split_csv_line(line);
    for (auto& h : header) h = trim(h);
    // The file's name of each canonical column, and every column accounted for.
    std::map<std::string, int> col;  // canonical -> index
    std::set<std::string> mapped_names;
    for (const auto& [canon, name] : columns.rename) mapped_names.insert(name);
    for (const auto& [canon, name] : columns.rename) {
      const auto it = std::find(header.begin(), header.end(), name);
      if (it == header.end())
        throw InputError(
            fmt::format("{}: no column '{}' (mapped to {} by --columns); the "
                        "header has: {}",
                        file, name, canon, fmt::join(header, ", ")));
      col[canon] = static_cast<int>(it - header.begin());
    }
    std::vector<std::pair<std::string, int>> stage_cols;
    std::vector<std::string> unknown;  // every one of them named in one error
    for (size_t i = 0; i < header.size(); ++i) {
      const std::string& h = header[i];
      if (mapped_names.count(h) || columns.ignore.count(h)) continue;
      if (is_canonical(h)) {
        if (col.count(h))
          throw InputError(fmt::format("{}: column '{}' is in the file and also mapped from '{}'",
                                       file, h, columns.rename.at(h)));
        col[h] = static_cast<int>(i);
      } else if (h.starts_with("stage_") && h.ends_with("_ns")) {
        stage_cols.emplace_back(h.substr(6, h.size() - 9), static_cast<int>(i));
      } else if (h == "split_overhead_self_ns" || h == "split_overhead_parent_ns") {
        col[h] = static_cast<int>(i);
      } else if (!is_informational(h)) {
        unknown.push_back(h);
      }
    }
    if (unknown.size() == 1)
      throw InputError(
          fmt::format("{}:1: unknown column '{}': map it to a column simloop reads with --columns "
                      "CANONICAL={}, or skip it with --ignore-column '{}' (docs/measured-data.md)",
                      file, unknown[0], unknown[0], unknown[0]));
    if (unknown.size() > 1) {
      std::vector<std::string> quoted, skips;
      for (const auto& u : unknown) {
        quoted.push_back(fmt::format("'{}'", u));
        skips.push_back(fmt::format("--ignore-column '{}'", u));
      }
      throw InputError(fmt::format(
          "{}:1: {} unknown columns {}: map each to a column simloop reads with --columns "
          "CANONICAL=NAME,..., or skip them with {} (docs/measured-data.md)",
          file, unknown.size(), fmt::join(quoted, ", "), fmt::join(skips, " ")));
    }
    if (!col.count("payload"))
      throw InputError(
          fmt::format("{}:1: missing column 'payload' (UDP payload bytes; map another "
                      "name with --columns payload=NAME)",
                      file));
    if (!col.count("dest"))
      throw InputError(
          fmt::format("{}:1: missing column 'dest' (the path: loopback, broadcast, "
                      "wire or self; it decides the model's system calls and "
                      "receive side, so it has no default)",
                      file));
    std::string rate;
    for (const char* r : {"ns_per_packet", "kpps", "pps", "payload_mbps"})
      if (col.count(r)) {
        rate = r;
        break;
      }
    if (rate.empty())
      throw InputError(
          fmt::format("{}:1: missing a rate column: one of ns_per_packet, kpps, pps, "
                      "payload_mbps (map another name with --columns kpps=NAME)",
                      file));
    const std::string default_source = path.stem().string();
    int lineno = 1;
    while (std::getline(f, line)) {
      ++lineno;
      if (trim(line).empty()) continue;
      const auto cells = report::split_csv_line(line);
      const std::string where = fmt::format("{}:{}", file, lineno);
      if (cells.size() != header.size())
        throw InputError(
            fmt::format("{}: {} fields, the header has {}", where, cells.size(), header.size()));
      auto cell = [&](const std::string& canon) { return trim(cells[col.at(canon)]); };
      if (col.count("fault") && !cell("fault").empty()) continue;
      auto number = [&](const std::string& canon, const std::string& shown) {
        double v = 0;
        const std::string c = cell(canon);
        if (!parse_double(c, &v))
          throw InputError(
              fmt::format("{}: column '{}': expected a number, got '{}'", where, shown, c));
        return v;
      };
      auto shown = [&](const std::string& canon) {
        return columns.rename.count(canon) ? columns.rename.at(canon) : canon;
      };
      Point p;
      p.source = col.count("source") ? cell("source") : default_source;
      if (p.source.empty())
        throw InputError(fmt::format("{}: column '{}' is empty", where, shown("source")));
      const double payload = number("payload", shown("payload"));
      if (payload < 0 || payload != std::floor(payload) || payload > 65535)
        throw InputError(
            fmt::format("{}: column '{}': expected a whole number of bytes "
                        "0..65535, got '{}'",
                        where, shown("payload"), cell("payload")));
      p.keys["payload"] = std::to_string(static_cast<int>(payload));
      const std::string dest = cell("dest");
      if (!parse_dest(dest))
        throw InputError(
            fmt::format("{}: column '{}': expected loopback, broadcast, wire or "
                        "self, got '{}'",
                        where, shown("dest"), dest));
      p.keys["dest"] = dest;
      for (const char* k : {"align", "copy", "misalign", "service", "buffer_misalign"}) {
        if (!col.count(k)) continue;
        const std::string v = cell(k);
        if (v.empty()) throw InputError(fmt::format("{}: column '{}' is empty", where, shown(k)));
        p.keys[k] = v;
      }
      if (p.native())
        for (const char* k : {"align", "copy"})
          if (!p.keys.count(k))
            throw InputError(fmt::format("{}: native rows need column '{}'", where, k));
      if (p.keys.count("align") && !net::parse_align_policy(p.keys["align"]))
        throw InputError(fmt::format("{}: column '{}': unknown alignment policy '{}'", where,
                                     shown("align"), p.keys["align"]));
      if (p.keys.count("copy") && !net::parse_loop_copy(p.keys["copy"]))
        throw InputError(fmt::format("{}: column '{}': expected m_copy or m_dup, got '{}'", where,
                                     shown("copy"), p.keys["copy"]));
      for (const auto& [k, allowed, expected] : kEnumerated)
        if (p.keys.count(k) && !allowed.count(p.keys[k]))
          throw InputError(fmt::format("{}: column '{}': expected {}, got '{}'", where, shown(k),
                                       expected, p.keys[k]));
      for (const char* k : {"misalign", "service", "buffer_misalign"})
        if (p.keys.count(k) && p.keys[k] == key_default(k)) p.keys.erase(k);

      Repeat r;
      const double v = number(rate, shown(rate));
      if (!(v > 0))
        throw InputError(fmt::format("{}: column '{}': expected a rate > 0, got '{}'", where,
                                     shown(rate), cell(rate)));
      if (rate == "ns_per_packet")
        r.ns = v;
      else if (rate == "kpps")
        r.ns = 1e6 / v;
      else if (rate == "pps")
        r.ns = 1e9 / v;
      else {
        if (payload <= 0)
          throw InputError(fmt::format("{}: payload_mbps needs a payload > 0", where));
        r.ns = 1e9 / (v * 1e6 / (8 * payload));
      }
      if (col.count("null_syscall_ns")) {
        const double n = number("null_syscall_ns", shown("null_syscall_ns"));
        if (!(n > 0))
          throw InputError(fmt::format("{}: column '{}': expected ns > 0, got '{}'", where,
                                       shown("null_syscall_ns"), cell("null_syscall_ns")));
        r.null_ns = n;
      }
      for (const auto& [fn, c] : stage_cols) {
        double s = 0;
        const std::string t = trim(cells[static_cast<size_t>(c)]);
        if (t.empty()) continue;  // the function did not run in this configuration
        if (!parse_double(t, &s))
          throw InputError(fmt::format("{}: column '{}': expected a number, got '{}'", where,
                                       header[static_cast<size_t>(c)], t));
        r.split[fn] = s;
      }
      if (!r.split.empty()) {
        for (const char* k : {"split_overhead_self_ns", "split_overhead_parent_ns"})
          if (!col.count(k))
            throw InputError(
                fmt::format("{}: per-function times without column '{}' (the "
                            "instrumentation's own cost, written by measure "
                            "native --split)",
                            file, k));
        r.overhead_self_ns = number("split_overhead_self_ns", "split_overhead_self_ns");
        r.overhead_parent_ns = number("split_overhead_parent_ns", "split_overhead_parent_ns");
      }
      auto it = std::find_if(points.begin(), points.end(), [&](const Point& q) {
        return q.source == p.source && q.keys == p.keys;
      });
      if (it == points.end()) {
        p.where = where;
        points.push_back(p);
        it = points.end() - 1;
      }
      it->repeats.push_back(std::move(r));
    }
  }
  for (auto& p : points) {
    // The same quantities in every repeat, or the statistic mixes them.
    const bool nul = p.repeats.front().null_ns.has_value();
    for (const auto& r : p.repeats)
      if (r.null_ns.has_value() != nul)
        throw InputError(
            fmt::format("{}: {}: null_syscall_ns in some repeats only", p.where, p.label()));
    p.summarize(stat);
  }
  return points;
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

// ---------------------------------------------------------------- native features

std::vector<std::string> native_params() {
  return config::cost_keys();
}

namespace {

// The timing model's price of what the stack did under several sets of
// costs at once (an account each), attributed to the stack function running
// when it was charged (the innermost one; kOutside for the sender's own
// loop), with the calls and child calls of each function. Nothing is priced
// or counted while `pricing` is off.
class Attributing : public net::NullProbe {
 public:
  // One account per experiment's costs; `xs` must outlive the probe.
  explicit Attributing(const std::vector<config::Experiment>& xs)
      : by_fn(xs.size()), last_(xs.size(), 0.0) {
    acc_.reserve(xs.size());
    for (const auto& x : xs) {
      acc_.emplace_back(x.machine, x.stack);
      loop_cycles_.push_back(x.machine.user_loop_cycles);
    }
  }
  static constexpr size_t kOutside = net::kMaxFns;
  void enter(net::FnId fn) {
    if (!pricing) return;
    if (depth_ > 0) ++child_calls[static_cast<size_t>(top())];
    if (depth_ < stack_.size()) stack_[depth_] = fn;
    ++depth_;
    ++calls[static_cast<size_t>(fn)];
    for (auto& a : acc_) a.enter(fn);
    settle();
  }
  void leave(net::FnId fn) {
    if (!pricing) return;
    for (auto& a : acc_) a.leave(fn);
    if (depth_ > 0) --depth_;
  }
  void copy(net::CopyKind k, const void* s, const void* d, size_t len) {
    each([&](models::CycleAccount& a) { a.copy(k, s, d, len); });
  }
  void cksum(const void* p, size_t len) {
    each([&](models::CycleAccount& a) { a.cksum(p, len); });
  }
  void alloc(net::Obj o, const void* p) {
    each([&](models::CycleAccount& a) { a.alloc(o, p); });
  }
  void free(net::Obj o, const void* p) {
    each([&](models::CycleAccount& a) { a.free(o, p); });
  }
  void header(net::FnId fn, const void* p, unsigned size, bool w) {
    each([&](models::CycleAccount& a) { a.header(fn, p, size, w); });
  }
  // The sender's loop itself (outside every function), before each send.
  void outside() {
    if (!pricing) return;
    for (size_t j = 0; j < acc_.size(); ++j) by_fn[j][kOutside] += loop_cycles_[j];
  }
  // Starts the count over.
  void reset() {
    for (auto& b : by_fn) b = {};
    calls = {};
    child_calls = {};
    for (size_t j = 0; j < acc_.size(); ++j) last_[j] = models::total(acc_[j].pending());
  }

  bool pricing = true;
  std::vector<std::array<double, net::kMaxFns + 1>> by_fn;  // per account
  std::array<double, net::kMaxFns> calls{}, child_calls{};

 private:
  net::FnId top() const { return stack_[std::min(depth_, stack_.size()) - 1]; }
  template <class F>
  void each(F&& event) {
    if (!pricing) return;
    for (auto& a : acc_) event(a);
    settle();
  }
  void settle() {
    const size_t at = depth_ > 0 ? static_cast<size_t>(top()) : kOutside;
    for (size_t j = 0; j < acc_.size(); ++j) {
      const double t = models::total(acc_[j].pending());
      by_fn[j][at] += t - last_[j];
      last_[j] = t;
    }
  }
  std::vector<models::CycleAccount> acc_;
  std::vector<double> loop_cycles_;
  std::array<net::FnId, 32> stack_{};
  size_t depth_ = 0;
  std::vector<double> last_;
};

// A point's path: its columns, each at the path's default where it has none.
workload::Path path_of(const Point& p) {
  // The path's fields by the columns that hold them.
  static constexpr std::pair<const char*, std::string_view> kColumns[] = {
      {"dest", "dest"},       {"align", "align"},
      {"copy", "copy"},       {"misalign", "sockaddr_misalign"},
      {"service", "service"}, {"buffer_misalign", "buffer_misalign"}};
  workload::Path path;
  try {
    for (const auto& [column, field] : kColumns)
      if (const auto it = p.keys.find(column); it != p.keys.end()) path.set(field, it->second);
  } catch (const workload::PathError& e) {
    throw InputError(fmt::format("{}: {}", p.label(), e.what()));
  }
  return path;
}

// A point as `measure native` measured it (its default warm-up).
NativeOptions native_options(const Point& p) {
  NativeOptions o;
  o.path = path_of(p);
  o.payload = p.payload();
  return o;
}

// Charges the sender's own loop, outside every function, before each send.
struct OutsideLoop : workload::NoHooks {
  Attributing& probe;
  void user_loop() { probe.outside(); }
};

// Prices `packets` packets of `p`'s configuration, driven exactly as
// `measure native` drives them (drive_options: the same buffer, sentinels and
// warm-up, which leaves zones and queues in their steady state, with nothing
// serving the netisr its queue full). Only those packets are priced: not the
// warm-up, nor the end sentinel and the stack's teardown, which frees what its
// queues still hold (a full netisr queue when nothing serves it).
void drive(const Point& p, int packets, Attributing& probe) {
  const NativeOptions o = native_options(p);
  workload::Driver<Attributing> drv(probe, drive_options(o), o.stack);
  OutsideLoop hooks{{}, probe};
  probe.pricing = false;
  if (auto why = drv.start(hooks); !why.empty())
    throw InputError(fmt::format("{}: {}", p.label(), why));
  probe.pricing = true;
  probe.reset();
  for (int i = 0; i < packets; ++i)
    if (const workload::Step s = drv.send(hooks); !s.ok())
      throw InputError(fmt::format("{}: the stack stops: {}", p.label(), drv.why(s)));
  probe.pricing = false;
  drv.finish(hooks);
}

}  // namespace

Features native_features(const Point& p, int packets) {
  const auto params = native_params();
  Features f;
  f.total.assign(params.size(), 0);
  const double per = 1.0 / packets;
  // One set of costs per parameter: it 1, every other 0; all priced in one run.
  std::vector<config::Experiment> xs(params.size());
  for (size_t j = 0; j < params.size(); ++j) {
    for (const auto& k : params) config::set_number(xs[j], k, 0);
    config::set_number(xs[j], params[j], 1);
  }
  Attributing probe(xs);
  drive(p, packets, probe);
  for (size_t j = 0; j < params.size(); ++j) {
    // The stack's functions in table order, then the loop outside them.
    const net::FnTable& fns = *xs[j].stack.fns;
    for (size_t i = 0; i <= fns.size(); ++i) {
      const size_t fn = i < fns.size() ? i : Attributing::kOutside;
      const double v = probe.by_fn[j][fn] * per;
      f.total[j] += v;
      if (fn == Attributing::kOutside) continue;
      const std::string name(fns.name(net::fn_at(fn)));
      if (j == 0) {
        f.calls[name] = probe.calls[fn] * per;
        f.child_calls[name] = probe.child_calls[fn] * per;
      }
      if (probe.calls[fn] == 0) continue;
      auto& row = f.split[name];
      row.resize(params.size(), 0);
      row[j] = v;
    }
  }
  return f;
}

// ---------------------------------------------------------------- kernel features

const std::vector<std::string>& kernel_params() {
  static const std::vector<std::string> p = {"send_fixed_ns", "send_per_byte_ns", "recv_fixed_ns",
                                             "recv_per_byte_ns"};
  return p;
}

namespace {
// The kernel loop's receiver runs on the sender's CPU unless the datagram
// leaves on the wire.
bool has_receiver(const Point& p) {
  return p.key("dest") != "wire";
}
}  // namespace

Features kernel_features(const Point& p) {
  Features f;
  const bool rx = has_receiver(p);
  const double n = p.payload();
  f.total = {1.0, n, rx ? 1.0 : 0.0, rx ? n : 0.0};
  if (p.null_syscall_ns) f.known = (rx ? 2 : 1) * *p.null_syscall_ns;
  return f;
}

double predict_ns(const Features& f, const std::vector<double>& values) {
  double ns = f.known;
  for (size_t j = 0; j < values.size() && j < f.total.size(); ++j) ns += f.total[j] * values[j];
  return ns;
}

// ---------------------------------------------------------------- the fit

double Fit::rms_rel_residual() const {
  double sq = 0;
  for (const auto& r : residuals) sq += std::pow((r.fitted_ns - r.measured_ns) / r.measured_ns, 2);
  return residuals.empty() ? 0 : std::sqrt(sq / static_cast<double>(residuals.size()));
}

double Fit::value(const std::string& name) const {
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return values[i];
  throw std::runtime_error("the fit has no parameter " + name);
}

namespace {
constexpr double kNullTol = 1e-6;  // a direction counts if it carries this share of a vector
}

std::vector<std::string> Fit::relies_on(const Features& f) const {
  std::vector<std::string> out;
  if (null_basis.cols() == 0) return out;
  const auto n = static_cast<Eigen::Index>(names.size());
  Eigen::VectorXd a(n);
  for (Eigen::Index j = 0; j < n; ++j) a(j) = f.total[static_cast<size_t>(j)] * scale(j);
  const double norm = a.norm();
  if (norm == 0) return out;
  const Eigen::VectorXd c = null_basis.transpose() * a;
  if (c.norm() <= kNullTol * norm) return out;
  // The undetermined parameters this point's price involves.
  for (Eigen::Index j = 0; j < n; ++j)
    if (a(j) != 0 && null_basis.row(j).norm() > kNullTol)
      out.push_back(names[static_cast<size_t>(j)]);
  return out;
}

std::optional<std::vector<std::string>> Fit::tied_to(const std::string& name) const {
  const auto it = std::find(names.begin(), names.end(), name);
  if (it == names.end() ||
      std::find(undetermined.begin(), undetermined.end(), name) == undetermined.end())
    return std::nullopt;
  const auto j = static_cast<Eigen::Index>(it - names.begin());
  std::vector<std::string> out;
  // A direction the data leave free that moves this parameter alone means
  // it was never exercised; others moving with it are its partners.
  for (Eigen::Index k = 0; k < static_cast<Eigen::Index>(names.size()); ++k)
    if (k != j && std::abs(null_basis.row(j).dot(null_basis.row(k))) > kNullTol)
      out.push_back(names[static_cast<size_t>(k)]);
  return out;
}

nlohmann::json Fit::to_json() const {
  nlohmann::json j;
  j["source"] = source;
  j["stat"] = stat == Stat::min ? "min" : "median";
  j["train"] = split.specs();
  j["split_weight"] = split_weight;
  j["split_slowdown"] = slowdown;
  j["split_overhead_fitted_ns"] = split_overhead;
  j["units"] = "ns (cycles at clock_hz 1e9)";
  j["params"] = nlohmann::json::array();
  for (size_t i = 0; i < names.size(); ++i) {
    nlohmann::json p = {{"name", names[i]}, {"value", values[i]}, {"scale", scale(i)}};
    if (!lo.empty()) p["interval_90"] = {lo[i], hi[i]};
    p["determined"] =
        std::find(undetermined.begin(), undetermined.end(), names[i]) == undetermined.end();
    nlohmann::json row = nlohmann::json::array();
    for (Eigen::Index k = 0; k < null_basis.cols(); ++k)
      row.push_back(null_basis(static_cast<Eigen::Index>(i), k));
    p["null_directions"] = row;
    j["params"].push_back(p);
  }
  j["bootstrap"] = draws;
  j["rank"] = rank;
  j["condition_number"] = condition;
  j["undetermined"] = undetermined;
  j["training_points"] = training_points;
  j["held_out_points"] = held_out_points;
  j["constant_kpps"] = constant_kpps;
  j["rms_relative_residual"] = rms_rel_residual();
  j["measured"] = measured;
  j["dest"] = dest;
  for (const auto& r : residuals)
    j["residuals"].push_back(
        {{"point", r.label}, {"measured_ns", r.measured_ns}, {"fitted_ns", r.fitted_ns}});
  return j;
}

Fit Fit::from_json(const nlohmann::json& j) {
  try {
    Fit f;
    f.source = j.at("source").get<std::string>();
    const auto st = parse_stat(j.at("stat").get<std::string>());
    if (!st) throw InputError("stat must be median or min");
    f.stat = *st;
    f.split = parse_split(j.at("train").get<std::vector<std::string>>());
    f.split_weight = j.value("split_weight", 0.0);
    f.slowdown = j.value("split_slowdown", 1.0);
    const auto& ps = j.at("params");
    const auto n = static_cast<Eigen::Index>(ps.size());
    f.scale = Eigen::VectorXd::Ones(n);
    Eigen::Index k = 0;
    for (const auto& p : ps) {
      f.names.push_back(p.at("name").get<std::string>());
      f.values.push_back(p.at("value").get<double>());
      f.scale(k) = p.at("scale").get<double>();
      if (p.contains("interval_90")) {
        f.lo.push_back(p["interval_90"][0].get<double>());
        f.hi.push_back(p["interval_90"][1].get<double>());
      }
      const auto& row = p.at("null_directions");
      if (k == 0) f.null_basis = Eigen::MatrixXd::Zero(n, static_cast<Eigen::Index>(row.size()));
      for (size_t c = 0; c < row.size(); ++c)
        f.null_basis(k, static_cast<Eigen::Index>(c)) = row[c].get<double>();
      ++k;
    }
    f.draws = j.value("bootstrap", std::vector<std::vector<double>>{});
    f.rank = j.value("rank", 0);
    f.condition = j.value("condition_number", 0.0);
    f.undetermined = j.value("undetermined", std::vector<std::string>{});
    f.training_points = j.value("training_points", 0);
    f.held_out_points = j.value("held_out_points", 0);
    f.constant_kpps = j.value("constant_kpps", 0.0);
    f.measured = j.value("measured", std::vector<std::string>{});
    f.dest = j.value("dest", std::string());
    return f;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(std::string("not a fit written by simloop calibrate: ") + e.what());
  }
}

Features features_for(const Fit& fit, const Point& p) {
  return fit.source == "native" ? native_features(p) : kernel_features(p);
}

namespace {

bool of_model(const Point& p, const std::string& source) {
  return source == "native" ? p.native() : !p.native();
}

// Rows of the weighted least-squares problem for the training points.
struct Problem {
  Eigen::MatrixXd A;
  Eigen::VectorXd b;
};

// With per-function times, two more columns than parameters: what the
// instrumented run's clock reads cost beyond the overhead measured beside
// it, per call of a function and per call it makes (zero in the totals).
constexpr size_t kNuisance = 2;

Problem build(const std::vector<const Point*>& train, const std::vector<Features>& feats,
              size_t nparams, double split_weight, bool use_split, double slowdown) {
  std::vector<std::vector<double>> rows;
  std::vector<double> rhs;
  const size_t ncols = nparams + (use_split ? kNuisance : 0);
  for (size_t i = 0; i < train.size(); ++i) {
    const Point& p = *train[i];
    const Features& f = feats[i];
    const double w = 1.0 / p.ns_value;
    std::vector<double> row(ncols, 0.0);
    for (size_t j = 0; j < nparams; ++j) row[j] = f.total[j] * w;
    rows.push_back(row);
    rhs.push_back((p.ns_value - f.known) * w);
    if (!use_split || p.split_value.empty()) continue;
    for (const auto& [fn, frow] : f.split) {
      const auto it = p.split_value.find(fn);
      const double measured = it == p.split_value.end() ? 0 : it->second;
      // The instrumented run's clock reads cost time of their own, charged
      // to the function that made them and to its caller.
      const double overhead =
          f.calls.at(fn) * p.overhead_self_ns + f.child_calls.at(fn) * p.overhead_parent_ns;
      const double ws = split_weight * w;
      for (size_t j = 0; j < nparams; ++j) row[j] = frow[j] * ws;
      row[nparams] = f.calls.at(fn) / slowdown * ws;
      row[nparams + 1] = f.child_calls.at(fn) / slowdown * ws;
      rows.push_back(row);
      rhs.push_back((measured - overhead) / slowdown * ws);
    }
  }
  Problem pr;
  pr.A.resize(static_cast<Eigen::Index>(rows.size()), static_cast<Eigen::Index>(ncols));
  pr.b.resize(static_cast<Eigen::Index>(rows.size()));
  for (size_t i = 0; i < rows.size(); ++i) {
    for (size_t j = 0; j < ncols; ++j)
      pr.A(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = rows[i][j];
    pr.b(static_cast<Eigen::Index>(i)) = rhs[i];
  }
  return pr;
}

Eigen::VectorXd solve(const Problem& pr, const Eigen::VectorXd& scale) {
  const Eigen::MatrixXd As = pr.A * scale.asDiagonal();
  return nnls(As, pr.b).cwiseProduct(scale);
}

bool has_split(const std::vector<const Point*>& train) {
  for (const Point* p : train)
    if (!p->split_value.empty()) return true;
  return false;
}

// The instrumented run is slower than the plain one beyond its clock reads
// (the code they displace): its per-function times are taken as
// proportional to the plain run's, the factor chosen with the costs to
// minimise the weighted residual (golden-section search on its logarithm).
double fit_slowdown(const std::vector<const Point*>& train, const std::vector<Features>& feats,
                    size_t n, double w, const Eigen::VectorXd& scale) {
  auto cost = [&](double log_k) {
    const Problem pr = build(train, feats, n, w, true, std::exp(log_k));
    return (pr.A * solve(pr, scale) - pr.b).squaredNorm();
  };
  double a = std::log(0.5), b = std::log(5.0);
  const double g = (std::sqrt(5.0) - 1) / 2;
  double c = b - g * (b - a), d = a + g * (b - a);
  double fc = cost(c), fd = cost(d);
  for (int i = 0; i < 40; ++i) {
    if (fc < fd) {
      b = d, d = c, fd = fc;
      c = b - g * (b - a), fc = cost(c);
    } else {
      a = c, c = d, fc = fd;
      d = a + g * (b - a), fd = cost(d);
    }
  }
  return std::exp((a + b) / 2);
}

}  // namespace

Fit calibrate(std::vector<Point> points, const FitOptions& opt) {
  if (opt.source != "native" && opt.source != "kernel")
    throw InputError("calibrate: unknown source '" + opt.source + "' (native or kernel)");
  Fit fit;
  fit.source = opt.source;
  fit.stat = opt.stat;
  fit.split = opt.split;
  fit.split_weight = opt.source == "native" && opt.use_split ? opt.split_weight : 0;
  fit.names = opt.source == "native" ? native_params() : kernel_params();
  std::vector<const Point*> train;
  for (const auto& p : points) {
    if (!of_model(p, opt.source)) continue;
    (opt.split.trains(p) ? train.push_back(&p) : void(++fit.held_out_points));
  }
  fit.training_points = static_cast<int>(train.size());
  if (train.empty()) {
    // The likeliest cause: a table from another machine read as native rows.
    size_t other = 0;
    for (const auto& p : points) other += of_model(p, opt.source) ? 0 : 1;
    const char* other_model = opt.source == "native" ? "kernel" : "native";
    throw InputError(fmt::format(
        "no {} points in the training set ({}){}", opt.source, fmt::join(opt.split.specs(), "; "),
        other == 0 ? std::string()
                   : fmt::format("; {} point(s) are for the {} model: --source {}", other,
                                 other_model, other_model)));
  }
  if (opt.source == "kernel") {
    const bool nul = train.front()->null_syscall_ns.has_value();
    for (const Point* p : train)
      if (p->null_syscall_ns.has_value() != nul)
        throw InputError(fmt::format(
            "{}: {} has {} null syscall, {} has {}: measure it for "
            "every training point or none",
            p->where, p->label(), nul ? "no" : "a", train.front()->label(), nul ? "one" : "none"));
  }
  // The path the profile's experiment takes: the most common training dest.
  std::map<std::string, int> dests;
  for (const Point* p : train) ++dests[p->key("dest")];
  fit.dest = std::max_element(dests.begin(), dests.end(), [](auto& a, auto& b) {
               return a.second < b.second;
             })->first;

  std::vector<Features> feats;
  for (const Point* p : train) feats.push_back(features_for(fit, *p));
  const size_t n = fit.names.size();
  if (!has_split(train)) fit.split_weight = 0;
  const bool split = fit.split_weight > 0;

  // Columns scaled to unit norm: events per packet and bytes per packet
  // differ by orders of magnitude. A column the training points never
  // exercise keeps scale 1 (it is undetermined either way).
  const auto ncols = static_cast<Eigen::Index>(n + (split ? kNuisance : 0));
  Eigen::VectorXd scale = Eigen::VectorXd::Ones(ncols);
  {
    const Problem pr0 = build(train, feats, n, fit.split_weight, split, 1.0);
    for (Eigen::Index j = 0; j < pr0.A.cols(); ++j) {
      const double nrm = pr0.A.col(j).norm();
      if (nrm > 0) scale(j) = 1.0 / nrm;
    }
  }
  fit.scale = scale.head(static_cast<Eigen::Index>(n));
  fit.slowdown = split ? fit_slowdown(train, feats, n, fit.split_weight, scale) : 1.0;
  const Problem pr = build(train, feats, n, fit.split_weight, split, fit.slowdown);
  const Eigen::VectorXd x = solve(pr, scale);
  fit.values.assign(x.data(), x.data() + n);
  if (split)
    fit.split_overhead = {x(static_cast<Eigen::Index>(n)), x(static_cast<Eigen::Index>(n + 1))};

  // What the data determine: the null space of the scaled design (the
  // instrumentation's columns included; only the costs' rows are kept).
  const Eigen::MatrixXd As = pr.A * scale.asDiagonal();
  Eigen::JacobiSVD<Eigen::MatrixXd> svd(As, Eigen::ComputeFullV);
  const Eigen::VectorXd sv = svd.singularValues();
  const double smax = sv.size() > 0 ? sv(0) : 0;
  int rank = 0;
  for (Eigen::Index k = 0; k < sv.size(); ++k)
    if (sv(k) > smax * 1e-9) ++rank;
  fit.rank = rank;
  fit.condition = rank > 0 ? smax / sv(rank - 1) : std::numeric_limits<double>::infinity();
  const auto nn = static_cast<Eigen::Index>(n);
  fit.null_basis = svd.matrixV().rightCols(ncols - rank).topRows(nn);
  for (Eigen::Index j = 0; j < nn; ++j)
    if (fit.null_basis.cols() > 0 && fit.null_basis.row(j).norm() > kNullTol)
      fit.undetermined.push_back(fit.names[static_cast<size_t>(j)]);

  for (size_t i = 0; i < train.size(); ++i)
    fit.residuals.push_back(
        {train[i]->label(), train[i]->ns_value, predict_ns(feats[i], fit.values)});
  double sum = 0;
  for (const Point* p : train) sum += p->kpps();
  fit.constant_kpps = sum / static_cast<double>(train.size());

  // Intervals: refit on resamples of each training point's repeats.
  if (opt.bootstrap > 0) {
    std::mt19937_64 rng(opt.seed);
    std::vector<std::vector<double>> draws(n);  // per parameter
    std::vector<Point> copies;
    for (const Point* p : train) copies.push_back(*p);
    std::vector<const Point*> ptrs;
    for (const auto& c : copies) ptrs.push_back(&c);
    for (int b = 0; b < opt.bootstrap; ++b) {
      for (auto& c : copies) {
        std::uniform_int_distribution<size_t> u(0, c.repeats.size() - 1);
        std::vector<size_t> pick(c.repeats.size());
        for (auto& k : pick) k = u(rng);
        c.summarize(fit.stat, pick);
      }
      // Kernel features depend on the null syscall, which was resampled.
      std::vector<Features> fb = feats;
      if (opt.source == "kernel")
        for (size_t i = 0; i < copies.size(); ++i) fb[i] = kernel_features(copies[i]);
      const Eigen::VectorXd xb =
          solve(build(ptrs, fb, n, fit.split_weight, split, fit.slowdown), scale);
      for (size_t j = 0; j < n; ++j) draws[j].push_back(xb(static_cast<Eigen::Index>(j)));
      fit.draws.emplace_back(xb.data(), xb.data() + n);
    }
    for (size_t j = 0; j < n; ++j) {
      auto& d = draws[j];
      std::sort(d.begin(), d.end());
      fit.lo.push_back(d[static_cast<size_t>(0.05 * (d.size() - 1))]);
      fit.hi.push_back(d[static_cast<size_t>(0.95 * (d.size() - 1))]);
    }
  }
  return fit;
}

// ---------------------------------------------------------------- profiles

namespace {

// Bytes the simulated stack copies per byte of payload on `dest`'s path
// with a receiver where there is one: the slope between two payloads.
double copied_bytes_per_payload_byte(const std::string& dest) {
  auto copied = [&](int payload) {
    workload::Path path;
    path.set("dest", dest);
    net::CountingProbe probe;
    workload::Driver<net::CountingProbe> drv(probe, {.path = path, .payload = payload}, {});
    if (const workload::Step s = drv.send(); !s.ok())
      throw std::runtime_error("counting copies: " + drv.why(s));
    uint64_t n = 0;
    for (uint64_t b : probe.copied_bytes) n += b;
    return static_cast<double>(n);
  };
  return (copied(1100) - copied(100)) / 1000.0;
}

// Emits the keys under `prefix` of `x` as a nested map, with a comment on
// the keys in `notes`.
void emit_section(YAML::Emitter& out, const config::Experiment& x, const std::string& prefix,
                  const std::map<std::string, std::string>& notes) {
  std::vector<std::string> keys;
  for (const auto& k : config::keys_under(prefix)) {
    const std::string rest = k.substr(prefix.size());
    if (rest == "name" || rest == "description") continue;
    keys.push_back(k);
  }
  // Open and close maps as the dotted paths go in and out of sections.
  std::vector<std::string> open;
  for (const auto& k : keys) {
    std::vector<std::string> parts;
    std::string rest = k.substr(prefix.size());
    for (auto dot = rest.find('.'); dot != std::string::npos; dot = rest.find('.')) {
      parts.push_back(rest.substr(0, dot));
      rest = rest.substr(dot + 1);
    }
    size_t common = 0;
    while (common < open.size() && common < parts.size() && open[common] == parts[common]) ++common;
    while (open.size() > common) {
      out << YAML::EndMap;
      open.pop_back();
    }
    for (size_t i = common; i < parts.size(); ++i) {
      out << YAML::Key << parts[i] << YAML::Value << YAML::BeginMap;
      open.push_back(parts[i]);
    }
    out << YAML::Key << rest << YAML::Value;
    const auto v = config::get_value(x, k);
    if (v.is_boolean())
      out << v.get<bool>();
    else if (v.is_number_integer())
      out << v.get<int64_t>();
    else if (v.is_number())
      out << v.get<double>();
    else
      out << v.get<std::string>();
    if (auto it = notes.find(k); it != notes.end()) out << YAML::Comment(it->second);
  }
  while (!open.empty()) {
    out << YAML::EndMap;
    open.pop_back();
  }
}

std::string emit_component(const config::Experiment& x, const std::string& prefix,
                           const std::string& name, const std::string& description,
                           const std::string& head,
                           const std::map<std::string, std::string>& notes) {
  YAML::Emitter out;
  out.SetDoublePrecision(6);
  out << YAML::Comment(head) << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << name;
  out << YAML::Key << "description" << YAML::Value << description;
  emit_section(out, x, prefix, notes);
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace

void write_profile(const Fit& fit, const std::vector<Point>& points, const fs::path& dir,
                   const std::string& name) {
  config::Experiment x;
  for (const auto& k : config::cost_keys()) config::set_number(x, k, 0);
  config::set_number(x, "machine.clock_hz", 1e9);
  std::map<std::string, std::string> notes;
  std::string what;
  const Point* first = nullptr;
  for (const auto& p : points)
    if (of_model(p, fit.source) && fit.split.trains(p) && p.key("dest") == fit.dest) {
      first = &p;
      break;
    }
  if (first == nullptr) throw InputError("the fit has no training point on path " + fit.dest);
  if (fit.source == "native") {
    what = "native runs of the real stack on this machine";
    for (size_t i = 0; i < fit.names.size(); ++i) {
      config::set_number(x, fit.names[i], fit.values[i]);
      if (std::find(fit.undetermined.begin(), fit.undetermined.end(), fit.names[i]) !=
          fit.undetermined.end())
        notes[fit.names[i]] = "not determined by the training data alone";
    }
  } else {
    what = fmt::format("measured runs of {}", first->source);
    std::vector<double> nulls;
    for (const auto& p : points)
      if (of_model(p, fit.source) && fit.split.trains(p) && p.null_syscall_ns)
        nulls.push_back(*p.null_syscall_ns);
    const bool rx = has_receiver(*first);
    if (!nulls.empty()) {
      const double null_ns = apply_stat(fit.stat, nulls);
      config::set_number(x, "machine.syscall.entry_cycles", null_ns / 2);
      config::set_number(x, "machine.syscall.exit_cycles", null_ns / 2);
      notes["machine.syscall.entry_cycles"] =
          fmt::format("half a null system call ({:.6g} ns, measured)", null_ns);
    } else {
      notes["machine.syscall.entry_cycles"] =
          "not measured: the system call's cost is inside stack.functions.sendto";
    }
    const double per_byte =
        fit.value("send_per_byte_ns") + (rx ? fit.value("recv_per_byte_ns") : 0);
    config::set_number(x, "machine.copy.cycles_per_byte",
                       per_byte / copied_bytes_per_payload_byte(fit.dest));
    notes["machine.copy.cycles_per_byte"] = fmt::format(
        "the fitted {:.6g} ns per payload byte over the bytes the stack copies per payload byte",
        per_byte);
    config::set_number(x, "stack.functions.sendto", fit.value("send_fixed_ns"));
    notes["stack.functions.sendto"] = "the fitted fixed cost of sending, all on sendto";
    if (rx) {
      config::set_number(x, "stack.functions.soreceive", fit.value("recv_fixed_ns"));
      notes["stack.functions.soreceive"] = "the fitted fixed cost of receiving";
    }
  }
  const std::string head = fmt::format(
      "Fitted by simloop calibrate to {} (training points: {}).\nclock_hz is 1e9, so "
      "every cost below is in ns.",
      what, fmt::join(fit.split.specs(), "; "));
  const std::string machine =
      emit_component(x, "machine.", name + "-machine",
                     fit.source == "native" ? "this machine running the native harness (fitted)"
                                            : fmt::format("{} (fitted)", first->source),
                     head, notes);
  const std::string stack = emit_component(
      x, "stack.", name + "-stack",
      fit.source == "native" ? "the real stack's costs on this machine (fitted)"
                             : fmt::format("the costs of {} (fitted)", first->source),
      head, notes);

  const bool rx = first->key("dest") != "wire";
  YAML::Emitter e;
  e << YAML::Comment(fmt::format(
           "The calibrated profile on the measured path: UDP to {}{}, no interrupts, no wire to "
           "wait for.",
           fit.dest, rx ? ", each datagram read by a receiver on the same CPU" : ""))
    << YAML::BeginMap;
  e << YAML::Key << "name" << YAML::Value << name;
  e << YAML::Key << "description" << YAML::Value
    << fmt::format("UDP to {} simulated with the costs fitted to {}", fit.dest, what);
  e << YAML::Key << "machine" << YAML::Value << name + "-machine.yaml";
  e << YAML::Key << "stack" << YAML::Value << name + "-stack.yaml";
  e << YAML::Key << "workload" << YAML::Value << YAML::BeginMap;
  const workload::Path path = path_of(*first);
  // The profile's experiment sends what its path carries.
  e << YAML::Key << "payload" << YAML::Value
    << std::min(first->payload(), path.max_payload(net::StackOptions{}));
  e << YAML::Key << "packets" << YAML::Value << 20000;
  e << YAML::Key << "dest" << YAML::Value << fit.dest;
  e << YAML::Key << "receive" << YAML::Value << rx;
  e << YAML::Key << "link" << YAML::Value << YAML::BeginMap << YAML::Key << "bandwidth_bps"
    << YAML::Value << 1e13 << YAML::Key << "latency_s" << YAML::Value << 0 << YAML::EndMap;
  e << YAML::EndMap;
  e << YAML::Key << "interrupts" << YAML::Value << YAML::BeginMap << YAML::Key << "enabled"
    << YAML::Value << false << YAML::EndMap;
  e << YAML::Key << "options" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "align" << YAML::Value << path.get("align");
  e << YAML::Key << "copy" << YAML::Value << path.get("copy");
  e << YAML::Key << "sockaddr_misalign" << YAML::Value << path.sockaddr_misalign;
  e << YAML::EndMap;
  e << YAML::Key << "seed" << YAML::Value << 1;
  e << YAML::EndMap;

  fs::create_directories(dir);
  report::write_file_atomic(dir / (name + "-machine.yaml"), machine);
  report::write_file_atomic(dir / (name + "-stack.yaml"), stack);
  report::write_file_atomic(dir / (name + ".yaml"), std::string(e.c_str()) + "\n");
}

}  // namespace simloop::measure
