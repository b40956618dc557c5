// simloop speed: how fast the simulator is, against the real code it runs
// and against itself as runs grow.
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/personality.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/engine/simulation.h"
#include "sim/report/safe_file.h"
#include "sim/tools/cli/child.h"
#include "sim/tools/cli/commands.h"
#include "sim/tools/measure/native.h"
#include "sim/tools/sweep/runner.h"

namespace simloop::cli {

namespace fs = std::filesystem;

namespace {

std::string icache_cost(const config::Experiment& x, const std::vector<std::string>& sets);

struct Case {
  std::string name;
  fs::path file;
  std::vector<std::string> sets;
};

struct Timing {
  double ns_per_packet = 0;      // wall time
  double cpu_ns_per_packet = 0;  // CPU time of the process that ran it
  int64_t packets = 0;
  double rss_mb = 0;
  std::string outcome;
};

double process_cpu_s() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// One simulation in a child process (SimGrid keeps global state): its wall
// and CPU time per packet, and the child's peak resident memory. `packets`
// > 0 replaces the experiment's packets or duration.
Timing time_in_child(const Case& c, int64_t packets) {
  const ChildResult child = json_from_child([&c, packets] {
    auto sets = c.sets;
    if (packets > 0) {
      sets.push_back(fmt::format("workload.packets={}", packets));
      sets.push_back("workload.duration_s=0");
    }
    const config::Experiment x = config::load_experiment(c.file, sets);
    engine::route_simgrid_log_to_spdlog();
    const double cpu0 = process_cpu_s();
    const engine::SimResult r = engine::simulate(x);
    const double cpu_s = process_cpu_s() - cpu0;
    return nlohmann::json{
        {"wall_s", r.wall_s}, {"cpu_s", cpu_s}, {"packets", r.packets}, {"outcome", r.outcome}};
  });
  Timing t;
  t.rss_mb = static_cast<double>(child.usage.ru_maxrss) / 1024.0;
  if (!child.doc) {
    t.outcome = "crashed";
    return t;
  }
  const nlohmann::json& j = *child.doc;
  if (j.contains("error"))
    throw UserError(fmt::format("{}: {}", c.name, j["error"].get<std::string>()));
  t.outcome = j["outcome"];
  t.packets = j["packets"].get<int64_t>();
  if (t.packets > 0) {
    const auto n = static_cast<double>(t.packets);
    t.ns_per_packet = j["wall_s"].get<double>() * 1e9 / n;
    t.cpu_ns_per_packet = j["cpu_s"].get<double>() * 1e9 / n;
  }
  return t;
}

// One native run of the experiment's stack on `packets` packets.
Timing time_native(const config::Experiment& x, int64_t packets) {
  measure::NativeOptions n;
  n.payload = x.workload.payload;
  n.packets = packets;
  n.path = config::path_of(x);
  n.path.service = workload::Service::drained;  // each packet's whole path, natively
  const auto r = measure::run_native(n, config::stack_of(x), x.options, x.stack_options).front();
  if (r.packets == 0)
    throw std::runtime_error(fmt::format("speed: the native run sent no packets{}",
                                         r.fault.empty() ? "" : ": " + r.fault));
  Timing t;
  t.packets = r.packets;
  t.ns_per_packet = r.ns_per_packet();
  t.cpu_ns_per_packet = r.cpu_ns_per_packet();
  t.outcome = r.fault;
  return t;
}

struct Spread {
  double median = 0, min = 0, max = 0;
};

Spread spread_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  if (n == 0) return {};
  const double median = n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  return {median, v.front(), v.back()};
}

// Packets for a run of at least `min_s` seconds at `ns` per packet, rounded
// up to two significant digits, and never fewer than `floor`.
int64_t packets_for(double min_s, double ns, int64_t floor) {
  if (ns <= 0) return floor;
  auto n = static_cast<int64_t>(std::ceil(min_s * 1e9 / ns));
  int64_t unit = 1;
  while (n / unit >= 100) unit *= 10;
  n = (n + unit - 1) / unit * unit;
  return std::max(n, floor);
}

// Whether most rounds agree: more than half of the ratios within 3 % of
// their median. On a quiet machine most do; while something outside the
// guest keeps the host busy for a few seconds, the two sides slow down by
// different amounts and the rounds scatter by 20 % or more.
bool rounds_agree(const std::vector<double>& ratios) {
  const double m = spread_of(ratios).median;
  const auto near = std::count_if(ratios.begin(), ratios.end(),
                                  [m](double r) { return std::abs(r / m - 1) <= 0.03; });
  return 2 * static_cast<size_t>(near) > ratios.size();
}

struct SpeedOptions {
  int rounds = 7;
  double min_time_s = 0.25;
  bool randomize_layout = false;  // main() acts on it: here it only names it in --help
};

// Whether this process's address space is laid out the same in every run
// (main() turns the randomization off for `speed` and starts again).
bool layout_fixed() {
  const int persona = ::personality(0xffffffff);
  return persona != -1 && (static_cast<unsigned>(persona) & ADDR_NO_RANDOMIZE) != 0;
}

// The same stack natively and simulated, in rounds, each round a native run
// in this process (which never sets SimGrid up) and then a simulation in a
// process of its own (SimGrid is set up once per process).
//
// Figures are CPU time per packet: the machine is shared, and wall time
// counts the time slices other processes got (a ~10 ms run preempted once
// loses a 4 ms slice: that is what moved the old one-shot native figure
// between 50 and 72 ns). Each run lasts `min_time_s` of CPU time or more,
// its packet count chosen from a short untimed run of each side first. That
// first run is also the warm-up: the first native run of a process is up
// to 15% slower than the next (no page faults to speak of, ~25 either way:
// cold caches and branch predictors), and a short simulation pays the
// engine's set-up (about 1 ms) over few packets; with them done, the first
// timed round is no slower than the others, so no round is dropped. The
// ratio is the median of the rounds' own ratios, each round's two runs
// being close in time.
int native_vs_simulated(const std::string& file, const std::vector<std::string>& sets,
                        const SpeedOptions& o) {
  const config::Experiment x = load_user_experiment(file, sets);
  const Case sim{x.name, x.source, sets};
  constexpr int64_t kNativePilot = 100000, kSimPilot = 50000;
  const Timing pilot_native = time_native(x, kNativePilot);
  const Timing pilot_sim = time_in_child(sim, kSimPilot);
  if (pilot_sim.packets == 0)
    throw std::runtime_error(
        fmt::format("speed: the simulation sent no packets ({})", pilot_sim.outcome));
  const int64_t native_n = packets_for(o.min_time_s, pilot_native.cpu_ns_per_packet, 1000);
  const int64_t sim_n = packets_for(o.min_time_s, pilot_sim.cpu_ns_per_packet, 1000);

  std::cout << fmt::format("experiment {}: {} B to {}, the {} stack\n", x.name, x.workload.payload,
                           config::dest_name(x.workload.dest), x.stack.fns->stack());
  std::cout << fmt::format(
      "  {} rounds, each the native stack on {} packets in this process, then the simulation\n"
      "  of {} packets in a process of its own (each run about {} s of CPU time, sized by an\n"
      "  untimed short run of each first; more rounds, up to {}, while most disagree); CPU\n"
      "  time per packet, wall time after it\n",
      o.rounds, native_n, sim_n, o.min_time_s, 3 * o.rounds);
  std::cout
      << (layout_fixed()
              ? "  address space laid out the same in every run (laid out at random, the native\n"
                "  figure moved by up to 10 % between commands; --randomize-layout does that)\n"
              : "  address space laid out at random: the native figure can move by up to 10 %\n"
                "  between commands (without --randomize-layout it is laid out the same)\n");
  std::cout << fmt::format("  {:<8} {:>10} {:>13} {:>8}   {:>10} {:>13}\n", "round", "native ns",
                           "simulated ns", "ratio", "wall: ns", "simulated ns");
  std::vector<double> native_cpu, sim_cpu, ratio, native_wall, sim_wall;
  // While the rounds disagree, more are run (up to three times as many), so
  // that a busy spell of a few seconds is outlasted rather than reported.
  const int cap = 3 * o.rounds;
  for (int k = 1; k <= cap; ++k) {
    if (k > o.rounds && rounds_agree(ratio)) break;
    if (k == o.rounds + 1)
      std::cout << fmt::format(
          "  (fewer than half of the rounds' ratios within 3 % of their median: the machine\n"
          "  was busy, or the runs too short to time; more rounds, up to {})\n",
          cap);
    const Timing n = time_native(x, native_n);
    const Timing s = time_in_child(sim, sim_n);
    if (s.packets == 0)
      throw std::runtime_error(fmt::format("speed: a simulation sent no packets ({})", s.outcome));
    native_cpu.push_back(n.cpu_ns_per_packet);
    sim_cpu.push_back(s.cpu_ns_per_packet);
    ratio.push_back(s.cpu_ns_per_packet / n.cpu_ns_per_packet);
    native_wall.push_back(n.ns_per_packet);
    sim_wall.push_back(s.ns_per_packet);
    std::cout << fmt::format("  {:<8} {:10.1f} {:13.1f} {:8.3f}   {:10.1f} {:13.1f}\n", k,
                             native_cpu.back(), sim_cpu.back(), ratio.back(), native_wall.back(),
                             sim_wall.back());
  }
  const size_t runs = ratio.size();
  const Spread n = spread_of(native_cpu), s = spread_of(sim_cpu), r = spread_of(ratio);
  const double nw = spread_of(native_wall).median, sw = spread_of(sim_wall).median;
  std::cout << fmt::format(
      "  native stack:   {:8.1f} ns per packet, median of {} (min-max {:.1f}-{:.1f}; wall time "
      "{:.1f})\n",
      n.median, runs, n.min, n.max, nw);
  std::cout << fmt::format(
      "  simulation:     {:8.1f} ns per simulated packet, median of {} (min-max {:.1f}-{:.1f}; "
      "wall time {:.1f})\n",
      s.median, runs, s.min, s.max, sw);
  std::cout << fmt::format(
      "  ratio:          {:8.3f} (simulated / native, the median of the rounds' ratios; min-max "
      "{:.3f}-{:.3f})\n",
      r.median, r.min, r.max);
  if (!rounds_agree(ratio))
    spdlog::warn(
        "speed: after {} rounds, fewer than half of their ratios lie within 3 % of their median "
        "(the machine stayed busy, or --min-time is too short): the ratio can be off by their "
        "spread; run again on a quieter machine",
        runs);
  if (x.cache_enabled) std::cout << icache_cost(x, sets);
  return 0;
}

// What the I-cache model costs: the same run with the cache on and off, each
// in a child process, alternating, the fastest of each kept (the machine's
// noise only ever adds time).
std::string icache_cost(const config::Experiment& x, const std::vector<std::string>& sets) {
  constexpr int kRounds = 3;
  Case on{"cache on", x.source, sets};
  Case off{"cache off", x.source, sets};
  off.sets.push_back("machine.cache.enabled=false");
  double best_on = 0, best_off = 0;
  auto keep = [](double& best, const Timing& t) {
    if (t.ns_per_packet > 0 && (best == 0 || t.ns_per_packet < best)) best = t.ns_per_packet;
  };
  for (int k = 0; k < kRounds; ++k) {
    keep(best_on, time_in_child(on, 0));  // the experiment's own packets or duration
    keep(best_off, time_in_child(off, 0));
  }
  if (best_on == 0 || best_off == 0)
    return "  I-cache cost:   not measured (a run sent no packets, or its process died)\n";
  return fmt::format(
      "  I-cache cost:   {:8.2f} x the same run without it ({:.1f} against {:.1f} ns per "
      "packet, the fastest of {} alternating runs each)\n",
      best_on / best_off, best_on, best_off, kRounds);
}

// The minimal experiment: a name, a machine and a stack.
fs::path write_minimal(const fs::path& dir) {
  const fs::path p = dir / "minimal.yaml";
  report::write_file_atomic(p, "name: minimal\nmachine: athlon-xp-2700\nstack: freebsd6\n");
  return p;
}

std::vector<Case> shipped_experiments() {
  std::vector<Case> out;
  for (const char* dir : {"experiments", "experiments/seed"}) {
    const fs::path d = tree_file(dir);
    std::vector<fs::path> files;
    if (fs::is_directory(d))
      for (const auto& e : fs::directory_iterator(d))
        if (e.path().extension() == ".yaml") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files)
      out.push_back({fs::relative(f, tree_file(dir).parent_path()).string(), f, {}});
  }
  return out;
}

