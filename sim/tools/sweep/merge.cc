// Merging the results of sweep shards into one CSV and its manifest.
//
// Memory stays bounded by the largest shard, not the study: each shard's
// text is read and checked in turn, keeping of each row only where its
// line is (about 32 bytes); the merged rows are then read again from the
// files, in order of point and repeat, and written as they come.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>
#include <utility>

#include "sim/report/safe_file.h"
#include "sim/tools/sweep/runner.h"

namespace simloop::sweep {

namespace fs = std::filesystem;
using nlohmann::json;

MergeSummary merge(const fs::path& out, const std::vector<fs::path>& shards) {
  if (shards.empty()) throw MismatchError("merge: no shard results given");
  // Never write over an input: compare the files themselves, not names.
  auto same_file = [](const fs::path& a, const fs::path& b) {
    std::error_code ec;
    if (fs::exists(a, ec) && fs::exists(b, ec)) return fs::equivalent(a, b, ec);
    return fs::weakly_canonical(a, ec) == fs::weakly_canonical(b, ec);
  };
  for (const auto& s : shards)
    if (same_file(out, s) || same_file(manifest_of(out), manifest_of(s)))
      throw StoreError(fmt::format(
          "{}: this is also one of the merge's inputs; write the merged results to a new file",
          out.string()));
  // Refuse shards without manifests before touching the output's place.
  for (const auto& s : shards)
    if (!fs::exists(manifest_of(s)))
      throw MismatchError(fmt::format("{}: no manifest ({}); cannot tell which sweep it holds",
                                      s.string(), manifest_of(s).string()));
  // Merged into a stream (a FIFO, /dev/stdout): the rows alone, with no
  // manifest or lock named after it (they would be files beside a device).
  const bool stream = report::is_stream(out);
  if (!stream) report::require_ordinary(manifest_of(out), "it is the merged results' manifest");
  std::optional<StoreLock> lock;
  if (!stream) lock.emplace(lock_of(out), out.string());
  json first;
  std::string first_text;         // the first manifest's text, while its points are spliced
  std::string_view first_points;  // its points array, in first_text
  std::vector<std::string> header;
  std::vector<InputFile> files;  // open from the first read to the last: see InputFile
  std::vector<RowAt> rows;       // every shard's rows, as read
  MergeSummary sum;
  json from = json::array();
  KnownPoints first_known;
  for (const auto& s : shards) {
    const fs::path mp = manifest_of(s);
    if (!fs::exists(mp))
      throw MismatchError(fmt::format("{}: no manifest ({}); cannot tell which sweep it holds",
                                      s.string(), mp.string()));
    // The first manifest becomes the merged one; of the others only what
    // identifies their sweep and points is needed. The first's points are
    // kept as the text they are (not a tree of every point's configuration)
    // when it was written with them last, as sweep writes manifests.
    json m;
    KnownPoints known;
    if (first.is_null()) {
      first_text = read_text(mp);
      first_points = manifest_points_text(first_text);
      m = parse_manifest(first_text, mp.string(), first_points.empty());
      known = known_points(m, mp.string(), first_text);
      first_known = known;
      if (first_points.empty()) first_text.clear();
      first = m;
    } else {
      const std::string text = read_text(mp);
      m = parse_manifest(text, mp.string(), false);
      known = known_points(m, mp.string(), text);
      if (m.value("experiment_hash", json()) != first.value("experiment_hash", json()))
        throw MismatchError(fmt::format(
            "{}: experiment hash {} differs from {}'s {}: these are results of different "
            "sweeps; not merging",
            s.string(), m.value("experiment_hash", json("?")).dump(), shards.front().string(),
            first.value("experiment_hash", json("?")).dump()));
    }
    // Its rows, checked against its manifest; of each, only where it is.
    files.emplace_back(s);
    StoredRows stored = read_rows(files.back());
    if (header.empty()) {
      header = stored.header;
    } else if (stored.header != header) {
      throw MismatchError(
          fmt::format("{}: its columns differ from {}'s", s.string(), shards.front().string()));
    }
    check_known(stored.ids, known, s.string());
    for (RowAt& r : stored.at) {
      r.file = static_cast<uint32_t>(files.size() - 1);
      rows.push_back(r);
    }
    const std::string status = effective_status(m, s);
    if (status == "running")
      spdlog::warn("{}: its sweep is still running; merging the rows it has so far", s.string());
    from.push_back({{"results", fs::absolute(s).string()},
                    {"shard", m.value("shard", json())},
                    {"status", status}});
  }
  // In order of point and repeat; of one run recorded twice, the first read.
  sort_by_run(rows);
  report::AtomicFile csv(out);
  csv.write(csv_line(header));
  // Shards are mostly in order of point: most rows are in the window the
  // last one was.
  RowLines lines(files);
  for (size_t i = 0; i < rows.size(); ++i) {
    if (i > 0 && rows[i].point == rows[i - 1].point && rows[i].repeat == rows[i - 1].repeat) {
      ++sum.duplicates;
      continue;
    }
    csv.write(rewritten_row(lines.line(rows[i])));
    ++sum.rows;
  }
  const KnownPoints& known = first_known;
  const size_t expected = known.hashes.size() * static_cast<size_t>(known.repeats);
  sum.missing = expected > sum.rows ? expected - sum.rows : 0;
  json m = std::move(first);  // not needed after this: no second copy of every point
  m["shard"] = nullptr;
  m["merged_from"] = from;
  m["merged_at"] = utc_now();
  m["results"] = out.filename().string();
  m["runs"] = expected;
  m["runs_recorded"] = sum.rows;
  m["status"] = sum.missing == 0 ? "complete" : "incomplete";
  m.erase("pid");
  // The results are whole in their temporary file before the manifest is
  // written, and put in place after it, as before.
  csv.sync();
  if (stream) {
    spdlog::info("{}: a stream; the merged rows only, no manifest beside them", out.string());
  } else if (first_points.empty()) {
    write_file_atomic(manifest_of(out), m.dump(2) + "\n");
  } else {
    m.erase("points");
    write_file_atomic(manifest_of(out), manifest_text(m, first_points));
  }
  csv.commit();
  return sum;
}

}  // namespace simloop::sweep
