// Parameter sweeps: the `sweep:` section of an experiment expanded into
// points, and the result store that keeps one CSV row per finished run.
//
// A point is a list of settings applied as --set overrides; each point runs
// `repeats` times, each run with a seed derived from the point. Points are
// identified by their index and a hash of their settings, and a sweep by a
// hash of its resolved configuration and points, so that results of
// different sweeps are never mixed.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "report/table.h"

namespace simloop::sweep {

struct Setting {
  std::string key;    // a schema path, e.g. workload.payload
  std::string value;  // canonical text, as given to --set
};

struct Point {
  size_t index = 0;
  std::vector<Setting> settings;  // in the order of Spec::keys
  std::string hash;               // of the settings (16 hex digits)

  std::string value_of(const std::string& key) const;
  std::vector<std::string> as_sets() const;  // "key=value" overrides
};

struct Spec {
  std::vector<std::string> keys;  // swept keys: grid keys, then zip keys
  std::vector<Point> points;      // after the filter, indexed 0..n-1
  int repeats = 1;
  nlohmann::json definition;  // the section as written, for the manifest
};

// Reads the `sweep:` section of an experiment file. Throws
// config::ConfigError naming file:line:col and the key on bad input,
// including a file without a sweep section.
Spec load_spec(const std::filesystem::path& experiment_file);

// 64-bit FNV-1a, and as 16 hex digits.
uint64_t fnv1a(std::string_view text);
std::string hex64(uint64_t v);

// The seed of one run: FNV-1a of "SEED|key=value;...|REPEAT", one splitmix64
// step, modulo 2^52 (the schema's seed range). Depends on the settings, not
// on the index, so a point keeps its seeds when the sweep grows.
uint64_t run_seed(uint64_t base_seed, const Point& p, int repeat);

// A deterministic 1/N slice: the points whose index is K-1 modulo N.
struct Shard {
  int k = 1, n = 1;
  bool contains(const Point& p) const { return static_cast<int>(p.index % n) == k - 1; }
};
// Parses "K/N" with 1 <= K <= N; throws std::invalid_argument.
Shard parse_shard(const std::string& text);

// CSV: one line split into fields (RFC 4180 quoting), and a field quoted
// when it needs to be.
using report::csv_field;
using report::split_csv_line;

// A results CSV: its header and rows, as text.
struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  int column(const std::string& name) const;  // -1 if absent
};
// Reads a CSV; a last line without its newline (a write cut short) is
// dropped. Throws std::runtime_error naming the file.
Table read_csv(const std::filesystem::path& path);

// The append-only results file of a sweep. Each finished run is one line
// written with a single write() to a file opened O_APPEND and fsync'ed, so
// rows already written survive a crash or an interrupt of the sweep.
class ResultStore {
 public:
  // Creates the file with `header`, or with `resume` opens an existing one:
  // its header must equal `header`, a trailing partial line is cut off, and
  // the (point, repeat) pairs of its rows are returned by done().
  ResultStore(const std::filesystem::path& path, const std::vector<std::string>& header,
              bool resume);
  ~ResultStore();
  ResultStore(const ResultStore&) = delete;
  ResultStore& operator=(const ResultStore&) = delete;

  const std::set<std::pair<size_t, int>>& done() const { return done_; }
  // Appends one row (fields in header order).
  void append(const std::vector<std::string>& fields);

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  size_t columns_ = 0;
  std::set<std::pair<size_t, int>> done_;
};

}  // namespace simloop::sweep
