// Fuzzes what `simloop sweep --resume` and `simloop merge` read back from a
// sweep's output: the results CSV and its manifest. The input is the CSV
// text, a line "#manifest", then the manifest's text. Everything read must
// either be used or refused with a StoreError; nothing may crash, and what
// a resume keeps must be consistent with what it was given.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "sim/tools/sweep/sweep.h"

namespace {

using simloop::sweep::StoreError;
namespace sw = simloop::sweep;

// Aborts naming the line of the check that failed.
void check(bool ok, int line = __builtin_LINE()) {
  if (ok) return;
  std::fprintf(stderr, "store_fuzz.cc:%d: check failed\n", line);
  std::abort();
}

// `text` read a few bytes at a time, as a file is read a piece at a time.
simloop::report::CsvReader::Source in_pieces(std::string_view text) {
  const size_t piece = 1 + text.size() % 7;
  return [text, piece](uint64_t off, size_t len) {
    return off >= text.size() ? std::string() : std::string(text.substr(off, std::min(len, piece)));
  };
}

void one(std::string_view csv, std::string_view manifest) {
  sw::Table t;
  std::vector<sw::RowId> ids;
  try {
    t = sw::parse_csv(csv, "r.csv");
    check(t.rows.size() == t.lines.size());
    for (const auto& r : t.rows) check(r.size() == t.header.size());
    ids = sw::row_ids(t, "r.csv");
    check(ids.size() == t.rows.size());
  } catch (const StoreError&) {
    // What a resume reads refuses the same text.
    try {
      sw::read_rows(csv, "r.csv");
      check(false);
    } catch (const StoreError&) {
    }
    try {
      sw::read_rows(in_pieces(csv), "r.csv");
      check(false);
    } catch (const StoreError&) {
    }
    return;
  }
  // A resume reads each row's identity and place: the same rows, read
  // again from their place, as the table holds.
  const sw::StoredRows stored = sw::read_rows(csv, "r.csv");
  check(stored.header == t.header && stored.ids.size() == ids.size() &&
        stored.at.size() == ids.size() && stored.status.size() == ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    check(stored.ids[i].hash == ids[i].hash && stored.ids[i].line == ids[i].line &&
          stored.ids[i].point == ids[i].point && stored.ids[i].repeat == ids[i].repeat);
    const auto& at = stored.at[i];
    check(sw::stored_row(std::string_view(csv).substr(at.offset, at.length)) == t.rows[i]);
  }
  // Read a piece at a time: the same rows at the same places.
  const sw::StoredRows pieces = sw::read_rows(in_pieces(csv), "r.csv");
  check(pieces.header == stored.header && pieces.ids.size() == stored.ids.size());
  for (size_t i = 0; i < ids.size(); ++i)
    check(pieces.at[i].offset == stored.at[i].offset &&
          pieces.at[i].length == stored.at[i].length && pieces.ids[i].line == ids[i].line &&
          pieces.status[i] == stored.status[i]);
  // The manifest, and the rows checked against it (resume and merge).
  sw::PointHashes hashes;
  int repeats = 1;
  try {
    const auto m = sw::parse_manifest(manifest, "r.json");
    const auto known = sw::known_points(m, "r.json");
    hashes = known.hashes;
    repeats = known.repeats;
    sw::check_known(ids, known, "r.csv");
    for (const auto& id : ids)
      check(id.point < known.hashes.size() && known.hashes.text(id.point) == id.hash &&
            known.hashes.is(id.point, id.hash) && id.repeat < known.repeats);
  } catch (const StoreError&) {
    // A resume without a usable manifest keeps rows by their hashes.
    hashes = {};
    for (const auto& id : ids)
      if (hashes.size() < 64) hashes.push_back(std::string_view(id.hash));
  }
  // A resume into a sweep of these points, one swept key more.
  std::vector<std::string> header = t.header;
  header.push_back("fuzz.key");
  try {
    const auto plan = sw::plan_resume(stored, "r.csv", hashes, repeats, header, {"fuzz.key"}, true);
    // Every row is kept, set aside, or run again (no result, or crashed).
    check(plan.kept.size() + plan.dropped.size() + plan.retried + plan.rerun == t.rows.size());
    std::vector<std::vector<std::string>> dropped, kept;
    auto line = [&](const sw::RowAt& r) {
      return std::string_view(csv).substr(r.offset, r.length);
    };
    for (const auto& r : plan.dropped) dropped.push_back(sw::stored_row(line(r)));
    for (const auto& r : plan.kept)
      kept.push_back(sw::kept_row(plan, r, line(r), header, [&](size_t i, const std::string&) {
        check(i < hashes.size());
        return std::string("v");
      }));
    // Rows set aside go in a file that holds each run once.
    const std::string aside = sw::aside_text("", "d.csv", t.header, dropped);
    const auto set_aside = sw::parse_csv(aside, "d.csv");
    check(set_aside.rows.size() <= dropped.size());
    // Setting the same rows aside again adds nothing (but where a carriage
    // return in a field was written as a space, see below).
    bool cr = false;
    for (const auto& c : t.header) cr = cr || c.find('\r') != std::string::npos;
    for (const auto& r : dropped)
      for (const auto& f : r) cr = cr || f.find('\r') != std::string::npos;
    if (!cr) check(sw::aside_text(aside, "d.csv", t.header, dropped) == aside);
    check(plan.done.size() == kept.size());
    for (const auto& r : kept) check(r.size() == header.size());
    const auto runs = plan.done.runs();
    check(runs.size() == plan.done.size());
    for (const auto& [point, repeat] : runs)
      check(point < hashes.size() && repeat < repeats && plan.done.contains(point, repeat));
    // What a resume would write reads back as the same rows.
    std::string text = sw::csv_line(header);
    for (const auto& r : kept) text += sw::csv_line(r);
    const auto back = sw::parse_csv(text, "again.csv");
    // (A carriage return inside a quoted field is written as a space.)
    for (auto& r : kept)
      for (auto& f : r)
        for (auto& c : f)
          if (c == '\r') c = ' ';
    check(back.header.size() == header.size() && back.rows == kept);
  } catch (const StoreError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  constexpr std::string_view sep = "\n#manifest\n";
  const size_t at = in.find(sep);
  if (at == std::string_view::npos) {
    one(in, "");
  } else {
    one(in.substr(0, at + 1), in.substr(at + sep.size()));
  }
  return 0;
}
