// Running a sweep: one process per run (SimGrid keeps global state, so one
// simulation per process), N at a time, each finished run appended to the
// results CSV at once; and merging the results of shards.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "sim/config/experiment.h"
#include "sim/engine/simulation.h"
#include "sim/tools/sweep/sweep.h"

namespace simloop::sweep {

// What produced a result, for the manifest.
struct Provenance {
  std::string version, git_rev;
  bool git_dirty = false;
};

struct Options {
  std::filesystem::path experiment;
  std::vector<std::string> sets;   // overrides of the base experiment
  std::vector<std::string> unset;  // keys of the experiment file left out (--unset)
  std::string output_dir;          // empty: the experiment's output.dir
  int jobs = 1;
  bool resume = false;
  bool retry_crashed = false;  // with resume: run crashed rows again
  Shard shard;
  bool progress = false;  // a progress line on stderr
  Provenance provenance;
  // Keep each run's document (what `simloop run` writes as JSON, made by
  // run_document) and its log in <stem>-runs/<point hash>-<repeat>.json/.log.
  bool keep_runs = false;
  std::function<nlohmann::json(const config::Experiment&, const engine::SimResult&)> run_document;
};

// A sweep before it runs: the base experiment, its points, and the hash that
// identifies the sweep (its resolved configuration without output.*, its
// points and repeats). Points are not resolved here, but when they run:
// a plan holds each point's hash and makes its settings when asked.
struct Plan {
  config::Experiment base;
  nlohmann::json config;  // resolved, as in the manifest
  Spec spec;
  std::vector<uint64_t> hashes;  // each point's hash (PointHasher)
  // Whether every point's configuration was loaded and checked (sweeps of
  // at most kCheckedPoints points); otherwise each is checked as it runs.
  bool checked = false;
  bool points_vary = false;  // some point turns on run-to-run variance
  // What loading the base and the points left out of the experiment file
  // (config::Experiment::notes), each once: keys of one stack where a point
  // runs another.
  std::vector<std::string> notes;
  // The base on each machine and stack a point chooses ("machine=NAME",
  // "stack=NAME"), loaded once when the sweep is planned.
  std::map<std::string, config::Experiment> chosen;
  std::string hash;
  std::filesystem::path csv, manifest;
  std::filesystem::path lock;      // held for the whole sweep (<stem>.lock)
  std::filesystem::path dropped;   // rows of points a resumed sweep no longer has
  std::filesystem::path runs_dir;  // kept runs (Options::keep_runs)

  size_t size() const { return hashes.size(); }
  Point point(size_t index) const;  // its settings and hash
};

// Sweeps of up to this many points have each point's configuration loaded
// and checked before the first run (about 0.1 ms a point); larger ones
// check each value of each key, and each point when it runs.
inline constexpr size_t kCheckedPoints = 20000;

// Loads and checks everything, each point's configuration too when there
// are at most kCheckedPoints (and each swept machine or stack over the base
// whatever the size). Throws config::ConfigError on bad input.
Plan make_plan(const Options& o);
// The base's profile choices, for PointHasher.
std::map<std::string, std::string> profile_refs(const config::Experiment& base);

// What identifies a point's results without resolving it: the FNV-1a of
// the base configuration's identity (all but output.* and description) and
// the point's settings that differ from the base, in key order. Swept keys
// are set last, over the resolved base, so equal hashes are equal
// configurations; a setting equal to the base's value changes nothing and
// is left out, so a key swept anew keeps the rows of its base value.
inline constexpr const char* kPointHashRule =
    "fnv1a64(\"BASE|key=value;...\"): BASE the 16 hex digits of fnv1a64 of the base's resolved "
    "configuration without output.* and description; the settings that differ from the base, "
    "sorted by key";
class PointHasher {
 public:
  // `base_refs`: for `machine` and `stack`, the name the base chose its
  // profile by (config::profile_ref), which a setting equal to changes
  // nothing; a profile chosen by a map has none.
  PointHasher(const Spec& spec, const nlohmann::json& base_config,
              const std::map<std::string, std::string>& base_refs = {});
  uint64_t operator()(size_t index) const;
  uint64_t operator()(const Point& p) const;  // a point with settings of spec's keys

 private:
  const Spec& spec_;
  uint64_t seed_ = 0;  // the hash of "BASE|"
  // Per axis, per tuple, per key: "key=value;" or "" when it is the base's.
  std::vector<std::vector<std::vector<std::string>>> parts_;
  std::vector<std::pair<size_t, size_t>> order_;  // (axis, key in axis), sorted by key
  std::map<std::string, std::string> base_text_;  // the base's value of each swept key
};

// Result files refuse to be mixed with another sweep's: exit status 2.
struct MismatchError : StoreError {
  using StoreError::StoreError;
};

// The keys (dot paths) whose values differ between two resolved
// configurations, leaving out `ignore` (swept keys) and what does not change
// a result (output.*, description).
std::vector<std::string> changed_keys(const nlohmann::json& a, const nlohmann::json& b,
                                      const std::set<std::string>& ignore);

// A manifest's status as it stands: "running" only while a process holds
// the sweep's lock; a running manifest whose lock is free belongs to a
// sweep that ended without saying so ("stopped").
std::string effective_status(const nlohmann::json& manifest, const std::filesystem::path& csv);

struct Summary {
  size_t runs = 0;                  // runs in this shard
  size_t skipped = 0;               // already in the results (--resume)
  size_t dropped = 0;               // rows of points no longer in the sweep (--resume)
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
// different sweeps, StoreError if `out` is one of them or a row's point is
// not in its shard's manifest.
struct MergeSummary {
  size_t rows = 0, duplicates = 0, missing = 0;
};
MergeSummary merge(const std::filesystem::path& out,
                   const std::vector<std::filesystem::path>& shards);

// The time now, UTC, as 2026-01-31T12:00:00Z.
std::string utc_now();
// A manifest read from its file; StoreError naming the file if it is not one.
// Without `point_configs`, as parse_manifest leaves points out.
nlohmann::json read_json(const std::filesystem::path& p, bool point_configs = true);

// The manifest that goes with a results CSV: same name, .json; its lock:
// same name, .lock.
std::filesystem::path manifest_of(const std::filesystem::path& csv);
std::filesystem::path lock_of(const std::filesystem::path& csv);

// The columns of a sweep's results: point, repeat, point_hash, the swept
// keys, the metrics of a run (but those that repeat a swept key, such as
// align for options.align) and how the run ended.
std::vector<std::string> header_of(const Plan& p);

}  // namespace simloop::sweep
