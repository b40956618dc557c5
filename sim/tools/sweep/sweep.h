// Parameter sweeps: the `sweep:` section of an experiment expanded into
// points, and the result store that keeps one CSV row per finished run.
//
// A point is a list of settings applied as --set overrides; each point runs
// `repeats` times, each run with a seed derived from the point. Points are
// identified by a hash of their resolved configuration (so a row keeps its
// meaning when the sweep grows), and a sweep by a hash of its resolved
// configuration and points, so that results of different sweeps are never
// mixed.
#pragma once

#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/report/csv_table.h"
#include "sim/report/table.h"
#include "sim/support/text.h"

namespace simloop::sweep {

// The most points a sweep may have, after its filter. Planning no longer
// resolves each point (a point is resolved when it runs), so a plan costs
// about a second and 20 MB a million points; this bounds a plan at ten
// million. One key takes at most kMaxValues values.
inline constexpr size_t kMaxPoints = 10000000;
inline constexpr size_t kMaxValues = 1000000;

struct Setting {
  std::string key;    // a schema path, e.g. workload.payload
  std::string value;  // canonical text, as given to --set, or kLeftOut
};

// A swept value of `~`: the point sets nothing for its key, which keeps the
// experiment's own value, or is left out where the point's stack does not
// take it (a key of one stack beside a stack axis).
inline constexpr std::string_view kLeftOut = "~";

struct Point {
  size_t index = 0;
  std::vector<Setting> settings;  // in the order of Spec::keys
  // 16 hex digits (point_hash in runner.h); empty from Spec::point.
  std::string hash;

  // A key's value as results show it ("" where the point leaves it out).
  std::string value_of(const std::string& key) const;
  std::vector<std::string> as_sets() const;  // "key=value" overrides, none for kLeftOut
};

// One factor of the product: a grid key, or the keys of a zip that move in
// lock step; its tuples are the values the filter keeps, one per key.
struct Axis {
  std::vector<std::string> keys;
  std::vector<std::vector<std::string>> tuples;
};

// The points of a sweep, held as the product of its axes rather than as a
// list: point i is the i-th combination, first axis slowest (nested loops
// in file order). Every filter condition names one key, so filtering
// removes values from that key's axis and the product stays a product.
struct Spec {
  std::vector<std::string> keys;  // swept keys: grid keys, then zip keys
  std::vector<Axis> axes;
  int repeats = 1;
  nlohmann::json definition;  // the section as written, for the manifest
  // The section as YAML text, keys in file order (JSON objects sort their
  // keys, and the order of keys is the order of points): what spec_of
  // makes the same points from again.
  std::string text;

  size_t size() const;
  // Which tuple of each axis point `index` takes: `at` holds one number
  // per axis (the pointer form fills axes.size() of them, allocating none).
  void tuples_of(size_t index, size_t* at) const;
  void tuples_of(size_t index, std::vector<size_t>& at) const {
    at.resize(axes.size());
    tuples_of(index, at.data());
  }
  Point point(size_t index) const;
};

// Reads the `sweep:` section of an experiment file. Throws
// config::ConfigError naming file:line:col and the key on bad input,
// including a file without a sweep section.
Spec load_spec(const std::filesystem::path& experiment_file);
// The same from a section already read (a manifest's "sweep", which is
// YAML as JSON); `file` names it in errors.
Spec spec_of(const YAML::Node& section, const std::string& file);

// The canonical text of a key's value as a resolved configuration holds it
// (JSON), as a sweep's values are written; nullopt for a value of no key's
// type.
std::optional<std::string> canonical_text(const std::string& key, const nlohmann::json& value);

// 64-bit FNV-1a (support/text.h), and a hash as 16 hex digits.
using support::fnv1a;
using support::kFnvOffset;
std::string hex64(uint64_t v);

// The seed of one run: FNV-1a of "SEED|key=value;...|REPEAT", one splitmix64
// step, modulo 2^52 (the schema's seed range). Depends on the settings, not
// on the index, so a point keeps its seeds when the sweep grows.
uint64_t run_seed(uint64_t base_seed, const Point& p, int repeat);

// A deterministic 1/N slice: the points whose index is K-1 modulo N.
struct Shard {
  int k = 1, n = 1;
  bool contains(size_t index) const { return static_cast<int>(index % n) == k - 1; }
  bool contains(const Point& p) const { return contains(p.index); }
};
// Parses "K/N" with 1 <= K <= N; throws std::invalid_argument.
Shard parse_shard(const std::string& text);

// CSV: one line split into fields (RFC 4180 quoting), and a field quoted
// when it needs to be.
using report::csv_field;
using report::split_csv_line;

// Stored results that cannot be used as they are (a corrupt or foreign CSV
// or manifest, rows of unknown points, a lock held by another sweep): a
// message naming the file and line, exit status 2.
struct StoreError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A results CSV: its header and rows, as text, with the line number of each
// row (1 is the header).
using Table = report::CsvTable;
// Parses CSV text (report::CsvReader); a last line without its newline (a
// write cut short) is dropped. Throws StoreError naming `name` and the line.
Table parse_csv(std::string_view text, const std::string& name);
// Reads a CSV file (as parse_csv). Throws StoreError naming the file.
Table read_csv(const std::filesystem::path& path);
// The file's text and its length up to the last complete line.
std::string read_text(const std::filesystem::path& path);
// A regular file open for reading, read by offset: what was read once can
// be read again from the same file whatever happens to its path (a resume
// replaces it; a running sweep appends). Throws StoreError "NAME: cannot
// read: REASON" or "NAME: not a regular file".
class InputFile {
 public:
  explicit InputFile(const std::filesystem::path& path);
  ~InputFile();
  InputFile(InputFile&& o) noexcept;
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  InputFile& operator=(InputFile&&) = delete;
  // Up to `len` bytes at `off`: fewer at the end of the file.
  std::string read(uint64_t off = 0, size_t len = std::string::npos) const;
  uint64_t size() const;
  const std::string& name() const { return name_; }