std::vector<Case> minimal_matrix(const fs::path& minimal) {
  std::vector<Case> out;
  using workload::Path;
  for (const std::string& dest : Path::names("dest"))
    for (const bool irq : {false, true})
      for (const std::string& align : Path::names("align"))
        for (const std::string& copy : Path::names("copy")) {
          Case c{fmt::format("minimal {} irq={} {} {}", dest, irq ? "on" : "off", align, copy),
                 minimal,
                 {fmt::format("workload.dest={}", dest), fmt::format("interrupts.enabled={}", irq),
                  fmt::format("options.align={}", align), fmt::format("options.copy={}", copy)}};
          if (irq) c.sets.push_back("interrupts.handler_cycles=2000");
          // What the minimal experiment's stack refuses (a destination it
          // has no device for) is left out of the matrix.
          try {
            (void)config::load_experiment(minimal, c.sets);
          } catch (const config::ConfigError&) {
            continue;
          }
          out.push_back(std::move(c));
        }
  return out;
}

int scaling(const std::vector<std::string>& files, bool matrix, std::vector<int64_t> sizes) {
  std::sort(sizes.begin(), sizes.end());
  std::string tmpl = (fs::temp_directory_path() / "simloop-speed-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr)
    throw std::runtime_error(
        fmt::format("{}: cannot make a temporary directory: {}", tmpl, std::strerror(errno)));
  const fs::path tmp = tmpl;
  std::vector<Case> cases;
  if (files.empty()) {
    cases = shipped_experiments();
  } else {
    for (const auto& f : files) {
      // Bad input: exit 2 before anything runs.
      cases.push_back({f, load_user_experiment(f, {}).source, {}});
    }
  }
  if (matrix) {
    auto m = minimal_matrix(write_minimal(tmp));
    cases.insert(cases.end(), m.begin(), m.end());
  }
  std::cout << "wall time per simulated packet (ns) by packet count, each run in a process of "
               "its own;\ngrowth = the largest count's over the smallest's; peak memory (MB) "
               "of the child\n";
  std::string head = fmt::format("{:<44}", "experiment");
  for (auto n : sizes) head += fmt::format(" {:>9}", n);
  head += fmt::format(" {:>7} {:>8} {:>8}", "growth", "MB first", "MB last");
  std::cout << head << "\n";
  int over = 0;
  for (const auto& c : cases) {
    std::vector<Timing> ts;
    for (auto n : sizes) ts.push_back(time_in_child(c, n));
    std::string line = fmt::format("{:<44}", c.name);
    for (const auto& t : ts)
      line += t.ns_per_packet > 0 ? fmt::format(" {:9.1f}", t.ns_per_packet)
                                  : fmt::format(" {:>9}", t.outcome);
    const double first = ts.front().ns_per_packet, last = ts.back().ns_per_packet;
    if (first > 0 && last > 0) {
      const double growth = last / first;
      line += fmt::format(" {:7.2f}", growth);
      if (growth > 1.5) ++over;
    } else {
      line += fmt::format(" {:>7}", "-");
    }
    line += fmt::format(" {:8.1f} {:8.1f}", ts.front().rss_mb, ts.back().rss_mb);
    std::cout << line << std::endl;
  }
  fs::remove_all(tmp);
  std::cout << fmt::format("{} of {} grew by more than 1.5x per packet\n", over, cases.size());
  return 0;
}

// One sweep of `points` points of `packets` packets each, `jobs` at a
// time, into `dir`: its wall time, its planning time and the sum of its
// simulations' own wall times (the CSV's wall_s).
struct SweepTiming {
  double plan_s = 0, wall_s = 0, sim_s = 0;
  double cpu_s = 0;  // of this process and its runs: less moved by other load than wall time
  size_t runs = 0;
};

double cpu_seconds() {
  double s = 0;
  for (const int who : {RUSAGE_SELF, RUSAGE_CHILDREN}) {
    rusage u{};
    ::getrusage(who, &u);
    for (const timeval& t : {u.ru_utime, u.ru_stime})
      s += static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6;
  }
  return s;
}

SweepTiming time_sweep(const fs::path& dir, const std::string& name, int points, int64_t packets,
                       int jobs) {
  const fs::path exp = dir / (name + ".yaml");
  report::write_file_atomic(
      exp, fmt::format("name: {}\nmachine: athlon-xp-2700\nstack: freebsd6\n"
                       "workload: {{payload: 18, packets: {}, dest: wire}}\n"
                       "sweep:\n  grid:\n    workload.payload: {{start: 18, stop: {}, step: 1}}\n",
                       name, packets, 18 + points - 1));
  sweep::Options o;
  o.experiment = exp;
  o.output_dir = (dir / name).string();
  o.jobs = jobs;
  SweepTiming t;
  const auto t0 = std::chrono::steady_clock::now();
  const sweep::Plan plan = sweep::make_plan(o);
  t.plan_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cpu0 = cpu_seconds();
  const sweep::Summary sum = sweep::run_sweep(o, plan);
  t.cpu_s = cpu_seconds() - cpu0;
  t.wall_s = sum.wall_s;
  t.runs = sum.finished;
  if (sum.failed > 0)
    throw std::runtime_error(fmt::format("speed --sweep: {} of its runs failed", sum.failed));
  const sweep::Table csv = sweep::read_csv(plan.csv);
  const int wc = csv.column("wall_s");
  for (const auto& r : csv.rows) t.sim_s += std::stod(r[static_cast<size_t>(wc)]);
  return t;
}

// What a sweep costs beyond its simulations: a sweep of 1-packet points at
// -j 1 (each point's fixed cost: fork, set-up, recording its row), and a
// study of longer points at -j `jobs` (its wall time against the sum of its
// simulations' wall times, the least it could take on `jobs` cores).
int sweep_cost(int points, int study_points, int64_t study_packets, int jobs) {
  std::string tmpl = (fs::temp_directory_path() / "simloop-speed-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr)
    throw std::runtime_error(
        fmt::format("{}: cannot make a temporary directory: {}", tmpl, std::strerror(errno)));
  const fs::path tmp = tmpl;
  const auto level = spdlog::get_level();
  spdlog::set_level(spdlog::level::warn);  // the sweeps' own progress is not the point here
  SweepTiming fixed, study;
  try {
    fixed = time_sweep(tmp, "fixed", points, 1, 1);
    study = time_sweep(tmp, "study", study_points, study_packets, jobs);
  } catch (...) {
    spdlog::set_level(level);
    fs::remove_all(tmp);
    throw;
  }
  spdlog::set_level(level);
  fs::remove_all(tmp);
  const double n = static_cast<double>(std::max<size_t>(fixed.runs, 1));
  std::cout << fmt::format("sweep of {} points of 1 packet, -j 1 (planning {:.3f} s):\n", points,
                           fixed.plan_s);
  std::cout << fmt::format("  wall time per point:         {:8.2f} ms\n", 1e3 * fixed.wall_s / n);
  std::cout << fmt::format("  simulation per point:        {:8.2f} ms\n", 1e3 * fixed.sim_s / n);
  std::cout << fmt::format("  fixed cost per point:        {:8.2f} ms (wall - simulation)\n",
                           1e3 * (fixed.wall_s - fixed.sim_s) / n);
  std::cout << fmt::format("  CPU time per point:          {:8.2f} ms (the sweep and its runs)\n",
                           1e3 * fixed.cpu_s / n);
  std::cout << fmt::format("study of {} points of {} packets, -j {} (planning {:.3f} s):\n",
                           study_points, study_packets, jobs, study.plan_s);
  std::cout << fmt::format("  wall time:                   {:8.2f} s\n", study.wall_s);
  std::cout << fmt::format("  sum of its simulations:      {:8.2f} s\n", study.sim_s);
  std::cout << fmt::format("  CPU time:                    {:8.2f} s (the sweep and its runs)\n",
                           study.cpu_s);
  const double ideal = study.sim_s / jobs;
  std::cout << fmt::format(
      "  wall / (sum / jobs):         {:8.2f} (1 = no cost beyond the simulations)\n",
      ideal > 0 ? study.wall_s / ideal : 0);
  return 0;
}

}  // namespace

void add_speed(CLI::App& app, std::vector<Command>& commands) {
  struct Args {
    std::vector<std::string> files;
    std::vector<std::string> sets;
    bool scaling = false, matrix = false;
    std::vector<int64_t> sizes{10000, 100000, 1000000};
    bool sweep = false;
    int sweep_points = 200, study_points = 40, jobs = 2;
    int64_t study_packets = 100000;
    SpeedOptions speed;
  };
  auto a = std::make_shared<Args>();
  auto* speed = app.add_subcommand(
      "speed",
      "Measure the simulator's speed.\n"
      "Without --scaling: run one experiment's stack natively (in this process) and simulated\n"
      "(in a process of its own), in turn for --rounds rounds of runs of about --min-time s of\n"
      "CPU time each (more, up to three times as many, while fewer than half of the rounds'\n"
      "ratios lie within 3 % of their median), and print CPU time per packet of each round,\n"
      "each side's median and min-max, and the ratio (the median of the rounds' ratios).\n"
      "With the I-cache on, also what it costs: the same run with the cache on and off, three\n"
      "times each in turn in processes of their own, the fastest of each compared.\n"
      "With --scaling: run each experiment (default: every shipped one) at several packet\n"
      "counts, each in a process of its own, and print wall time per simulated packet, how it\n"
      "grows with the count, and peak memory. --matrix adds the minimal experiment for every\n"
      "destination x interrupts x alignment policy x loop copy.\n"
      "With --sweep: what a sweep costs beyond its simulations: the fixed cost per point (a\n"
      "sweep of 1-packet points at -j 1), and a study's wall time against the sum of its\n"
      "simulations' wall times (--study-points points of --study-packets packets at -j).\n"
      "Every run has its address space laid out the same (the randomization off), unless\n"
      "--randomize-layout: laid out at random, the native figure moved by up to 10 % between\n"
      "commands.");
  speed->add_option("experiment", a->files,
                    "Experiment YAML file(s) (default: the seed experiment; with --scaling, "
                    "every shipped experiment)");
  speed->add_option("--set", a->sets, "Override a key: path.to.key=value (without --scaling)");
  speed->add_option("--rounds", a->speed.rounds, "Without --scaling: timed rounds")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  speed
      ->add_option("--min-time", a->speed.min_time_s,
                   "Without --scaling: seconds each timed run takes at least")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  speed->add_flag("--randomize-layout", a->speed.randomize_layout,
                  "Lay the address space out at random in every run (the system's default)");
  speed->add_flag("--scaling", a->scaling, "Time each experiment at several packet counts");
  speed->add_flag("--matrix", a->matrix, "With --scaling: add the minimal experiment's matrix");
  speed->add_option("--packets", a->sizes, "With --scaling: the packet counts")
      ->delimiter(',')
      ->allow_extra_args(false)
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  speed->add_flag("--sweep", a->sweep, "Measure a sweep's cost per point");
  speed->add_option("--points", a->sweep_points, "With --sweep: 1-packet points timed")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  speed->add_option("--study-points", a->study_points, "With --sweep: points of the study")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  speed->add_option("--study-packets", a->study_packets, "With --sweep: packets per study point")
      ->check(CLI::Range(int64_t{1}, int64_t{100000000}))
      ->capture_default_str();
  speed->add_option("-j,--jobs", a->jobs, "With --sweep: the study's runs at a time")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  commands.push_back(
      {speed, [a] {
         if (a->sweep) {
           if (a->scaling || !a->files.empty() || !a->sets.empty())
             throw UserError("speed: --sweep goes without --scaling, experiments or --set");
           return sweep_cost(a->sweep_points, a->study_points, a->study_packets, a->jobs);
         }
         if (!a->scaling) {
           if (a->files.size() > 1)
             throw UserError("speed: one experiment at a time without --scaling");
           return native_vs_simulated(a->files.empty() ? "" : a->files[0], a->sets, a->speed);
         }
         if (!a->sets.empty()) throw UserError("speed: --set goes without --scaling");
         return scaling(a->files, a->matrix, a->sizes);
       }});
}

}  // namespace simloop::cli
