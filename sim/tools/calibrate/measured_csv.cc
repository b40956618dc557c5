#include "sim/tools/calibrate/measured_csv.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <unordered_map>

#include "sim/report/csv_table.h"
#include "sim/stack/net/host.h"
#include "sim/stack/net/inet.h"
#include "sim/tools/calibrate/calibrate_detail.h"
#include "sim/tools/measure/native.h"

namespace simloop::measure {

namespace fs = std::filesystem;

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
      {"cpu_ns_per_packet",
       "the thread's CPU ns per datagram in the same run (measure native and measure kernel "
       "write it); the rate under --time cpu"},
      {"null_syscall_cpu_ns",
       "the null system call's thread CPU ns (the one read under --time cpu)"},
      {"align", "alignment policy (native rows): none, copy-down, strict, copy-down-unsafe"},
      {"copy", "simplex loop copy (native rows): m_copy or m_dup"},
      {"misalign", "bytes past a 4-byte boundary of the received sockaddr (native rows), 0-3"},
      {"service",
       "what serves the host after each sendto() (native rows): full (the netisr, the receiver, "
       "transmit completion; the default) or send-only (transmit completion only)"},
      {"buffer_misalign",
       "bytes past an 8-byte boundary of the sender's buffer (native rows), 0-7; default 0"},
      {"path",
       "how a kernel loop addressed its datagrams (measure kernel rows): unconnected (sendto() "
       "with the address; the default) or connected (send() on a connected socket)"},
      {"ether_mtu",
       "MTU of the Ethernet interface (native rows), 68-9216; default 1500 (wire and broadcast "
       "frames, and the largest payload they carry)"},
      {"max_linkhdr",
       "link header space reserved in front of the data (native rows), 0-64 bytes; default 16"},
      {"repeat", "which repeat the row is (rows of one configuration are its repeats)"},
      {"fault", "non-empty: the run failed and the row is left out"},
  };
  return cols;
}

namespace {

// The keys with a few values, what they allow and how an error says it.
struct Enumerated {
  const char* key;
  std::set<std::string> allowed;
  const char* expected;
};
const std::array<Enumerated, 4> kEnumerated = {{
    {"path",
     {"unconnected", "connected", "veth", "veth-connected"},
     "unconnected, connected, veth or veth-connected"},
    {"misalign", {"0", "1", "2", "3"}, "0..3"},
    {"service", {"full", "send-only"}, "full or send-only"},
    {"buffer_misalign", {"0", "1", "2", "3", "4", "5", "6", "7"}, "0..7"},
}};

// The keys that are whole numbers in a range.
struct Ranged {
  const char* key;
  int lo, hi;
};
const std::array<Ranged, 2> kRanged = {{
    {"ether_mtu", 68, net::kMaxEtherMtu},
    {"max_linkhdr", 0, 64},
}};

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
                                              "cpu_s",
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

}  // namespace

using detail::key_default;

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

namespace {

// One file's rows, added to `points` (a row of a point already there is
// one more repeat of it).
// Where each point is in `points`, by its source and keys: a row finds its
// point in constant time, however many points the files hold.
using PointIndex = std::unordered_map<std::string, size_t>;

std::string point_id(const Point& p) {
  std::string id = p.source;
  for (const auto& [k, v] : p.keys) id += '\x1f' + k + '=' + v;
  return id;
}

void read_file(const fs::path& path, const ColumnMap& columns, std::vector<Point>& points,
               PointIndex& index) {
  const std::string file = path.string();
  const std::string text = report::read_csv_file(path, file);
  report::CsvReader csv(text, file, {.trim = true});
  const std::vector<std::string>& header = csv.header();
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
  std::string null_col = "null_syscall_ns";
  if (columns.cpu_time) {
    if (!col.count("cpu_ns_per_packet"))
      throw InputError(fmt::format(
          "{}:1: --time cpu needs column 'cpu_ns_per_packet' (the thread CPU time that measure "
          "native and measure kernel write; map another name with --columns "
          "cpu_ns_per_packet=NAME)",
          file));
    rate = "cpu_ns_per_packet";
    if (col.count("null_syscall_ns") && !col.count("null_syscall_cpu_ns"))
      throw InputError(
          fmt::format("{}:1: --time cpu: column 'null_syscall_ns' has no CPU-time twin "
                      "'null_syscall_cpu_ns'; wall and CPU times are not mixed",
                      file));
    null_col = "null_syscall_cpu_ns";
  }
  if (rate.empty())
    throw InputError(
        fmt::format("{}:1: missing a rate column: one of ns_per_packet, kpps, pps, "
                    "payload_mbps (map another name with --columns kpps=NAME)",
                    file));
  const std::string default_source = path.stem().string();
  while (csv.next()) {
    const std::vector<std::string>& cells = csv.cells();
    const std::string where = csv.where();
    auto cell = [&](const std::string& canon) { return cells[static_cast<size_t>(col.at(canon))]; };
    if (col.count("fault") && !cell("fault").empty()) continue;
    auto number = [&](const std::string& canon, const std::string& shown) {
      double v = 0;
      const std::string c = cell(canon);
      if (!report::parse_number(c, &v))
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
    for (const char* k : {"align", "copy", "misalign", "service", "buffer_misalign", "path",
                          "ether_mtu", "max_linkhdr"}) {
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
    for (const auto& [k, lo, hi] : kRanged)
      if (p.keys.count(k)) {
        int v = 0;
        const std::string& s = p.keys[k];
        const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
        if (r.ec != std::errc() || r.ptr != s.data() + s.size() || v < lo || v > hi)
          throw InputError(fmt::format("{}: column '{}': expected a whole number {}..{}, got '{}'",
                                       where, shown(k), lo, hi, s));
      }
    for (const char* k :
         {"misalign", "service", "buffer_misalign", "path", "ether_mtu", "max_linkhdr"})
      if (p.keys.count(k) && p.keys[k] == key_default(k)) p.keys.erase(k);

    Repeat r;
    const double v = number(rate, shown(rate));
    if (!(v > 0))
      throw InputError(fmt::format("{}: column '{}': expected a rate > 0, got '{}'", where,
                                   shown(rate), cell(rate)));
    if (rate == "ns_per_packet" || rate == "cpu_ns_per_packet")
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
    if (col.count(null_col)) {
      const double n = number(null_col, shown(null_col));
      if (!(n > 0))
        throw InputError(fmt::format("{}: column '{}': expected ns > 0, got '{}'", where,
                                     shown(null_col), cell(null_col)));
      r.null_ns = n;
    }
    for (const auto& [fn, c] : stage_cols) {
      double s = 0;
      const std::string& t = cells[static_cast<size_t>(c)];
      if (t.empty()) continue;  // the function did not run in this configuration
      if (!report::parse_number(t, &s))
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
    const auto [at, fresh] = index.emplace(point_id(p), points.size());
    if (fresh) {
      p.where = where;
      points.push_back(p);
    }
    points[at->second].repeats.push_back(std::move(r));
  }
}

}  // namespace

std::vector<Point> read_points(const std::vector<fs::path>& csvs, Stat stat,
                               const ColumnMap& columns) {
  std::vector<Point> points;
  PointIndex index;
  for (const auto& path : csvs) {
    try {
      read_file(path, columns, points, index);
    } catch (const report::CsvError& e) {
      throw InputError(e.what());
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

}  // namespace simloop::measure
