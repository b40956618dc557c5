// simloop speed: how fast the simulator is, against the real code it runs
// and against itself as runs grow.
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
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

// The same stack and packets natively and simulated, in one process
// (native first: SimGrid is set up once per process).
int native_vs_simulated(const std::string& file, const std::vector<std::string>& sets) {
  const config::Experiment x = load_user_experiment(file, sets);
  measure::NativeOptions n;
  n.payload = x.workload.payload;
  n.packets = x.workload.packets;
  n.path = config::path_of(x);
  n.path.service = workload::Service::drained;  // each packet's whole path, natively
  // The stack the experiment runs, natively.
  const auto native =
      measure::run_native(n, config::stack_of(x), x.options, x.stack_options).front();
  // Its children before this process sets SimGrid up: they would inherit its engine.
  const std::string icache_line = x.cache_enabled ? icache_cost(x, sets) : "";
  engine::route_simgrid_log_to_spdlog();
  const engine::SimResult r = engine::simulate(x);
  const double sim_ns = r.packets > 0 ? r.wall_s * 1e9 / static_cast<double>(r.packets) : 0;
  std::cout << fmt::format("experiment {}: {} packets, {} B to {}, the {} stack\n", x.name,
                           r.packets, x.workload.payload, config::dest_name(x.workload.dest),
                           x.stack.fns->stack());
  std::cout << fmt::format("  native stack:   {:8.1f} ns per packet ({:.2f} M packets/s)\n",
                           native.ns_per_packet(), native.kpps() / 1e3);
  std::cout << fmt::format(
      "  simulation:     {:8.1f} ns of wall time per simulated packet ({:.2f} M packets/s)\n",
      sim_ns, sim_ns > 0 ? 1e3 / sim_ns : 0);
  std::cout << fmt::format("  ratio:          {:8.2f} (simulated / native, per packet)\n",
                           native.ns_per_packet() > 0 ? sim_ns / native.ns_per_packet() : 0);
  if (!icache_line.empty()) std::cout << icache_line;
  return 0;
}

struct Case {
  std::string name;
  fs::path file;
  std::vector<std::string> sets;
};

struct Timing {
  double ns_per_packet = 0;
  double rss_mb = 0;
  std::string outcome;
};

// One simulation in a child process (SimGrid keeps global state): its wall
// time per packet, and the child's peak resident memory. `packets` > 0
// replaces the experiment's packets or duration.
Timing time_in_child(const Case& c, int64_t packets) {
  const ChildResult child = json_from_child([&c, packets] {
    auto sets = c.sets;
    if (packets > 0) {
      sets.push_back(fmt::format("workload.packets={}", packets));
      sets.push_back("workload.duration_s=0");
    }
    const config::Experiment x = config::load_experiment(c.file, sets);
    engine::route_simgrid_log_to_spdlog();
    const engine::SimResult r = engine::simulate(x);
    return nlohmann::json{{"wall_s", r.wall_s}, {"packets", r.packets}, {"outcome", r.outcome}};
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
  const auto sent = j["packets"].get<int64_t>();
  if (sent > 0) t.ns_per_packet = j["wall_s"].get<double>() * 1e9 / static_cast<double>(sent);
  return t;
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
  };
  auto a = std::make_shared<Args>();
  auto* speed = app.add_subcommand(
      "speed",
      "Measure the simulator's speed.\n"
      "Without --scaling: run one experiment's stack natively and simulated in one process and\n"
      "print wall time per packet for both and their ratio. With the I-cache on, also what it\n"
      "costs: the same run with the cache on and off, three times each in turn in processes\n"
      "of their own, the fastest of each compared.\n"
      "With --scaling: run each experiment (default: every shipped one) at several packet\n"
      "counts, each in a process of its own, and print wall time per simulated packet, how it\n"
      "grows with the count, and peak memory. --matrix adds the minimal experiment for every\n"
      "destination x interrupts x alignment policy x loop copy.\n"
      "With --sweep: what a sweep costs beyond its simulations: the fixed cost per point (a\n"
      "sweep of 1-packet points at -j 1), and a study's wall time against the sum of its\n"
      "simulations' wall times (--study-points points of --study-packets packets at -j).");
  speed->add_option("experiment", a->files,
                    "Experiment YAML file(s) (default: the seed experiment; with --scaling, "
                    "every shipped experiment)");
  speed->add_option("--set", a->sets, "Override a key: path.to.key=value (without --scaling)");
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
           return native_vs_simulated(a->files.empty() ? "" : a->files[0], a->sets);
         }
         if (!a->sets.empty()) throw UserError("speed: --set goes without --scaling");
         return scaling(a->files, a->matrix, a->sizes);
       }});
}

}  // namespace simloop::cli
