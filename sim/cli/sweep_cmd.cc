// simloop sweep / merge: parameter sweeps, one process per run.
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>

#include "cli/commands.h"
#include "sweep/runner.h"
#include "version.h"

#ifndef SIMLOOP_GIT_DIRTY
#define SIMLOOP_GIT_DIRTY 0
#endif

namespace simloop::cli {

namespace fs = std::filesystem;

namespace {

// Two-sided 95 % quantile of Student's t with `df` degrees of freedom.
double t95(size_t df) {
  static constexpr double kT[] = {0,     12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365,
                                  2.306, 2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
                                  2.120, 2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069,
                                  2.064, 2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
  return df < std::size(kT) ? kT[df] : 1.96;
}

// With repeats: the spread of kpps across runs of each point (mean,
// standard deviation, 95 % confidence interval of the mean) next to the
// variation within a run (interval_kpps_cv).
void print_repeat_summary(const fs::path& csv) {
  const sweep::Table t = sweep::read_csv(csv);
  const int point = t.column("point"), kpps = t.column("kpps"), status = t.column("status"),
            cv = t.column("interval_kpps_cv");
  if (point < 0 || kpps < 0) return;
  std::map<long, std::vector<std::pair<double, double>>> by_point;
  for (const auto& row : t.rows) {
    if (status >= 0 && row[status] != "ok") continue;
    by_point[std::stol(row[point])].emplace_back(std::stod(row[kpps]),
                                                 cv >= 0 ? std::stod(row[cv]) : 0);
  }
  std::cout << "point  runs  mean kpps  sd kpps  95% CI of mean    within-run cv\n";
  for (const auto& [p, runs] : by_point) {
    const auto n = runs.size();
    double mean = 0, within = 0;
    for (const auto& [k, c] : runs) {
      mean += k;
      within += c;
    }
    mean /= static_cast<double>(n);
    within /= static_cast<double>(n);
    double var = 0;
    for (const auto& [k, c] : runs) var += (k - mean) * (k - mean);
    const double sd = n > 1 ? std::sqrt(var / static_cast<double>(n - 1)) : 0;
    const double half = n > 1 ? t95(n - 1) * sd / std::sqrt(static_cast<double>(n)) : 0;
    std::cout << fmt::format("{:>5}  {:>4}  {:>9.1f}  {:>7.2f}  [{:.1f}, {:.1f}]  {:>10.2f} %\n", p,
                             n, mean, sd, mean - half, mean + half, 100 * within);
  }
}

struct SweepArgs {
  std::string file, output_dir, shard = "1/1";
  std::vector<std::string> sets;
  int jobs = 0;
  bool resume = false, list = false;
};

sweep::Options options_of(const SweepArgs& a) {
  sweep::Options o;
  o.experiment = a.file;
  o.sets = a.sets;
  o.output_dir = a.output_dir;
  o.jobs = a.jobs > 0 ? a.jobs : static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)));
  o.resume = a.resume;
  try {
    o.shard = sweep::parse_shard(a.shard);
  } catch (const std::invalid_argument& e) {
    throw UserError(e.what(), 2);
  }
  // The progress line is for people watching a terminal, not for logs.
  o.progress = ::isatty(STDERR_FILENO) != 0 && spdlog::get_level() <= spdlog::level::info;
  o.provenance = {SIMLOOP_VERSION, SIMLOOP_GIT_REV, SIMLOOP_GIT_DIRTY != 0};
  return o;
}

