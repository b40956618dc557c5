// simloop speed: how fast the simulator is, against the real code it runs
// and against itself as runs grow.
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
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

namespace simloop::cli {

namespace fs = std::filesystem;

namespace {

// The same stack and packets natively and simulated, in one process
// (native first: SimGrid is set up once per process).
int native_vs_simulated(const std::string& file, const std::vector<std::string>& sets) {
  const config::Experiment x = load_user_experiment(file, sets);
  measure::NativeOptions n;
  n.payload = x.workload.payload;
  n.packets = x.workload.packets;
  n.path = config::path_of(x);
  n.path.service = workload::Service::drained;  // each packet's whole path, natively
  n.stack = x.options;
  // The stack the experiment runs, natively.
  const auto native = (config::runs_linux(x) ? measure::run_native(n, config::linux_options_of(x))
                                             : measure::run_native(n))
                          .front();
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
// time per packet, and the child's peak resident memory.
Timing time_in_child(const Case& c, int64_t packets) {
  const ChildResult child = json_from_child([&c, packets] {
    auto sets = c.sets;
    sets.push_back(fmt::format("workload.packets={}", packets));
    sets.push_back("workload.duration_s=0");
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

}  // namespace

void add_speed(CLI::App& app, std::vector<Command>& commands) {
  struct Args {
    std::vector<std::string> files;
    std::vector<std::string> sets;
    bool scaling = false, matrix = false;
    std::vector<int64_t> sizes{10000, 100000, 1000000};
  };
  auto a = std::make_shared<Args>();
  auto* speed = app.add_subcommand(
      "speed",
      "Measure the simulator's speed.\n"
      "Without --scaling: run one experiment's stack natively and simulated in one process and\n"
      "print wall time per packet for both and their ratio.\n"
      "With --scaling: run each experiment (default: every shipped one) at several packet\n"
      "counts, each in a process of its own, and print wall time per simulated packet, how it\n"
      "grows with the count, and peak memory. --matrix adds the minimal experiment for every\n"
      "destination x interrupts x alignment policy x loop copy.");
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
  commands.push_back({speed, [a] {
                        if (!a->scaling) {
                          if (a->files.size() > 1)
                            throw UserError("speed: one experiment at a time without --scaling");
                          return native_vs_simulated(a->files.empty() ? "" : a->files[0], a->sets);
                        }
                        if (!a->sets.empty())
                          throw UserError("speed: --set goes without --scaling");
                        return scaling(a->files, a->matrix, a->sizes);
                      }});
}

}  // namespace simloop::cli
