// simloop calibrate host: prices this machine in one command. It takes a
// few microbenchmarks, measures this kernel's UDP path under perf (as root)
// and the BSD stack natively, each function by function, fits both with
// calibrate's own fits (simloop run as a child, as a user would), and
// writes the profiles, the measured rows and the microbenchmarks into one
// directory per host, which `machine: host` and `stack: host-linux` /
// `stack: host-bsd` then name (sim/config/host_profiles.h).
#include <fmt/chrono.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "sim/config/host_profiles.h"
#include "sim/report/safe_file.h"
#include "sim/support/host.h"
#include "sim/support/text.h"
#include "sim/support/yaml_input.h"
#include "sim/tools/cli/commands.h"
#include "sim/tools/cli/host_rescale.h"
#include "sim/tools/measure/kernel.h"
#include "sim/tools/measure/kernel_split.h"
#include "sim/tools/measure/native.h"
#include "sim/tools/measure/programs.h"
#include "version.h"

namespace simloop::cli {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

// What the Linux profile of configs/machines/linux-epyc-machine.yaml was
// trained on (experiments/validation/linux/measure.sh), and a few payloads
// held out between and beyond them.
constexpr const char* kKernelTrain = "18,256,1472,12000,40000";
constexpr const char* kKernelHeldOut = "64,512,1024,6000,24000";
// The native validation's paths and payloads (experiments/validation/run.sh).
constexpr const char* kNativePaths =
    "loopback/none/m_copy,loopback/copy-down/m_copy,broadcast/none/m_copy,"
    "broadcast/none/m_dup,broadcast/copy-down/m_copy,broadcast/copy-down/m_dup,wire/none/m_copy,"
    "wire/copy-down/m_copy,self/none/m_copy,self/copy-down/m_copy,loopback/none/m_copy/2,"
    "loopback/none/m_copy/0/send-only,self/none/m_copy/0/send-only,loopback/none/m_copy/0/full/2";
// Copy-down moves a received packet's headers to an aligned place only
// where they arrive misaligned, and with the stack's default 16 bytes of
// link header space they seldom do (at 300 B no path copies down). So the
// paths where it acts (those that receive) are measured once more with 14
// bytes, which misaligns the IP header: 10 to 29 % dearer at 300 B on the
// Intel guest of experiments/validation/hosts, where 16 changed nothing.
constexpr const char* kNativeMisalignedPaths =
    "loopback/copy-down/m_copy,broadcast/copy-down/m_copy,broadcast/copy-down/m_dup,"
    "self/copy-down/m_copy";
constexpr int kMisaligningLinkhdr = 14;
constexpr const char* kNativeTrain = "18,128,160,512,1400";
constexpr const char* kNativeHeldOut = "1,40,64,100,150,180,200,240,300,700,900,1000,1300,1472";

struct HostArgs {
  std::string dir;  // empty: the user's hosts directory, by fingerprint
  int64_t kernel_packets = 100000;
  int kernel_repeats = 5;
  int64_t native_packets = 2000;
  int native_repeats = 10;
  int bootstrap = 100;
  bool skip_kernel = false;
  bool l1d = false;  // the Linux fit with the L1d the copies see (calibrate --l1d)
  std::string perf = "perf";
  std::string from;  // --from: carry that host profile here instead of measuring
  std::string scale = "micro";
  std::string bench;  // --bench: a recorded microbench.json in place of this host's
};

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

// A fitted machine file made this host's: `costs: measured`, the year, and
// the host's facts (caches included, so that its fingerprint is this_host's)
// in place of whatever host map the fit wrote.
std::string with_host_facts(const std::string& text, const support::HostFacts& h,
                            const std::string& year) {
  std::istringstream in(text);
  std::string line, out;
  bool in_host = false, costs = false, has_year = false;
  while (std::getline(in, line)) {
    if (in_host && (line.empty() || line[0] == ' ' || line[0] == '#')) continue;
    in_host = line.starts_with("host:");
    if (in_host) continue;
    if (line.starts_with("costs:")) {
      line = "costs: measured";
      costs = true;
    }
    if (line.starts_with("year:")) {
      line = "year: " + year;
      has_year = true;
    }
    if (line.starts_with("clock_hz:")) {
      if (!costs) out += "costs: measured\n";
      if (!has_year) out += "year: " + year + "\n";
      costs = has_year = true;
    }
    out += line + "\n";
  }
  out += fmt::format(
      "host:  # what the costs were measured on (simloop calibrate host): a run on another host "
      "warns\n  cpu: {}\n  clock_mhz: {:.2f}\n  kernel: {}\n  caches: {}\n",
      support::yaml_quoted(h.cpu), h.clock_mhz, support::yaml_quoted(h.kernel),
      support::yaml_quoted(h.caches));
  return out;
}

void check_profile_dir(const fs::path& dir) {
  std::error_code e;
  const auto st = fs::symlink_status(dir, e);
  if (fs::is_symlink(st))
    throw UserError(
        fmt::format("calibrate host: {} is a symbolic link; simloop writes no "
                    "profile through one",
                    config::printable(dir.string(), 200)));
  if (fs::exists(st) && !fs::is_directory(st))
    throw UserError(
        fmt::format("calibrate host: {} is not a directory", config::printable(dir.string(), 200)));
}

std::vector<std::string> host_profile_names(bool has_linux) {
  if (has_linux)
    return {"machine: host (host-linux-machine.yaml)", "machine: host-linux", "stack: host-linux",
            "machine: host-bsd", "stack: host-bsd"};
  return {"machine: host (host-bsd-machine.yaml)", "machine: host-bsd", "stack: host-bsd"};
}

void write_host_profile(const fs::path& dir,
                        const std::vector<std::pair<std::string, std::string>>& files,
                        bool replace_whole) {
  check_profile_dir(dir);
  report::write_files_atomic(dir, files);
  if (!replace_whole) return;
  check_profile_dir(dir);
  std::error_code ec;
  std::vector<fs::path> stale;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const bool ours = name.starts_with("host-") || name.starts_with("kernel-split") ||
                      name.starts_with("native-split");
    if (ours && fs::is_regular_file(fs::symlink_status(it->path(), ec)) &&
        std::none_of(files.begin(), files.end(), [&](const auto& f) { return f.first == name; }))
      stale.push_back(it->path());
  }
  for (const auto& p : stale) fs::remove(p, ec);
}