 private:
  int fd_ = -1;
  std::string name_;
};

// Where a row of a results file is (its line: offset and length, in file
// `file` of several) and which run it is: rows kept by position, not
// parsed, while they are put in order.
struct RowAt {
  size_t point = 0;
  uint64_t offset = 0;
  uint32_t length = 0;
  uint32_t file = 0;
  int repeat = 0;
};
// In order of point and repeat; rows of one run stay in the order read.
void sort_by_run(std::vector<RowAt>& rows);
// A row's line (as CsvReader reads it) written as simloop writes rows.
std::string rewritten_row(std::string_view line);
// One CSV line with its newline.
std::string csv_line(const std::vector<std::string>& fields);

// A manifest (JSON) from text; throws StoreError naming `name`.
// Without `point_configs`, its list of points is left out as it is parsed
// (and, in a manifest of an older simloop, each point's configuration):
// most of a large manifest, which known_points reads from the text.
nlohmann::json parse_manifest(std::string_view text, const std::string& name,
                              bool point_configs = true);

// A manifest's text: `m` (without "points") as JSON, with `points`, the
// points array as text (one point a line), as its last member.
std::string manifest_text(const nlohmann::json& m, std::string_view points);
// The points array of a manifest's text written by manifest_text, as text;
// empty if the text does not end with one (a manifest written otherwise).
std::string_view manifest_points_text(std::string_view text);

// A point hash as sweeps write it (hex64: 16 lowercase hex digits) as its
// number; nullopt for any other text.
std::optional<uint64_t> hash_number(std::string_view text);

// Point hashes by index. Those written as sweeps write them are kept as
// numbers (8 bytes each, not a string on the heap: a million points take
// 8 MB); any other text is kept as it is and still compares as text.
class PointHashes {
 public:
  PointHashes() = default;
  PointHashes(std::initializer_list<std::string_view> texts) {
    for (const auto t : texts) push_back(t);
  }
  void reserve(size_t n) { numbers_.reserve(n); }
  void push_back(std::string_view text);
  void push_back(uint64_t number) { numbers_.push_back(number); }
  size_t size() const { return numbers_.size(); }
  bool empty() const { return numbers_.empty(); }
  // Point i's hash as its number, or nullopt if its text is not one.
  std::optional<uint64_t> number(size_t i) const {
    if (!odd_.empty() && odd_.contains(i)) return std::nullopt;
    return numbers_[i];
  }
  std::string text(size_t i) const;
  // Whether point i's hash is `text`, compared as text.
  bool is(size_t i, std::string_view text) const;
  bool operator==(const PointHashes&) const = default;