int sweep_cmd(const SweepArgs& a) {
  const sweep::Options o = options_of(a);
  sweep::Plan plan;
  try {
    plan = sweep::make_plan(o);
  } catch (const config::ConfigError& e) {
    throw UserError(e.what(), 2);
  }
  if (a.list) {
    std::cout << fmt::format("# experiment hash {}, {} points x {} repeats\n", plan.hash,
                             plan.spec.points.size(), plan.spec.repeats);
    std::cout << "point,repeat,seed,point_hash";
    for (const auto& k : plan.spec.keys) std::cout << "," << k;
    std::cout << "\n";
    for (const auto& p : plan.spec.points) {
      if (!o.shard.contains(p)) continue;
      for (int r = 0; r < plan.spec.repeats; ++r) {
        std::cout << fmt::format("{},{},{},{}", p.index, r, sweep::run_seed(plan.base.seed, p, r),
                                 p.hash);
        for (const auto& s : p.settings) std::cout << "," << sweep::csv_field(s.value);
        std::cout << "\n";
      }
    }
    return 0;
  }
  sweep::Summary s;
  try {
    s = sweep::run_sweep(o, plan);
  } catch (const sweep::MismatchError& e) {
    throw UserError(e.what(), 2);
  }
  const size_t recorded = s.skipped + s.finished;
  if (s.interrupted) {
    spdlog::error("interrupted after {:.1f} s: {} of {} runs recorded in {}; finish with --resume",
                  s.wall_s, recorded, s.runs, plan.csv.string());
    return 130;
  }
  spdlog::info("{} runs in {:.1f} s ({} failed); results in {}, manifest {}", s.finished, s.wall_s,
               s.failed, plan.csv.string(), plan.manifest.string());
  if (plan.spec.repeats > 1) print_repeat_summary(plan.csv);
  return s.failed > 0 ? 3 : 0;
}

int merge_cmd(const std::string& out, const std::vector<std::string>& shards) {
  std::vector<fs::path> paths(shards.begin(), shards.end());
  sweep::MergeSummary m;
  try {
    m = sweep::merge(out, paths);
  } catch (const sweep::MismatchError& e) {
    throw UserError(e.what(), 2);
  }
  if (m.duplicates > 0)
    spdlog::warn("{} runs appeared in more than one shard; kept the first", m.duplicates);
  if (m.missing > 0) spdlog::warn("{} runs of the sweep are in no shard", m.missing);
  spdlog::info("merged {} runs from {} files into {} (manifest {})", m.rows, shards.size(), out,
               sweep::manifest_of(out).string());
  return 0;
}

}  // namespace

void add_sweep(CLI::App& app, std::vector<Command>& commands) {
  auto a = std::make_shared<SweepArgs>();
  auto* sw = app.add_subcommand(
      "sweep",
      "Run every point of an experiment's sweep: section, each run in its own process.\n"
      "Results: <dir>/<name>-sweep.csv, one row per run (point, repeat, point_hash, each swept "
      "key,\n"
      "every metric, status ok|fault|error|crashed, error, process_s), written as each run ends,\n"
      "and <dir>/<name>-sweep.json, the manifest (resolved configuration and its hash, version,\n"
      "git revision, seeds, times). See the Sweeps section of docs/config-reference.md.\n"
      "Ctrl-C starts no more runs and waits for running ones (again: stops them); finish later\n"
      "with --resume. Exit status: 0 all ok, 2 bad input, 3 some runs failed (recorded),\n"
      "130 interrupted.");
  sw->add_option("experiment", a->file, "Experiment YAML file with a sweep: section")->required();
  sw->add_option("-j,--jobs", a->jobs, "Runs at a time (default: the number of cores)")
      ->check(CLI::Range(1, 4096));
  sw->add_flag("--resume", a->resume,
               "Run only the runs missing from existing results (which must be of the same "
               "experiment hash)");
  sw->add_option(
      "--shard", a->shard,
      "K/N: run only points whose index is K-1 modulo N, into <name>-sweep-shard-K-of-N.csv");
  sw->add_option("--set", a->sets,
                 "Override a key of the base experiment: path.to.key=value (repeatable)");
  sw->add_option("-o,--output-dir", a->output_dir,
                 "Directory for the results (default: output.dir)");
  sw->add_flag("--list", a->list, "Print the runs (point, repeat, seed, settings) as CSV and exit");
  commands.push_back({sw, [a] { return sweep_cmd(*a); }});

  struct MergeArgs {
    std::string out;
    std::vector<std::string> shards;
  };
  auto m = std::make_shared<MergeArgs>();
  auto* mg = app.add_subcommand("merge",
                                "Combine the results of sweep shards (--shard K/N) into one CSV "
                                "ordered by point and repeat,\n"
                                "with a manifest next to it. Each shard's manifest (its .json) "
                                "must be beside its CSV; shards\n"
                                "of different experiment hashes are refused (exit status 2).");
  mg->add_option("out", m->out, "The merged CSV to write")->required();
  mg->add_option("shards", m->shards, "Shard CSVs written by simloop sweep --shard")->required();
  commands.push_back({mg, [m] { return merge_cmd(m->out, m->shards); }});
}

}  // namespace simloop::cli
