// simloop sweep / merge: parameter sweeps, one process per run.
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>

#include "sim/config/experiment.h"
#include "sim/report/csv_table.h"
#include "sim/report/stats.h"
#include "sim/tools/cli/commands.h"
#include "sim/tools/sweep/runner.h"
#include "version.h"

#ifndef SIMLOOP_GIT_DIRTY
#define SIMLOOP_GIT_DIRTY 0
#endif

namespace simloop::cli {

namespace fs = std::filesystem;

namespace {

// After every sweep: each point by its settings, with its runs, how many
// ended ok, and the mean kpps; with repeats also the spread of kpps across
// runs (standard deviation, 95 % confidence interval of the mean) next to the
// variation within a run (interval_kpps_cv). Returns whether repeats gave
// the same kpps at every point.
bool print_summary(const fs::path& csv, const sweep::Plan& plan, const sweep::Shard& shard) {
  // A table of a few hundred points is read; one of a million is not.
  constexpr size_t kTableRows = 200;
  const auto shards = static_cast<size_t>(shard.n);
  const size_t in_shard =
      plan.size() / shards + (plan.size() % shards > static_cast<size_t>(shard.k - 1) ? 1 : 0);
  const bool table = in_shard <= kTableRows;
  // The rows are read one at a time; of each point only what is shown is
  // kept (without a table: its first kpps and whether its runs agree).
  struct Runs {
    size_t all = 0;
    std::vector<std::pair<double, double>> ok;  // kpps, within-run cv
  };
  std::map<size_t, Runs> by_point;
  struct Agreement {
    double first = 0;
    uint32_t ok = 0;
    bool same = true;
  };
  std::vector<Agreement> agree(table ? 0 : in_shard);  // by the point's place in the shard
  const sweep::InputFile file(csv);                    // read a piece at a time, never whole
  try {
    report::CsvReader r([&file](uint64_t off, size_t len) { return file.read(off, len); },
                        csv.string(), {.whole_lines = true});
    const auto point = r.column("point"), kpps = r.column("kpps"), status = r.column("status"),
               cv = r.column("interval_kpps_cv");
    if (!point || !kpps) return false;
    while (r.next()) {
      const size_t i = std::stoul(r.cell(*point));
      const bool ok = !status || r.cell(*status) == "ok";
      if (!table) {
        if (!ok || !shard.contains(i) || i / shards >= agree.size()) continue;
        Agreement& a = agree[i / shards];
        const double k = std::stod(r.cell(*kpps));
        if (a.ok++ == 0) a.first = k;
        a.same = a.same && k == a.first;
        continue;
      }
      Runs& runs = by_point[i];
      ++runs.all;
      if (!ok) continue;
      const double c = cv && !r.cell(*cv).empty() ? std::stod(r.cell(*cv)) : 0;
      runs.ok.emplace_back(std::stod(r.cell(*kpps)), c);
    }
  } catch (const report::CsvError& e) {
    throw sweep::StoreError(e.what());
  }
  const bool repeats = plan.spec.repeats > 1;
  bool all_same = repeats;
  size_t compared = 0, ran = 0;
  if (!table) {
    for (const Agreement& a : agree) {
      ran += a.ok > 0 ? 1 : 0;
      if (a.ok > 1) {
        ++compared;
        all_same = all_same && a.same;
      }
    }
    std::cout << fmt::format(
        "{} points, {} with a run that ended ok; each point's runs are rows of {} (a table of "
        "each point is printed for up to {} points)\n",
        in_shard, ran, csv.string(), kTableRows);
    return all_same && compared > 0;
  }
  std::vector<std::vector<std::string>> cells;
  std::vector<std::string> head;
  for (const auto& k : plan.spec.keys) head.push_back(k);
  head.insert(head.end(), {"runs", "ok", "kpps"});
  if (repeats) head.insert(head.end(), {"sd kpps", "95% CI of mean"});
  head.push_back("within-run cv");
  for (size_t i = 0; i < plan.size(); ++i) {
    if (!shard.contains(i)) continue;
    const auto it = by_point.find(i);
    const Runs none;
    const Runs& r = it == by_point.end() ? none : it->second;
    const sweep::Point p = plan.spec.point(i);
    std::vector<std::string> row;
    for (const auto& s : p.settings) row.push_back(s.value);
    row.push_back(std::to_string(r.all));
    row.push_back(std::to_string(r.ok.size()));
    const auto n = r.ok.size();
    std::vector<double> rates, cvs;
    for (const auto& [k, c] : r.ok) {
      rates.push_back(k);
      cvs.push_back(c);
    }
    const double mean = report::mean(rates), within = report::mean(cvs);
    const double sd = report::sd(rates);
    const double half = report::mean_ci_half_width(rates, 0.95);
    if (n > 1) {
      ++compared;
      for (const auto& [k, c] : r.ok)
        if (k != r.ok.front().first) all_same = false;
    }
    row.push_back(n > 0 ? fmt::format("{:.1f}", mean) : "-");
    if (repeats) {
      row.push_back(n > 1 ? fmt::format("{:.2f}", sd) : "-");
      row.push_back(n > 1 ? fmt::format("[{:.1f}, {:.1f}]", mean - half, mean + half) : "-");
    }
    row.push_back(n > 0 ? fmt::format("{:.2f} %", 100 * within) : "-");
    cells.push_back(std::move(row));
  }
  std::vector<size_t> width(head.size());
  for (size_t i = 0; i < head.size(); ++i) {
    width[i] = head[i].size();
    for (const auto& r : cells) width[i] = std::max(width[i], r[i].size());
  }
  auto line = [&](const std::vector<std::string>& r) {
    std::string out;
    for (size_t i = 0; i < r.size(); ++i)
      out += fmt::format("{}{:>{}}", i == 0 ? "" : "  ", r[i], width[i]);
    return out + "\n";
  };
  std::cout << line(head);
  for (const auto& r : cells) std::cout << line(r);
  return all_same && compared > 0;
}

// Whether anything in the experiment draws on the seed between runs.
bool runs_can_differ(const config::Experiment& x) {
  return x.variance.page_colouring || x.variance.link_perturbation_bytes > 0;
}

struct SweepArgs {
  std::string file, output_dir, shard = "1/1";
  std::vector<std::string> sets, unset;
  int jobs = 0;
  bool resume = false, retry_crashed = false, list = false, keep_runs = false;
};

sweep::Options options_of(const SweepArgs& a) {
  sweep::Options o;
  o.experiment = experiment_path(a.file);
  o.sets = a.sets;
  o.unset = a.unset;
  o.output_dir = a.output_dir;
  o.jobs = a.jobs > 0 ? a.jobs : static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)));
  o.resume = a.resume;
  o.retry_crashed = a.retry_crashed;
  if (a.retry_crashed && !a.resume) throw UserError("--retry-crashed needs --resume", 2);
  try {
    o.shard = sweep::parse_shard(a.shard);
  } catch (const std::invalid_argument& e) {
    throw UserError(e.what(), 2);
  }
  // The progress line is for people watching a terminal, not for logs.
  o.progress = ::isatty(STDERR_FILENO) != 0 && spdlog::get_level() <= spdlog::level::info;
  o.provenance = {SIMLOOP_VERSION, SIMLOOP_GIT_REV, SIMLOOP_GIT_DIRTY != 0};
  o.keep_runs = a.keep_runs;
  o.run_document = run_document;
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
  for (const auto& note : plan.notes) spdlog::info("{}", note);
  warn_if_priced_elsewhere(plan.base);
  warn_if_fits_mixed(plan.base);
  for (const auto& [choice, x] : plan.chosen) {
    warn_if_priced_elsewhere(x);
    warn_if_fits_mixed(x);
  }
  // A shard past the last point would run nothing and say it had finished.
  if (static_cast<size_t>(o.shard.k) > plan.size())
    throw UserError(
        fmt::format("--shard {}: the sweep has {} point{}, so shard {} has none; use "
                    "at most {} shards",
                    a.shard, plan.size(), plan.size() == 1 ? "" : "s", o.shard.k, plan.size()),
        2);
  if (a.list) {
    fmt::memory_buffer out;
    fmt::format_to(std::back_inserter(out), "# experiment hash {}, {} points x {} repeats\n",
                   plan.hash, plan.size(), plan.spec.repeats);
    fmt::format_to(std::back_inserter(out), "point,repeat,seed,point_hash");
    for (const auto& k : plan.spec.keys) fmt::format_to(std::back_inserter(out), ",{}", k);
    out.push_back('\n');
    // Each field quoted as CSV once per value, not once per point.
    std::vector<std::vector<std::vector<std::string>>> quoted;
    for (const auto& ax : plan.spec.axes) {
      auto& q = quoted.emplace_back();
      for (const auto& t : ax.tuples) {
        auto& fields = q.emplace_back();
        for (const auto& v : t) fields.push_back(sweep::csv_field(v));
      }
    }
    std::vector<size_t> at;
    for (size_t i = 0; i < plan.size(); ++i) {
      if (!o.shard.contains(i)) continue;
      const sweep::Point p = plan.point(i);
      plan.spec.tuples_of(i, at);
      for (int r = 0; r < plan.spec.repeats; ++r) {
        fmt::format_to(std::back_inserter(out), "{},{},{},{}", i, r,
                       sweep::run_seed(plan.base.seed, p, r), p.hash);
        for (size_t x = 0; x < at.size(); ++x)
          for (const auto& f : quoted[x][at[x]]) {
            out.push_back(',');
            out.append(f);
          }
        out.push_back('\n');
      }
      if (out.size() > (1 << 20)) {
        std::cout.write(out.data(), static_cast<std::streamsize>(out.size()));
        out.clear();
      }
    }
    std::cout.write(out.data(), static_cast<std::streamsize>(out.size()));
    std::cout.flush();
    return 0;
  }
  if (plan.spec.repeats > 1 && !plan.points_vary && !runs_can_differ(plan.base))
    spdlog::warn(
        "repeats: {}, but nothing in this experiment differs between runs "
        "(variance.page_colouring is off and variance.link_perturbation_bytes is 0): every repeat "
        "of a point will give the same result",
        plan.spec.repeats);
  sweep::Summary s;
  try {
    s = sweep::run_sweep(o, plan);
  } catch (const sweep::StoreError& e) {
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
  if (print_summary(plan.csv, plan, o.shard))
    spdlog::warn(
        "every repeat of every point gave the same kpps: these runs are deterministic, "
        "so repeats add nothing (see variance.* in docs/config-reference.md)");
  return s.failed > 0 ? 3 : 0;
}

