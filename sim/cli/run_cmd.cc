// simloop run / check / config-reference: experiments from YAML.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "config/experiment.h"
#include "engine/simulation.h"
#include "measure/native.h"
#include "sweep/runner.h"
#include "version.h"

namespace simloop::cli {

namespace fs = std::filesystem;

namespace {

config::Experiment load(const std::string& file, const std::vector<std::string>& sets) {
  return load_user_experiment(file, sets);
}

std::string breakdown(const engine::SimResult& r) {
  const double per = r.packets > 0 ? 1.0 / static_cast<double>(r.packets) : 0;
  const double cpp = r.cycles_per_packet();
  std::string out = "cycles per packet by stage:\n";
  for (size_t s = 0; s < models::kStageCount; ++s) {
    const auto stage = static_cast<models::Stage>(s);
    const double c = r.cycles[s] * per;
    if (c == 0) continue;
    const char* note = stage == models::Stage::sleep
                           ? "  (CPU idle: the sender asleep after ENOBUFS)"
                       : stage == models::Stage::idle ? "  (CPU idle: unexplained)"
                                                      : "";
    out += fmt::format("  {:<10} {:9.1f}  {:5.1f} %{}\n", models::stage_name(stage), c,
                       cpp > 0 ? 100 * c / cpp : 0, note);
  }
  out += fmt::format("  {:<10} {:9.1f}\n", "total", cpp);
  return out;
}

int run_cmd(const std::string& file, const std::vector<std::string>& sets,
            const std::string& outdir) {
  config::Experiment x = load(file, sets);
  if (!outdir.empty()) x.output.dir = outdir;
  spdlog::info("experiment {} ({}): machine {}, stack {}, {} B to {}", x.name, x.source.string(),
               x.machine_name, x.stack_name, x.workload.payload,
               config::dest_name(x.workload.dest));
  engine::route_simgrid_log_to_spdlog();
  const engine::SimResult r = engine::simulate(x);
  const report::Row row = engine::result_row(x, r);

  std::cout << report::format_table(
      {row}, {"experiment", "payload", "dest", "align", "copy", "packets", "kpps", "ns_per_packet",
              "cycles_per_packet", "interrupt_pct", "outcome"});
  std::cout << breakdown(r);
  for (size_t d = 0; d < net::kDropCount; ++d)
    if (r.drops[d] != 0)
      std::cout << fmt::format("dropped: {} ({})\n", r.drops[d],
                               net::drop_name(static_cast<net::Drop>(d)));
  if (r.enobufs != 0)
    std::cout << fmt::format("ENOBUFS: {} times, {:.3f} s asleep\n", r.enobufs, r.sleep_s);
  if (!r.detail.empty()) std::cout << fmt::format("run ended: {}\n", r.detail);
  const double wall_pps = r.wall_s > 0 ? static_cast<double>(r.packets) / r.wall_s : 0;
  spdlog::info("simulated {} packets in {:.3f} s of wall time ({:.0f} packets/s)", r.packets,
               r.wall_s, wall_pps);

  const fs::path dir = x.output.dir;
  if (x.output.csv) {
    const auto p = dir / (x.name + ".csv");
    report::write_file_atomic(p, report::to_csv({row}));
    std::cout << "wrote " << p.string() << "\n";
  }
  if (x.output.json) {
    nlohmann::json j;
    j["simloop_version"] = SIMLOOP_VERSION;
    j["git_revision"] = SIMLOOP_GIT_REV;
    j["seed"] = x.seed;
    j["result"] = report::to_json(row);
    j["config"] = config::to_json(x);
    const auto p = dir / (x.name + ".json");
    report::write_file_atomic(p, j.dump(2) + "\n");
    std::cout << "wrote " << p.string() << "\n";
  }
  return r.outcome == "ok" ? 0 : 3;
}

}  // namespace

config::Experiment load_user_experiment(const std::string& file,
                                        const std::vector<std::string>& sets) {
  const fs::path p = file.empty() ? tree_file(kDefaultRunExperiment) : fs::path(file);
  try {
    return config::load_experiment(p, sets);
  } catch (const config::ConfigError& e) {
    throw UserError(e.what(), 2);
  }
}

void add_run(CLI::App& app, std::vector<Command>& commands) {
  struct Args {
    std::string file;
    std::vector<std::string> sets;
    std::string outdir;
  };
  auto a = std::make_shared<Args>();
  auto* run = app.add_subcommand(
      "run",
      "Simulate an experiment and predict its kpps, with a cycle breakdown per stage.\n"
      "Without EXPERIMENT, runs the default: the 2006 seed host (experiments/seed-athlon.yaml).\n"
      "Exit status: 0 ok, 2 bad configuration, 3 the run ended early (e.g. an alignment fault).");
  run->add_option("experiment", a->file, "Experiment YAML file");
  run->add_option("--set", a->sets, "Override a key: path.to.key=value (repeatable)");
  run->add_option("-o,--output-dir", a->outdir,
                  "Directory for the CSV and JSON results (output.dir)");
  commands.push_back({run, [a] { return run_cmd(a->file, a->sets, a->outdir); }});

  auto c = std::make_shared<Args>();
  auto* check = app.add_subcommand(
      "check", "Validate an experiment without running it; print the resolved configuration.");
  check->add_option("experiment", c->file, "Experiment YAML file")->required();
  check->add_option("--set", c->sets, "Override a key: path.to.key=value (repeatable)");
  commands.push_back({check, [c] {
                        const auto x = load(c->file, c->sets);
                        // Whatever `sweep` would refuse, refused here too:
                        // the section and every point's configuration.
                        size_t points = 0;
                        if (x.has_sweep) {
                          sweep::Options o;
                          o.experiment = c->file;
                          o.sets = c->sets;
                          try {
                            points = sweep::make_plan(o).spec.points.size();
                          } catch (const config::ConfigError& e) {
                            throw UserError(e.what(), 2);
                          }
                        }
                        std::cout << config::to_json(x).dump(2) << "\n";
                        if (x.has_sweep)
                          spdlog::info("{}: valid, with a sweep of {} points", c->file, points);
                        else
                          spdlog::info("{}: valid", c->file);
                        return 0;
                      }});

  auto* ref = app.add_subcommand("config-reference",
                                 "Print the reference of every configuration key (Markdown).");
  commands.push_back({ref, [] {
                        std::cout << config::reference_markdown();
                        return 0;
                      }});
}

}  // namespace simloop::cli