namespace {

class Progress {
 public:
  explicit Progress(int steps) : steps_(steps), t0_(Clock::now()) {}
  void start(const std::string& what) {
    step_t0_ = Clock::now();
    std::cout << fmt::format("[{}/{} {:6.1f} s] {} ...\n", ++n_, steps_, seconds_since(t0_), what)
              << std::flush;
  }
  void done(const std::string& what) {
    std::cout << fmt::format("[{}/{} {:6.1f} s] {} ({:.1f} s)\n", n_, steps_, seconds_since(t0_),
                             what, seconds_since(step_t0_))
              << std::flush;
  }
  double elapsed() const { return seconds_since(t0_); }

 private:
  int steps_, n_ = 0;
  Clock::time_point t0_, step_t0_;
};

// simloop itself as a child (-q: warnings only), stdout to `out`, stderr to
// `err`; a failure is a UserError quoting the end of `err`.
void run_simloop(const std::vector<std::string>& args, const fs::path& err,
                 const fs::path& out = {}) {
  std::vector<std::string> argv = {"/proc/self/exe", "-q"};
  argv.insert(argv.end(), args.begin(), args.end());
  try {
    measure::run_program(argv, err, out);
  } catch (const measure::Stopped& e) {
    // To the command's end, removing the stage on the way.
    throw measure::Stopped(fmt::format("calibrate host: {}; nothing was written", e.what()),
                           e.signal);
  } catch (const std::runtime_error& e) {
    throw UserError(fmt::format("calibrate host: {}", e.what()), 1);
  }
}

std::string read_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// The lines of a calibrate's report that say how well it fits: the
// summaries, not every point.
void print_summary_lines(const fs::path& report, const std::vector<std::string>& starts) {
  std::ifstream f(report);
  std::string line;
  while (std::getline(f, line))
    for (const auto& s : starts)
      if (line.starts_with(s)) {
        std::cout << "    " << line << "\n";
        break;
      }
}

// The Linux fit's error on its training and held-out points, per path
// (calibrate prints every point; this is the gist).
void print_kernel_errors(const fs::path& fit_json) {
  try {
    const auto j = nlohmann::json::parse(read_text(fit_json));
    std::map<std::string, std::vector<double>> errors;
    for (const auto& q : j.at("points")) {
      const double meas = q.at("measured_cpu_ns"), pred = q.at("predicted_ns");
      errors[fmt::format("{} {}", q.at("set").get<std::string>(), q.at("path").get<std::string>())]
          .push_back(100 * (pred - meas) / meas);
    }
    if (j.value("time_base", "") == "plain")
      std::cout << fmt::format(
          "    time: the loop's CPU time with perf off (perf's own sampled time {:+.1f} % over "
          "it)\n",
          100 * (j.value("perf_over_plain", 1.0) - 1));
    for (auto& [group, e] : errors) {
      std::sort(e.begin(), e.end(), [](double x, double y) { return std::abs(x) < std::abs(y); });
      std::cout << fmt::format("    {:<24} {} point(s): median |error| {:.1f} %, worst {:+.1f} %\n",
                               group, e.size(), std::abs(e[(e.size() - 1) / 2]), e.back());
    }
  } catch (const std::exception& e) {
    std::cout << fmt::format("    (cannot read {}: {})\n", fit_json.string(), e.what());
  }
}

int host_cmd(const HostArgs& a) {
  const auto facts = support::this_host();
  const std::string fp = facts.fingerprint();
  if (!a.bench.empty() && a.dir.empty())
    throw UserError(
        "calibrate host --bench: name where the carried profile goes with -o DIR (it is priced "
        "for the host that file describes, not for this one)");
  fs::path dir = a.dir;
  if (dir.empty()) {
    const fs::path root = config::hosts_dir();
    if (root.empty())
      throw UserError(
          "calibrate host: neither XDG_DATA_HOME nor HOME is set; name the directory "
          "with -o DIR");
    dir = root / fp;
  }
  if (a.skip_kernel && a.l1d)
    throw UserError("calibrate host: --l1d fits the Linux stack, which --skip-kernel leaves out");
  if (!a.from.empty() && a.l1d)
    throw UserError(
        "calibrate host: --l1d fits what this host measures; --from carries a profile as it was "
        "fitted (its L1d, if it has one, becomes this host's)");
  if (!a.from.empty()) return host_rescale_cmd(a.from, a.scale, dir, a.dir, a.bench);
  if (!a.bench.empty()) throw UserError("calibrate host: --bench goes with --from");
  // A directory of its own, made again in place; never through a link:
  // looked at now, and again before anything is written into it or removed
  // from it, minutes of measuring later.
  std::error_code ec;
  check_profile_dir(dir);
  const auto started = std::chrono::system_clock::now();
  const std::string date =
      fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", std::chrono::floor<std::chrono::seconds>(started));
  const std::string year = date.substr(0, 4);

  std::string kernel_skip;
  if (a.skip_kernel)
    kernel_skip = "--skip-kernel";
  else
    kernel_skip = measure::perf_unavailable(a.perf);
  const bool kernel = kernel_skip.empty();
  Progress progress(kernel ? 5 : 3);
  std::cout << fmt::format("pricing host {} ({}) into {}\n", fp, facts.summary(), dir.string());
  std::cout << fmt::format("load average before: {}\n", fmt::join(host_loadavg(), " "));

  measure::TempDir stage("simloop-host");
  const fs::path s = stage.path;
  std::vector<std::pair<std::string, std::string>> files;

  progress.start(
      "microbenchmarks: clock, null system call, a kernel socket round trip, the kernel's copy, "
      "memcpy 64 B-64 KiB, caches");
  auto bench = host_microbenchmarks(facts);
  const double adds = bench["clock"]["measured_mhz"].get<double>();
  const double core = core_clock_mhz(bench["clock"]);
  progress.done(fmt::format(
      "clock {:.0f} MHz (dependent multiplies; cpuinfo {:.0f}; adds {:.0f}{}), null system call "
      "{:.1f} ns, AF_UNIX round trip {:.1f} ns, the kernel's copy {:.4f} ns/B, memcpy 1 KiB {:.1f} "
      "ns",
      core, facts.clock_mhz, adds,
      adds > 1.2 * core ? ": this core folds dependent adds, so they do not count cycles" : "",
      bench["null_syscall"]["cpu_ns"].get<double>(),
      bench.contains("kernel_socket") ? bench["kernel_socket"]["cpu_ns"].get<double>() : 0.0,
      bench.contains("kernel_copy") ? bench["kernel_copy"]["ns_per_byte"].get<double>() : 0.0,
      bench["memcpy"][2]["ns"].get<double>()));

  // The core's clock again after each measuring step: a guest's turbo moves
  // it by up to a fifth between runs minutes apart on an AMD guest, and the
  // points measured move with it, so a run says whether it held still.
  auto clock_after = [&bench](const char* step) {
    bench["clock"]["during"].push_back(
        {{"after", step}, {"measured_mhz_imul", core_clock_now_mhz()}});
  };
  clock_after("microbenchmarks");
  std::vector<std::string> skipped;
  bool kernel_done = false;
  if (kernel) try {
      progress.start(
          fmt::format("Linux: measure kernel --split, unconnected and connected, payloads {},{} "
                      "({} packets x {} repeats)",
                      kKernelTrain, kKernelHeldOut, a.kernel_packets, a.kernel_repeats));
      run_simloop(
          {"measure", "kernel", "--split", "--perf", a.perf, "--path", "unconnected,connected",
           "-l", fmt::format("{},{}", kKernelTrain, kKernelHeldOut), "-n",
           std::to_string(a.kernel_packets), "-r", std::to_string(a.kernel_repeats), "--format",
           "csv", "-o", (s / "kernel-split.csv").string()},
          s / "kernel-split.log");
      progress.done("measured kernel-split.csv");
      clock_after("measure kernel");
      progress.start(
          fmt::format("Linux: calibrate --source linux --train path=unconnected "
                      "--train payload={}{}",
                      kKernelTrain, a.l1d ? " --l1d" : ""));
      std::vector<std::string> fit = {"calibrate", (s / "kernel-split.csv").string(),
                                      "--source",  "linux",
                                      "-o",        s.string(),
                                      "--name",    "host-linux",
                                      "--train",   "path=unconnected",
                                      "--train",   std::string("payload=") + kKernelTrain};
      if (a.l1d) fit.emplace_back("--l1d");
      run_simloop(fit, s / "host-linux-calibrate.log", s / "host-linux-calibrate.txt");
      progress.done("fitted host-linux");
      kernel_done = true;
    } catch (const UserError& e) {
      // perf can be there and still be refused (perf_event_open in a
      // container): the BSD half goes on, and the Linux files are left out.
      kernel_skip = e.what();
    }
  if (!kernel_done) {
    skipped.push_back("the Linux stack (measure kernel --split): " + kernel_skip);
    std::cout << fmt::format("skipped the Linux stack: {}\n", kernel_skip);
    for (const char* f :
         {"kernel-split.csv", "kernel-split.csv.machine.json", "kernel-split.log",
          "host-linux-calibrate.log", "host-linux-calibrate.txt", "host-linux-fit.json",
          "host-linux.yaml", "host-linux-machine.yaml", "host-linux-stack.yaml"})
      fs::remove(s / f, ec);
  }

  progress.start(
      fmt::format("BSD: measure native --split, the validation's 14 paths, payloads {},{} "
                  "({} packets x {} repeats)",
                  kNativeTrain, kNativeHeldOut, a.native_packets, a.native_repeats));
  auto measure_native = [&](const char* paths, int linkhdr, const fs::path& csv) {
    run_simloop({"measure", "native", "--split", "--path", paths, "--max-linkhdr",
                 std::to_string(linkhdr), "-l", fmt::format("{},{}", kNativeTrain, kNativeHeldOut),
                 "-n", std::to_string(a.native_packets), "--warmup",
                 std::to_string(std::min<int64_t>(1000, a.native_packets)), "-r",
                 std::to_string(a.native_repeats), "--format", "csv", "-o", csv.string()},
                fs::path(csv).replace_extension(".log"), "/dev/null");
  };
  measure_native(kNativePaths, measure::NativeOptions{}.stack.max_linkhdr, s / "native-split.csv");
  // The copy-down paths again where copy-down acts, in a file of their
  // own (each row says its max_linkhdr, which the fit reads); the fit and
  // the comparison take both files.
  const fs::path misaligned = s / "native-split-misaligned.csv";
  measure_native(kNativeMisalignedPaths, kMisaligningLinkhdr, misaligned);
  clock_after("measure native");
  progress.done(
      fmt::format("measured native-split.csv, and native-split-misaligned.csv: the copy-down "
                  "paths at max_linkhdr {}, where the IP header arrives misaligned",
                  kMisaligningLinkhdr));
  progress.start(
      fmt::format("BSD: calibrate --source native --stat min --train payload={}", kNativeTrain));
  run_simloop({"calibrate", (s / "native-split.csv").string(), misaligned.string(), "--source",
               "native", "--stat", "min", "--bootstrap", std::to_string(a.bootstrap), "-o",
               s.string(), "--name", "host-bsd", "--train", std::string("payload=") + kNativeTrain},
              s / "host-bsd-calibrate.log", s / "host-bsd-calibrate.txt");
  run_simloop({"compare", (s / "host-bsd-fit.json").string(), (s / "native-split.csv").string(),
               misaligned.string()},
              s / "host-bsd-compare.log", s / "host-bsd-compare.txt");
  progress.done("fitted host-bsd");

  bench["loadavg_after"] = host_loadavg();
  std::string clock_warning;
  {
    double lo = core, hi = core;
    for (const auto& c : bench["clock"]["during"]) {
      lo = std::min(lo, c["measured_mhz_imul"].get<double>());
      hi = std::max(hi, c["measured_mhz_imul"].get<double>());
    }
    if (lo > 0 && hi > 1.05 * lo)
      clock_warning = fmt::format(
          "the core's clock moved from {:.0f} to {:.0f} MHz during the run ({:+.1f} %; a guest's "
          "turbo or a busy neighbour): the points measured move with it, so another run may "
          "differ by as much; run it again and compare (microbench.json: clock.during)",
          lo, hi, 100 * (hi / lo - 1));
  }
  for (const auto& e : fs::directory_iterator(s)) {
    if (!e.is_regular_file(ec) || e.is_symlink(ec)) continue;
    const std::string name = e.path().filename().string();
    if (name.ends_with(".log") && fs::file_size(e.path(), ec) == 0) continue;
    std::string text = read_text(e.path());
    // The files name each other where they end up, not where they were made.
    for (size_t at = 0; (at = text.find(s.string(), at)) != std::string::npos;) {
      text.replace(at, s.string().size(), dir.string());
      at += dir.string().size();
    }
    if (name.ends_with("-machine.yaml")) text = with_host_facts(text, facts, year);
    files.emplace_back(name, std::move(text));
  }
  files.emplace_back("microbench.json", bench.dump(1) + "\n");
  const double wall = progress.elapsed();
  nlohmann::json info = host_facts_json(facts);
  info["date"] = date;
  info["simloop"] = SIMLOOP_VERSION;
  info["wall_s"] = wall;
  info["skipped"] = skipped;
  info["loadavg_before"] = bench["loadavg_before"];
  info["loadavg_after"] = bench["loadavg_after"];
  info["names"] = host_profile_names(kernel_done);
  files.emplace_back("host.json", info.dump(1) + "\n");
  write_host_profile(dir, files, a.dir.empty());
  std::cout << fmt::format("load average after: {}\n", fmt::join(host_loadavg(), " "));
  if (kernel_done) {
    std::cout << "Linux fit (" << (dir / "host-linux-calibrate.txt").string() << "):\n";
    print_summary_lines(s / "host-linux-calibrate.txt", {"linux fit on"});
    print_kernel_errors(s / "host-linux-fit.json");
  }
  std::cout << "BSD fit (" << (dir / "host-bsd-compare.txt").string() << "):\n";
  print_summary_lines(s / "host-bsd-compare.txt", {"train ", "validation "});
  std::cout << fmt::format("wrote {} files into {}\n", files.size(), dir.string());
  if (!skipped.empty())
    for (const auto& w : skipped) std::cout << "skipped: " << w << "\n";
  if (!clock_warning.empty()) spdlog::warn("{}", clock_warning);
  std::cout << fmt::format(
      "experiments name them as machine: host{}, stack: host-bsd (machine: host-bsd); "
      "try simloop run {}\n",
      kernel_done ? " with stack: host-linux" : "",
      (dir / (kernel_done ? "host-linux.yaml" : "host-bsd.yaml")).string());
  std::cout << fmt::format("wall time: {:.1f} s\n", progress.elapsed());
  return 0;
}

}  // namespace

