// simloop calibrate host --from DIR: a host profile measured on host A,
// carried to this host by this host's microbenchmarks alone. Nothing of the
// network stacks is measured here. Each cost is put in ns at A, scaled by
// what it is, and put back in cycles at this host's clock:
//   - the system call's entry and exit by the null system call's CPU time;
//   - the BSD stack's copies' cost per byte by memcpy's ns per byte at
//     16 KiB; the Linux stack's by the kernel's own copy to user space (a
//     pread within one page), since the kernel copies without the vector
//     registers user space's memcpy uses: 5.8x apart between an AMD guest
//     (16 B a cycle) and an Intel guest where the kernel's copies were about
//     2x apart. Where either side has no such figure, by the kernel code's
//     factor below;
//   - the Linux stack's functions (kernel code) by the kernel's own work in
//     an AF_UNIX datagram round trip: a kernel's code runs at a speed of its
//     own, 4x apart at the same clock between an AMD and an Intel guest
//     (experiments/validation/hosts/hosts.md). Where either side has no
//     such figure, by the null system call instead;
//   - every other cost (the BSD stack's functions, the user loop, the
//     checksum, the buffers) by the core's own clock, a chain of dependent
//     multiplies (of adds where either side has no multiplies).
// --scale clock scales every cost by the cpuinfo clocks alone, and
// --scale none copies A's costs: the two baselines a rescale must beat.
#include "sim/tools/cli/host_rescale.h"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "models/costs.h"
#include "models/l1d_copies.h"
#include "sim/config/host_profiles.h"
#include "sim/report/safe_file.h"
#include "sim/support/host.h"
#include "sim/support/input_file.h"
#include "sim/support/text.h"
#include "sim/support/yaml_input.h"
#include "sim/tools/cli/commands.h"
#include "version.h"