int merge_cmd(const std::string& out, const std::vector<std::string>& shards) {
  std::vector<fs::path> paths(shards.begin(), shards.end());
  sweep::MergeSummary m;
  try {
    m = sweep::merge(out, paths);
  } catch (const sweep::StoreError& e) {
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
      "and <dir>/<name>-sweep.json, the manifest (resolved configuration and its hash, every\n"
      "point's resolved configuration and seeds, version, git revision, times; rerun a row with\n"
      "simloop run --from-sweep CSV --point N). <dir>/<name>-sweep.lock keeps a second sweep\n"
      "out while this one runs (and is removed when it ends). See the Sweeps section of\n"
      "docs/config-reference.md.\n"
      "Ctrl-C starts no more runs and waits for running ones (again: stops them); finish later\n"
      "with --resume. Exit status: 0 all ok, 2 bad input, 3 some runs failed (recorded),\n"
      "4 the results could not be written (e.g. a full disk; rows already written stay),\n"
      "130 interrupted.");
  sw->add_option("experiment", a->file, "Experiment YAML file with a sweep: section")->required();
  sw->add_option("-j,--jobs", a->jobs, "Runs at a time (default: the number of cores)")
      ->check(CLI::Range(1, 4096));
  sw->add_flag("--resume", a->resume,
               "Complete existing results: keep the rows of points the sweep still has (a point "
               "is its resolved configuration), run the missing ones, set aside rows of points it "
               "no longer has (in <name>-sweep-dropped.csv). Refused if the base configuration "
               "changed");
  sw->add_flag("--retry-crashed", a->retry_crashed,
               "With --resume: run again the runs recorded as crashed");
  sw->add_option(
      "--shard", a->shard,
      "K/N: run only points whose index is K-1 modulo N, into <name>-sweep-shard-K-of-N.csv");
  sw->add_option("--set", a->sets,
                 "Override a key of the base experiment: path.to.key=value, or choose a "
                 "profile: machine=NAME, stack=NAME (repeatable)");
  sw->add_option("--unset", a->unset,
                 "Leave out a key (or section) the experiment file sets, as if not written "
                 "(repeatable)");
  sw->add_option("-o,--output-dir", a->output_dir,
                 "Directory for the results (default: output.dir)");
  sw->add_flag("--keep-runs", a->keep_runs,
               "Keep each run's result JSON (as simloop run writes it: per-function cycles, "
               "I-cache sets; for explain) and its log in <dir>/<name>-sweep-runs/"
               "<point_hash>-<repeat>.json and .log");
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