void add_measure_microbench(CLI::App& measure, std::vector<Command>& commands) {
  auto out = std::make_shared<std::string>();
  auto* mb = measure.add_subcommand(
      "microbench",
      "This host's microbenchmarks, as calibrate host records them (about a second): the\n"
      "clock (cpuinfo's, and chains of dependent multiplies and adds), a null system call,\n"
      "a 64 B round trip through an AF_UNIX datagram socketpair (the kernel's own code),\n"
      "the kernel's copy to user space (pread of 256 B and 4 KiB from a memfd), memcpy\n"
      "from 64 B to 64 KiB, the caches from sysfs, the load before and after. Prints\n"
      "microbench.json, or writes it to -o FILE: what calibrate host --from FILE's host\n"
      "scales by, recorded beside a measurement so that its host can be a source later.");
  mb->add_option("-o,--output", *out, "Write the JSON here instead of standard output");
  commands.push_back({mb, [out] {
                        const std::string text =
                            host_microbenchmarks(support::this_host()).dump(1) + "\n";
                        if (out->empty()) {
                          std::cout << text;
                          return 0;
                        }
                        report::write_file_atomic(*out, text);
                        spdlog::info("wrote {}", *out);
                        return 0;
                      }});
}

void add_calibrate_host(CLI::App& calibrate, std::vector<Command>& commands) {
  auto a = std::make_shared<HostArgs>();
  auto* host = calibrate.add_subcommand(
      "host",
      "Price this machine in one command (one to three minutes): microbenchmarks (clock, null\n"
      "system call, a kernel socket round trip, the kernel's copy, memcpy, caches), this\n"
      "kernel's UDP path under perf (as root, with perf; else skipped, saying why), the BSD\n"
      "stack natively, each function by function, and both fitted as calibrate fits them.\n"
      "A stop (Ctrl-C, SIGTERM) ends the measurement under way and writes nothing. Writes a\n"
      "host profile (machine, stacks, experiments, the measured CSVs, microbench.json,\n"
      "host.json) into\n"
      "$XDG_DATA_HOME/simloop/hosts/FINGERPRINT (default ~/.local/share/...), where\n"
      "`machine: host`, `stack: host-linux` and `stack: host-bsd` find it.");
  host->add_option("-o,--output-dir", a->dir,
                   "Write the profile here instead (names in experiments do not find it)");
  host->add_option("--kernel-packets", a->kernel_packets, "measure kernel: datagrams per payload")
      ->check(CLI::Range(int64_t{1}, int64_t{100000000}))
      ->capture_default_str();
  host->add_option("--kernel-repeats", a->kernel_repeats, "measure kernel: repeats")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  host->add_option("--native-packets", a->native_packets, "measure native: datagrams per repeat")
      ->check(CLI::Range(int64_t{1}, int64_t{100000000}))
      ->capture_default_str();
  host->add_option("--native-repeats", a->native_repeats, "measure native: repeats")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  host->add_option("--bootstrap", a->bootstrap, "The BSD fit's resamples (calibrate --bootstrap)")
      ->check(CLI::Range(0, 100000))
      ->capture_default_str();
  host->add_flag("--skip-kernel", a->skip_kernel, "Leave out the Linux stack (measure kernel)");
  host->add_flag("--l1d", a->l1d,
                 "Fit the Linux stack with the L1 data cache its copies see (calibrate --l1d):\n"
                 "on the host measured, closer at 3-14 KB and past 28 KB, farther at 16-24 KB\n"
                 "and 4-6 points higher at small payloads (hosts.md, section 1a)");
  host->add_option("--perf", a->perf, "The perf program")->capture_default_str();
  host->add_option("--from", a->from,
                   "Measure nothing of the stacks: carry the host profile in this directory\n"
                   "(another host's calibrate host output) to this host by this host's\n"
                   "microbenchmarks alone (a second or so), and write it as this host's");
  host->add_option("--scale", a->scale,
                   "With --from: micro (each cost by the microbenchmark that stands for it: the\n"
                   "core's clock for user-space work, the null system call for entry and exit,\n"
                   "memcpy per byte for the BSD stack's copies, the kernel's own copy to user\n"
                   "space for the Linux stack's, the kernel's AF_UNIX round trip for the Linux\n"
                   "stack's functions), clock (by the cpuinfo clocks alone) or none (the costs as\n"
                   "measured there)")
      ->check(CLI::IsMember({"micro", "clock", "none"}))
      ->capture_default_str();
  host->add_option("--bench", a->bench,
                   "With --from: take this microbench.json (another host's, as its calibrate\n"
                   "host recorded it) as this host's, to check a carry against the points\n"
                   "measured there (give -o too)");
  commands.push_back({host, [a] { return host_cmd(*a); }});
}

}  // namespace simloop::cli