namespace simloop::cli {

namespace fs = std::filesystem;

namespace {

std::string read_whole(const fs::path& p) {
  if (const std::string why = support::input_problem(p); !why.empty())
    throw UserError(fmt::format("calibrate host --from: {} {}", p.string(), why));
  std::ifstream f(p, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

double number_at(const nlohmann::json& j, const std::vector<std::string>& path,
                 const fs::path& file) {
  const nlohmann::json* at = &j;
  std::string where;
  for (const auto& k : path) {
    where += (where.empty() ? "" : ".") + k;
    if (!at->is_object() || !at->contains(k))
      throw UserError(
          fmt::format("calibrate host --from: {}: no {} (a microbench.json that "
                      "simloop calibrate host wrote has it)",
                      file.string(), where));
    at = &(*at)[k];
  }
  if (!at->is_number() || at->get<double>() <= 0)
    throw UserError(fmt::format("calibrate host --from: {}: {}: expected a positive number",
                                file.string(), where));
  return at->get<double>();
}

// memcpy's ns per byte at 16 KiB: in the L1 data cache with room, steady
// to about 1 % from run to run here, where 64 KiB (past L1, in L2) moved by
// up to 30 % between runs minutes apart; a file without that size, at its
// largest.
double memcpy_ns_per_byte(const nlohmann::json& bench, const fs::path& file) {
  const auto it = bench.find("memcpy");
  if (it == bench.end() || !it->is_array() || it->empty())
    throw UserError(fmt::format("calibrate host --from: {}: no memcpy figures", file.string()));
  const nlohmann::json* pick = &it->back();
  for (const auto& c : *it)
    if (c.is_object() && c.contains("bytes") && c["bytes"].is_number() &&
        c["bytes"].get<double>() == 16384)
      pick = &c;
  const double bytes = number_at(*pick, {"bytes"}, file), ns = number_at(*pick, {"ns"}, file);
  return ns / bytes;
}

// Each cost key's kind: the figure its ns scale with.
enum class Scales { core, syscall, copy };

struct Rule {
  std::string key;  // dotted, as in the file
  Scales by;
};

// The machine file's costs (the stack file's are every number under
// functions, alloc and free, and cksum_cycles_per_byte: the code's own,
// scaled as the core's or, for the Linux stack, as the kernel's).
const std::vector<Rule>& machine_rules() {
  static const std::vector<Rule> r = {{"syscall.entry_cycles", Scales::syscall},
                                      {"syscall.exit_cycles", Scales::syscall},
                                      {"user_loop_cycles", Scales::core},
                                      {"copy.setup_cycles", Scales::core},
                                      {"copy.cycles_per_byte", Scales::copy},
                                      {"copy.unaligned_cycles_per_byte", Scales::copy},
                                      {"copy.to_user_extra_cycles_per_byte", Scales::copy},
                                      {"copy.l1d_miss_extra_cycles_per_byte", Scales::copy},
                                      {"unaligned_access_cycles", Scales::core},
                                      {"unaligned_line_cross_cycles", Scales::core}};
  return r;
}

bool is_number(const YAML::Node& n) {
  if (!n.IsScalar()) return false;
  double v = 0;
  return YAML::convert<double>::decode(n, v);
}

// Six significant digits, as the fits write them.
void scale_node(YAML::Node n, double k) {
  if (is_number(n)) n = fmt::format("{:.6g}", n.as<double>() * k);
}

struct Factors {
  double core = 1, syscall = 1, copy = 1, kernel = 1;  // ns at this host over ns at A
  double kernel_copy = 1;                              // the Linux stack's copies
  std::string kernel_by = "the kernel socket round trip";
  std::string kernel_copy_by = "the kernel's copy to user space";
  double of(Scales s) const {
    return s == Scales::core ? core : s == Scales::syscall ? syscall : copy;
  }
};

// A's file, its costs carried to this host; the header says how.
// `k_clock` is this host's cycles per ns over A's in the fit's units
// (1 where its machine's clock_hz is 1e9: costs in ns); a machine file sets
// it from its own clock.
// A machine's L1 data cache (copy.l1d_bytes and l1d_ways) becomes this
// host's `l1d`; where this host's is not known, the model is left off.
std::string rescaled(const std::string& text, const fs::path& file, bool machine, double k_code,
                     const Factors& f, double this_clock_hz, double& k_clock,
                     const std::string& header, const std::string& note,
                     const support::L1dCache& l1d = {}) {
  YAML::Node doc;
  try {
    doc = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw UserError(fmt::format("calibrate host --from: {}: {}", file.string(), e.what()));
  }
  if (!doc.IsMap())
    throw UserError(fmt::format("calibrate host --from: {}: expected a map", file.string()));
  if (machine) {
    // Costs in ns (clock_hz 1e9) stay in ns; cycles follow the clock.
    const double a_clock = doc["clock_hz"] ? doc["clock_hz"].as<double>(0) : 0;
    if (a_clock <= 0)
      throw UserError(
          fmt::format("calibrate host --from: {}: clock_hz: expected a number", file.string()));
    k_clock = a_clock == 1e9 ? 1.0 : this_clock_hz / a_clock;
    if (a_clock != 1e9) doc["clock_hz"] = fmt::format("{:.0f}", this_clock_hz);
    // Only keys the file has: a non-const node's [] would add the others.
    const YAML::Node& view = doc;
    for (const auto& r : machine_rules()) {
      const auto dot = r.key.find('.');
      const std::string top = r.key.substr(0, dot);
      if (!view[top]) continue;
      if (dot == std::string::npos) {
        scale_node(doc[top], k_clock * f.of(r.by));
      } else if (view[top].IsMap() && view[top][r.key.substr(dot + 1)]) {
        scale_node(doc[top][r.key.substr(dot + 1)], k_clock * f.of(r.by));
      }
    }
    // Only where the source models the cache (l1d_bytes above 0; a fit
    // without --l1d writes none, the BSD one 0).
    if (view["copy"] && view["copy"].IsMap() && view["copy"]["l1d_bytes"] &&
        view["copy"]["l1d_bytes"].as<double>(0) > 0) {
      if (l1d.bytes > 0 &&
          models::L1dCopies::problem(l1d.bytes, l1d.ways, models::MachineCosts{}.line_bytes)
              .empty()) {
        doc["copy"]["l1d_bytes"] = l1d.bytes;
        doc["copy"]["l1d_ways"] = l1d.ways;
      } else {
        doc["copy"].remove("l1d_bytes");
        doc["copy"].remove("l1d_ways");
        doc["copy"].remove("l1d_miss_extra_cycles_per_byte");
      }
    }
    doc.remove("host");
  } else {
    const YAML::Node& view = doc;
    for (const char* section : {"functions", "alloc", "free"})
      if (view[section] && view[section].IsMap())
        for (auto it = doc[section].begin(); it != doc[section].end(); ++it)
          scale_node(it->second, k_clock * k_code);
    if (view["cksum_cycles_per_byte"]) scale_node(doc["cksum_cycles_per_byte"], k_clock * k_code);
  }
  if (doc["description"] && doc["description"].IsScalar())
    doc["description"] = doc["description"].as<std::string>() + note;
  YAML::Emitter out;
  out << doc;
  return header + out.c_str() + "\n";
}

}  // namespace

namespace {

// j[k] when it is a positive number, else 0 (a file of another shape
// included: its absence is said by the caller).
double positive_in(const nlohmann::json& j, const char* k) {
  if (!j.is_object() || !j.contains(k) || !j[k].is_number()) return 0;
  return std::max(0.0, j[k].get<double>());
}
// j[a][b], the same way.
double positive_at(const nlohmann::json& j, const char* a, const char* b) {
  return j.is_object() && j.contains(a) ? positive_in(j[a], b) : 0;
}

}  // namespace

double core_clock_mhz(const nlohmann::json& clock) {
  for (const char* k : {"measured_mhz_imul", "measured_mhz"})
    if (const double v = positive_in(clock, k); v > 0) return v;
  return 0;
}

double kernel_copy_ns_per_byte(const nlohmann::json& bench) {
  return positive_at(bench, "kernel_copy", "ns_per_byte");
}

double kernel_socket_work_ns(const nlohmann::json& bench) {
  const double trip = positive_at(bench, "kernel_socket", "cpu_ns");
  const double entry = positive_at(bench, "null_syscall", "cpu_ns");
  // A round trip is two system calls; what is left is the kernel's own code.
  return trip > 2 * entry && entry > 0 ? trip - 2 * entry : 0;
}

int host_rescale_cmd(const std::string& from, const std::string& scale, const fs::path& dir_in,
                     const std::string& out_given, const std::string& bench_file) {
  const fs::path a_dir = from;
  const fs::path a_bench_file = a_dir / "microbench.json";
  nlohmann::json a_bench, a_info;
  try {
    a_bench = nlohmann::json::parse(read_whole(a_bench_file));
    a_info = nlohmann::json::parse(read_whole(a_dir / "host.json"));
  } catch (const nlohmann::json::exception& e) {
    throw UserError(fmt::format("calibrate host --from: {}: {}", a_dir.string(), e.what()));
  }
  if (!a_bench.is_object() || !a_info.is_object())
    throw UserError(fmt::format(
        "calibrate host --from: {}: microbench.json and host.json must each hold a JSON object",
        a_dir.string()));
  // This host's microbenchmarks, the only thing measured here; or another
  // host's as its calibrate host recorded them (--bench), to check a carry
  // against that host's measured points.
  nlohmann::json bench;
  support::HostFacts facts;
  if (bench_file.empty()) {
    facts = support::this_host();
    bench = host_microbenchmarks(facts);
  } else {
    try {
      bench = nlohmann::json::parse(read_whole(bench_file));
      const auto& h = bench.at("host");
      facts.cpu = h.value("cpu", std::string());
      facts.clock_mhz = h.value("clock_mhz", 0.0);
      facts.kernel = h.value("kernel", std::string());
      facts.caches = h.value("caches", std::string());
    } catch (const nlohmann::json::exception& e) {
      throw UserError(fmt::format("calibrate host --bench {}: {}", bench_file, e.what()));
    }
    if (positive_at(bench, "clock", "measured_mhz_imul") <= 0 &&
        positive_at(bench, "clock", "measured_mhz") <= 0)
      number_at(bench, {"clock", "measured_mhz_imul"}, bench_file);
    number_at(bench, {"null_syscall", "cpu_ns"}, bench_file);
    memcpy_ns_per_byte(bench, bench_file);
  }
  const fs::path& dir = dir_in;
  std::error_code ec;
  if (fs::exists(dir, ec) && fs::exists(a_dir, ec) && fs::equivalent(dir, a_dir, ec))
    throw UserError(fmt::format(
        "calibrate host --from: {} is the profile being carried; name another place with -o",
        a_dir.string()));
  check_profile_dir(dir);

  Factors f;
  const std::string b_name = bench_file.empty() ? "this host" : bench_file;
  // The core's clock by the same chain on both sides: multiplies where both
  // have them (older files have adds only), adds otherwise, which a core
  // that folds them runs faster than any clock.
  const char* chain = positive_at(a_bench, "clock", "measured_mhz_imul") > 0 &&
                              positive_at(bench, "clock", "measured_mhz_imul") > 0
                          ? "measured_mhz_imul"
                          : "measured_mhz";
  const double a_speed = positive_at(a_bench, "clock", chain);
  const double b_speed = positive_at(bench, "clock", chain);
  const double a_mhz = number_at(a_bench, {"clock", "cpuinfo_mhz"}, a_bench_file);
  const double b_mhz = facts.clock_mhz > 0 ? facts.clock_mhz : b_speed;
  if (b_mhz <= 0)
    throw UserError(
        fmt::format("calibrate host --from: {}: no clock (cpuinfo or measured)", b_name));
  if (scale == "micro") {
    if (a_speed <= 0) number_at(a_bench, {"clock", chain}, a_bench_file);
    if (b_speed <= 0)
      throw UserError(
          fmt::format("calibrate host --from: {}: no measured clock ({})", b_name, chain));
    const double b_mul = positive_at(bench, "clock", "measured_mhz_imul");
    if (std::string(chain) == "measured_mhz" && b_mul > 0 && b_speed > 1.2 * b_mul)
      throw UserError(fmt::format(
          "calibrate host --from: {} has its core's clock from dependent adds only, and {} folds "
          "them (adds {:.0f} MHz against multiplies {:.0f}): the two cannot be compared; carry "
          "with --scale clock",
          a_bench_file.string(), b_name, b_speed, b_mul));
    f.core = a_speed / b_speed;
    f.syscall = bench["null_syscall"]["cpu_ns"].get<double>() /
                number_at(a_bench, {"null_syscall", "cpu_ns"}, a_bench_file);
    f.copy = memcpy_ns_per_byte(bench, b_name) / memcpy_ns_per_byte(a_bench, a_bench_file);
    const double a_kernel = kernel_socket_work_ns(a_bench), b_kernel = kernel_socket_work_ns(bench);
    if (a_kernel > 0 && b_kernel > 0) {
      f.kernel = b_kernel / a_kernel;
    } else {
      // Say which side lacks it, and how.
      auto lacks = [](const nlohmann::json& b, const std::string& name) {
        return positive_at(b, "kernel_socket", "cpu_ns") > 0
                   ? name + "'s round trip is no longer than its two system calls"
                   : name + " has no kernel socket round trip";
      };
      std::string why;
      if (a_kernel <= 0) why = lacks(a_bench, a_bench_file.string());
      if (b_kernel <= 0) why += (why.empty() ? "" : "; ") + lacks(bench, b_name);
      f.kernel = f.syscall;
      f.kernel_by = fmt::format("the null system call: {}", why);
    }
    const double a_copy = kernel_copy_ns_per_byte(a_bench), b_copy = kernel_copy_ns_per_byte(bench);
    if (a_copy > 0 && b_copy > 0) {
      f.kernel_copy = b_copy / a_copy;
    } else {
      f.kernel_copy = f.kernel;
      std::string why;
      if (a_copy <= 0) why = a_bench_file.string();
      if (b_copy <= 0) why += (why.empty() ? "" : " and ") + b_name;
      f.kernel_copy_by = fmt::format("the kernel code's factor: {} {} no kernel copy figure", why,
                                     a_copy <= 0 && b_copy <= 0 ? "have" : "has");
    }
  } else if (scale == "clock") {
    f.core = f.syscall = f.copy = f.kernel = f.kernel_copy = a_mhz / b_mhz;
    f.kernel_by = f.kernel_copy_by = "the cpuinfo clocks";
  } else {
    f.kernel_by = f.kernel_copy_by = "nothing";
  }
  auto text_at = [&](const char* k) {
    return a_info.contains(k) && a_info[k].is_string() ? a_info[k].get<std::string>()
                                                       : std::string("?");
  };
  const std::string a_fp = text_at("fingerprint");
  const std::string a_summary = text_at("summary");
  std::cout << fmt::format(
      "carrying host {} ({}) to this host {} ({}) by {}: ns here over ns there, core work x{:.3f}, "
      "system call x{:.3f}, copy per byte x{:.3f}, kernel code x{:.3f} (by {}), the kernel's copy "
      "per byte x{:.3f} (by {})\n",
      a_fp, a_summary, facts.fingerprint(), facts.summary(),
      scale == "micro"   ? "microbenchmarks"
      : scale == "clock" ? "the cpuinfo clocks"
                         : "nothing (A's costs as they are)",
      f.core, f.syscall, f.copy, f.kernel, f.kernel_by, f.kernel_copy, f.kernel_copy_by);

  const std::string date =
      fmt::format("{:%Y-%m-%dT%H:%M:%SZ}",
                  std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now()));
  const std::string header = fmt::format(
      "# Carried by simloop calibrate host --from {} --scale {} ({}).\n"
      "# Measured on host {}: {}\n"
      "# Priced for host {}: {}\n"
      "# by {} (ns here over ns there): core work x{:.4f}, system call x{:.4f},\n"
      "# copy per byte x{:.4f}, kernel code x{:.4f} (by {}),\n"
      "# the kernel's copy per byte x{:.4f} (by {}). Nothing of the stacks\n"
      "# was measured here. The notes\n"
      "# of the measured files (what was not determined, what is inlined) are in\n"
      "# their copies under the directory carried from.\n",
      config::printable(a_dir.string(), 200), scale, date, a_fp, config::printable(a_summary, 200),
      facts.fingerprint(), facts.summary(),
      scale == "micro"   ? "its microbenchmarks only"
      : scale == "clock" ? "the two cpuinfo clocks only"
                         : "nothing: the measured host's ns as they were",
      f.core, f.syscall, f.copy, f.kernel, f.kernel_by, f.kernel_copy, f.kernel_copy_by);
  const std::string carried_note =
      fmt::format(" (carried from host {} by --scale {})", a_fp, scale);
  std::vector<std::pair<std::string, std::string>> files;
  int profiles = 0;
  for (const std::string fit : {"host-linux", "host-bsd"}) {
    const fs::path m = a_dir / (fit + "-machine.yaml"), s = a_dir / (fit + "-stack.yaml"),
                   x = a_dir / (fit + ".yaml");
    if (!support::input_problem(m).empty() || !support::input_problem(s).empty()) continue;
    double k_clock = 1;  // the machine's, then its stack's
    // The Linux stack's functions are this kernel's code; the BSD stack's
    // run in user space, natively.
    const bool kernel = fit == "host-linux";
    const double k_code = kernel ? f.kernel : f.core;
    Factors fit_f = f;
    if (kernel) fit_f.copy = f.kernel_copy;
    files.emplace_back(
        m.filename().string(),
        with_host_facts(rescaled(read_whole(m), m, true, k_code, fit_f, b_mhz * 1e6, k_clock,
                                 header, carried_note, support::l1d_in(facts.caches)),
                        facts, date.substr(0, 4)));
    files.emplace_back(s.filename().string(), rescaled(read_whole(s), s, false, k_code, f,
                                                       b_mhz * 1e6, k_clock, header, carried_note));
    if (support::input_problem(x).empty()) files.emplace_back(x.filename().string(), read_whole(x));
    ++profiles;
  }
  if (profiles == 0)
    throw UserError(fmt::format(
        "calibrate host --from: {} has no host-linux or host-bsd machine and stack to carry",
        a_dir.string()));
  files.emplace_back("microbench.json", bench.dump(1) + "\n");
  nlohmann::json info = host_facts_json(facts);
  info["date"] = date;
  info["simloop"] = SIMLOOP_VERSION;
  info["carried_from"] = {{"dir", a_dir.string()},
                          {"fingerprint", a_fp},
                          {"summary", a_summary},
                          {"scale", scale},
                          {"core", f.core},
                          {"syscall", f.syscall},
                          {"copy", f.copy},
                          {"kernel", f.kernel},
                          {"kernel_by", f.kernel_by},
                          {"kernel_copy", f.kernel_copy},
                          {"kernel_copy_by", f.kernel_copy_by}};
  info["summary"] = facts.summary();
  info["fingerprint"] = facts.fingerprint();
  const bool has_linux = std::any_of(
      files.begin(), files.end(), [](const auto& x) { return x.first == "host-linux-stack.yaml"; });
  info["names"] = host_profile_names(has_linux);
  files.emplace_back("host.json", info.dump(1) + "\n");
  // In the hosts directory (simloop's own) the carried profile replaces
  // the one before whole; -o DIR is the user's.
  write_host_profile(dir, files, out_given.empty());
  std::cout << fmt::format("wrote {} files into {}{}\n", files.size(), dir.string(),
                           out_given.empty() ? " (machine: host now names them)" : "");
  return 0;
}

}  // namespace simloop::cli
