// Running a sweep: one process per run (SimGrid keeps global state, so one
// simulation per process), N at a time, each finished run appended to the
// results CSV at once; and merging the results of shards.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/experiment.h"
#include "sweep/sweep.h"

namespace simloop::sweep {

// What produced a result, for the manifest.
struct Provenance {
  std::string version, git_rev;
  bool git_dirty = false;
};

struct Options {
  std::filesystem::path experiment;
  std::vector<std::string> sets;  // overrides of the base experiment
  std::string output_dir;         // empty: the experiment's output.dir
  int jobs = 1;
  bool resume = false;
  Shard shard;
  bool progress = false;  // a progress line on stderr
  Provenance provenance;
};

// A sweep before it runs: the base experiment, its points, and the hash that
// identifies the sweep (its resolved configuration without output.*, its
// points and repeats).
struct Plan {
  config::Experiment base;
  nlohmann::json config;  // resolved, as in the manifest
  Spec spec;
  std::string hash;
  std::filesystem::path csv, manifest;
};

// Loads and checks everything, including every point's configuration.
// Throws config::ConfigError on bad input.
Plan make_plan(const Options& o);

// Result files refuse to be mixed with another sweep's: exit status 2.
struct MismatchError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Summary {
  size_t runs = 0;                  // runs in this shard
  size_t skipped = 0;               // already in the results (--resume)
  size_t finished = 0, failed = 0;  // this session; failed: fault, error or crash
  bool interrupted = false;
  double wall_s = 0;
};

// Runs the plan; the parent never runs SimGrid itself. SIGINT stops
// launching and lets running children finish (a second one, or SIGTERM,
// kills them); completed rows are kept either way.
Summary run_sweep(const Options& o, const Plan& plan);

// Combines shard results into `out` (CSV, with its manifest next to it),
// ordered by point and repeat. Throws MismatchError if the shards come from
// different sweeps.
struct MergeSummary {
  size_t rows = 0, duplicates = 0, missing = 0;
};
MergeSummary merge(const std::filesystem::path& out,
                   const std::vector<std::filesystem::path>& shards);

// The manifest that goes with a results CSV: same name, .json.
std::filesystem::path manifest_of(const std::filesystem::path& csv);

}  // namespace simloop::sweep