 private:
  std::vector<uint64_t> numbers_;
  std::unordered_map<size_t, std::string> odd_;  // index -> a hash not written as sweeps do
};

// The points a manifest lists: their hashes by index, and the repeats.
struct KnownPoints {
  PointHashes hashes;
  int repeats = 1;
};
// From a manifest parsed whole, or parsed without its points and its
// `text` (the list read there, each hash as it is, without a tree of a
// million strings). Throws StoreError naming `name` and the key when the
// manifest lacks them.
KnownPoints known_points(const nlohmann::json& manifest, const std::string& name,
                         std::string_view text = {});

// What identifies a row: its point, repeat and point hash, and its line.
struct RowId {
  size_t point = 0;
  int repeat = 0;
  std::string hash;
  size_t line = 0;
};
// The identity of every row; throws StoreError naming the file, line and
// column of a row whose point or repeat is not a number in range.
std::vector<RowId> row_ids(const Table& t, const std::string& name);
// The same a row at a time: the columns that identify a row (a StoreError
// if the header lacks one), and the identity of `row`, at `line`.
struct IdColumns {
  size_t point = 0, repeat = 0, hash = 0;
};
IdColumns id_columns(const std::vector<std::string>& header, const std::string& name);
RowId row_id(const std::vector<std::string>& row, const IdColumns& c, size_t line,
             const std::string& name);
// Where the rows' points are in a sweep whose points have `hashes`: each
// row hash -> the first index with it; hashes of no point are left out. A
// map of the rows' hashes, not of every point (a sweep may have ten
// million, its rows a few), kept by number where a hash is one (16
// lower-case hex digits, as simloop writes them): a few dozen bytes a row.
class PointIndex {
 public:
  PointIndex(const std::vector<RowId>& ids, const PointHashes& hashes);
  // The first index of a point with this hash, or nothing.
  std::optional<size_t> find(std::string_view hash) const;
  // Every row hash with its index (for tests and messages).
  std::unordered_map<std::string, size_t> all() const;

 private:
  std::unordered_map<uint64_t, size_t> by_number_;
  std::unordered_map<std::string, size_t> by_text_;  // hashes that are not numbers
};
inline PointIndex indices_of(const std::vector<RowId>& ids, const PointHashes& hashes) {
  return {ids, hashes};
}
// Throws StoreError listing the lines of rows whose point is not one of
// `known` (index out of range, another hash, or a repeat past repeats) nor,
// if given, of `also` (the points of a sweep resuming into them).
void check_known(const std::vector<RowId>& ids, const KnownPoints& known, const std::string& name,
                 const KnownPoints* also = nullptr);

// The text of a file of rows set aside (`existing`, possibly empty, named
// `name`) with `rows` of `header` added: its columns are the union of both
// (the file's first), and a run (point_hash, repeat) already there is not
// added again. Returns `existing` itself when nothing changes.
std::string aside_text(const std::string& existing, const std::string& name,
                       const std::vector<std::string>& header,
                       const std::vector<std::vector<std::string>>& rows);

// A results file's rows as a resume reads them: its header and, of each
// row, what identifies it, where its line is in the text (`at`, file 0;
// the row itself is read again from there when it is written) and whether
// it holds a result: about a hundred bytes a row, not the row's fields.
enum class RowStatus : uint8_t { result, error, crashed };
struct StoredRows {
  std::vector<std::string> header;
  std::vector<RowId> ids;
  std::vector<RowAt> at;
  std::vector<RowStatus> status;
};
// Reads CSV text as parse_csv does (a last line without its newline is
// dropped). Throws StoreError naming `name`, the line and the column.
StoredRows read_rows(std::string_view text, const std::string& name);
// The same, read from the file a piece at a time: what it holds is the
// rows' places, not the file's text.
StoredRows read_rows(const InputFile& file);
// The same from any source of pieces (report::CsvReader's).
StoredRows read_rows(report::CsvReader::Source read, const std::string& name);
// Whether the file has a whole line (a header, at least).
bool has_whole_line(const InputFile& file);
// Whether the file's last byte is not a '\n' (a write cut short).
bool ends_cut_short(const InputFile& file);

// Rows read again by where they are (RowAt::file indexes `files`), a window
// of each file at a time: rows in the order of the file read one read per
// window.
class RowLines {
 public:
  explicit RowLines(const std::vector<InputFile>& files) : files_(files), at_(files.size()) {}
  // Throws StoreError "NAME: changed while being read" if the row is no
  // longer there.
  std::string_view line(const RowAt& r);

 private:
  static constexpr size_t kWindow = size_t{1} << 16;
  struct Window {
    uint64_t start = 0;
    std::string text;
  };
  const std::vector<InputFile>& files_;
  std::vector<Window> at_;
};

// Resuming into existing results. Each point is identified by the hash of
// its resolved configuration, so a grown or shrunk sweep keeps the rows of
// the points it still has (re-indexed to their new place), drops the rows
// of points it no longer has, and runs the rest.
// Runs by (point, repeat) of a sweep of `repeats` repeats, as sorted
// numbers: eight bytes a run.
class RunSet {
 public:
  RunSet() = default;
  // `keys` are point * repeats + repeat, in any order, each once.
  RunSet(int repeats, std::vector<uint64_t> keys);
  bool contains(size_t point, int repeat) const;
  size_t size() const { return keys_.size(); }
  // Every run (for tests and messages).
  std::set<std::pair<size_t, int>> runs() const;

 private:
  uint64_t repeats_ = 1;
  std::vector<uint64_t> keys_;
};

struct ResumePlan {
  std::vector<RowAt> kept;     // in the file's order; `point` is the new index
  std::vector<RowAt> dropped;  // as they were
  RunSet done;                 // (new point, repeat) of kept rows
  size_t retried = 0;          // crashed rows to run again
  size_t rerun = 0;            // rows without a result to run again
  bool rewrite = false;        // kept rows differ from the file's
  // Where each new column comes from: an old column, or -1 (a swept key
  // the old file lacks).
  std::vector<int> from;
};
// `old` is the existing CSV, `hashes` the new sweep's point hashes by index,
// `header` its columns and `swept` its swept keys.
// Swept-key columns may come and go; any other difference of columns is a
// StoreError. Rows whose status is error (no result) are not kept, so they
// run again; with `retry_crashed`, nor are rows whose status is crashed.
// Neither is among `dropped`.
ResumePlan plan_resume(const StoredRows& old, const std::string& name, const PointHashes& hashes,
                       int repeats, const std::vector<std::string>& header,
                       const std::vector<std::string>& swept, bool retry_crashed);
// A kept row, from its line (`line`, read again from where `row` says), in
// the new header's columns; `setting(point, key)` is a point's value of a
// swept key the old file lacks.
std::vector<std::string> kept_row(
    const ResumePlan& plan, const RowAt& row, std::string_view line,
    const std::vector<std::string>& header,
    const std::function<std::string(size_t, const std::string&)>& setting);
// A row's fields, from its line as it was.
std::vector<std::string> stored_row(std::string_view line);

// A file written whole or not at all: report::write_file_atomic.
using report::write_file_atomic;

// An exclusive lock (flock) on a sweep's output, held for the life of this
// object by this process; the lock file holds the holder's pid and is
// removed when the holder lets go, or when a signal that would end the
// process unhandled (SIGINT, SIGTERM, SIGHUP) ends it. Taking it while another process holds it
// throws StoreError naming that pid; a lock file that is a symbolic link
// throws report::LinkError, and one that is anything else but an ordinary
// file (a device, a FIFO) report::OutputRefused: it is never opened or removed.
class StoreLock {
 public:
  explicit StoreLock(const std::filesystem::path& lock_file, const std::string& what);
  ~StoreLock();
  StoreLock(const StoreLock&) = delete;
  StoreLock& operator=(const StoreLock&) = delete;
  // Whether some process holds the lock on `lock_file` now.
  static bool held(const std::filesystem::path& lock_file);
  // The lock's file descriptor: a forked child closes it, so that the lock
  // is not held on by processes that outlive this one.
  int fd() const { return fd_; }

 private:
  std::filesystem::path path_;
  long owner_ = 0;  // the pid that took it
  int fd_ = -1;
  int slot_ = -1;  // where the signal handler finds its path
};

// The append-only results file of a sweep. Each finished run is one line
// written at once to a file opened O_APPEND, so rows already written
// survive a crash or an interrupt of the sweep; fsync, which makes them
// survive a crash of the system too, runs at most every `sync_every` (it
// costs milliseconds a row on a disk) and by sync().
class ResultStore {
 public:
  // Opens `path` for appending rows of `header`; it must exist with that
  // header (write it with write_file_atomic first).
  ResultStore(const std::filesystem::path& path, const std::vector<std::string>& header,
              std::chrono::milliseconds sync_every = std::chrono::milliseconds(250));
  ~ResultStore();  // syncs what is not yet
  ResultStore(const ResultStore&) = delete;
  ResultStore& operator=(const ResultStore&) = delete;

  // Appends one row (fields in header order). A short or failed write
  // throws report::WriteError with its cause (e.g. No space left on device)
  // and cuts the file back to its last whole row; a failed fsync throws it
  // too.
  void append(const std::vector<std::string>& fields);
  // fsync now if rows were written since the last; WriteError on failure.
  void sync();
  int fd() const { return fd_; }
  size_t syncs() const { return syncs_; }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  size_t columns_ = 0;
  std::chrono::milliseconds sync_every_;
  std::chrono::steady_clock::time_point synced_at_;
  bool unsynced_ = false;
  size_t syncs_ = 0;
};

}  // namespace simloop::sweep
