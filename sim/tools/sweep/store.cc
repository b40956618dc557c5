// The result store of a sweep: its CSV and manifest read back with every
// fault named by file and line, and the plan of a resume (the lock and the
// appended rows are store_lock.cc).
#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <unordered_map>
#include <utility>

#include "sim/report/csv_table.h"
#include "sim/report/safe_file.h"
#include "sim/report/table.h"
#include "sim/support/text.h"
#include "sim/support/yaml_input.h"
#include "sim/tools/sweep/sweep.h"

namespace simloop::sweep {

namespace fs = std::filesystem;

Table parse_csv(std::string_view text, const std::string& name) {
  try {
    return report::read_csv_table(text, name, {.whole_lines = true});
  } catch (const report::CsvError& e) {
    throw StoreError(e.what());
  }
}

InputFile::InputFile(const fs::path& path) : name_(path.string()) {
  // O_NONBLOCK: a FIFO here is refused below, not waited on (with no
  // writer its open would never return); an ordinary file reads as ever.
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd_ < 0) throw StoreError(fmt::format("{}: cannot read: {}", name_, std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd_, &st) == 0 && !S_ISREG(st.st_mode)) {
    ::close(fd_);
    throw StoreError(fmt::format("{}: is not a regular file", name_));
  }
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

InputFile::InputFile(InputFile&& o) noexcept
    : fd_(std::exchange(o.fd_, -1)), name_(std::move(o.name_)) {}

std::string InputFile::read(uint64_t off, size_t len) const {
  std::string out;
  char buf[65536];
  while (out.size() < len) {
    const size_t want = std::min(sizeof buf, len - out.size());
    const ssize_t n = ::pread(fd_, buf, want, static_cast<off_t>(off + out.size()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw StoreError(fmt::format("{}: cannot read: {}", name_, std::strerror(errno)));
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

uint64_t InputFile::size() const {
  struct stat st {};
  if (::fstat(fd_, &st) != 0)
    throw StoreError(fmt::format("{}: cannot read: {}", name_, std::strerror(errno)));
  return static_cast<uint64_t>(st.st_size);
}

std::string read_text(const fs::path& path) {
  return InputFile(path).read();
}

void sort_by_run(std::vector<RowAt>& rows) {
  std::stable_sort(rows.begin(), rows.end(), [](const RowAt& a, const RowAt& b) {
    return std::pair(a.point, a.repeat) < std::pair(b.point, b.repeat);
  });
}

namespace {
// A row's fields from its line, as CsvReader read them.
std::vector<std::string> fields_of(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);  // as CsvReader drops it
  return report::split_csv_line(std::string(line));
}
}  // namespace

std::string rewritten_row(std::string_view line) {
  return csv_line(fields_of(line));
}

Table read_csv(const fs::path& path) {
  return parse_csv(read_text(path), path.string());
}

std::string csv_line(const std::vector<std::string>& fields) {
  std::string line;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i != 0) line += ',';
    line += csv_field(fields[i]);
  }
  line += '\n';
  return line;
}

nlohmann::json parse_manifest(std::string_view text, const std::string& name, bool point_configs) {
  try {
    // Depth 1: a member of the manifest; depth 3: a member of a point, an
    // object in the points array (as older manifests wrote them). The list
    // of points is left out only where known_points can read it from the
    // text: last, as sweeps write it (not in a manifest rewritten by
    // another tool, with its members in another order).
    const bool points_as_text = !point_configs && !manifest_points_text(text).empty();
    const nlohmann::json::parser_callback_t keep =
        [point_configs, points_as_text](int depth, nlohmann::json::parse_event_t event,
                                        nlohmann::json& parsed) {
          if (point_configs || event != nlohmann::json::parse_event_t::key) return true;
          return !((depth == 1 && points_as_text && parsed == "points") ||
                   (depth == 3 && parsed == "config"));
        };
    auto j = nlohmann::json::parse(text, keep);
    if (!j.is_object())
      throw StoreError(fmt::format("{}: not a manifest (not a JSON object)", name));
    return j;
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte is where the parser stopped: give it as a line and column.
    const auto at = support::json_error_position(text, e.byte);
    throw StoreError(
        fmt::format("{}:{}:{}: not a manifest: the JSON is malformed", name, at.line, at.col));
  } catch (const nlohmann::json::exception& e) {
    // Well-formed but unusable, e.g. a number out of range (1e6473).
    throw StoreError(fmt::format("{}: not a manifest: {}", name, e.what()));
  }
}

namespace {
// The hashes of a points array as sweeps write it (["...", "...", ...]),
// read as text; nullopt if it is not one (a manifest of an older simloop).
std::optional<PointHashes> hashes_of(std::string_view seg) {
  PointHashes out;
  size_t i = 1;  // after '['
  auto blank = [&] {
    while (i < seg.size() && (seg[i] == ' ' || seg[i] == '\n')) ++i;
  };
  blank();
  if (i < seg.size() && seg[i] == ']') return out;
  for (;;) {
    blank();
    if (i >= seg.size() || seg[i] != '"') return std::nullopt;
    const size_t end = seg.find('"', i + 1);
    if (end == std::string_view::npos) return std::nullopt;
    const std::string_view h = seg.substr(i + 1, end - i - 1);
    if (h.find('\\') != std::string_view::npos) return std::nullopt;  // escapes: parse it
    out.push_back(h);
    i = end + 1;
    blank();
    if (i >= seg.size()) return std::nullopt;
    if (seg[i] == ']') return out;
    if (seg[i] != ',') return std::nullopt;
    ++i;
  }
}
}  // namespace

KnownPoints known_points(const nlohmann::json& m, const std::string& name, std::string_view text) {
  KnownPoints k;
  const std::string missing =
      fmt::format("{}: points: missing or not a list; not a sweep manifest", name);
  const nlohmann::json* pts = nullptr;
  nlohmann::json parsed;  // the points of a text that does not list hashes alone
  const std::string_view seg = text.empty() ? std::string_view() : manifest_points_text(text);
  if (const auto it = m.find("points"); it != m.end()) {
    pts = &*it;
  } else if (seg.empty()) {
    throw StoreError(missing);
  } else if (auto h = hashes_of(seg)) {
    k.hashes = std::move(*h);
  } else {
    parsed = nlohmann::json::parse(seg);
    pts = &parsed;
  }
  if (pts != nullptr && !pts->is_array()) throw StoreError(missing);
  for (size_t i = 0; pts != nullptr && i < pts->size(); ++i) {
    const auto& p = (*pts)[i];
    if (p.is_string()) {  // as sweeps write them: the hash, at its index
      k.hashes.push_back(std::string_view(p.get_ref<const std::string&>()));
      continue;
    }
    // As older sweeps wrote them: {"index": i, "hash": ..., ...}.
    const auto h = p.is_object() ? p.find("hash") : p.end();
    const auto ix = p.is_object() ? p.find("index") : p.end();
    if (h == p.end() || !h->is_string() || ix == p.end() || !ix->is_number_unsigned() ||
        ix->get<uint64_t>() != i)
      throw StoreError(fmt::format("{}: points[{}]: expected a point hash (a string)", name, i));
    k.hashes.push_back(std::string_view(h->get_ref<const std::string&>()));
  }
  const auto r = m.find("repeats");
  if (r == m.end() || !r->is_number_unsigned() || r->get<uint64_t>() < 1 ||
      r->get<uint64_t>() > 1000000)
    throw StoreError(fmt::format("{}: repeats: missing or not an integer in [1, 1000000]", name));
  k.repeats = static_cast<int>(r->get<uint64_t>());
  return k;
}

namespace {
std::optional<uint64_t> parse_index(const std::string& s, uint64_t max) {
  if (s.empty() || s.size() > 18 ||
      !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  const uint64_t v = std::stoull(s);
  if (v > max) return std::nullopt;
  return v;
}
}  // namespace

IdColumns id_columns(const std::vector<std::string>& header, const std::string& name) {
  auto at = [&](std::string_view c) {
    return static_cast<size_t>(std::find(header.begin(), header.end(), c) - header.begin());
  };
  const IdColumns c{at("point"), at("repeat"), at("point_hash")};
  if (c.point == header.size() || c.repeat == header.size() || c.hash == header.size())
    throw StoreError(
        fmt::format("{}: not sweep results: the header lacks point, repeat or point_hash", name));
  return c;
}

RowId row_id(const std::vector<std::string>& r, const IdColumns& c, size_t line,
             const std::string& name) {
  const auto p = parse_index(r[c.point], kMaxPoints);
  if (!p)
    throw StoreError(fmt::format("{}:{}: point: expected an index in [0, {}], got '{}'", name, line,
                                 kMaxPoints, r[c.point]));
  const auto rep = parse_index(r[c.repeat], 1000000);
  if (!rep)
    throw StoreError(fmt::format("{}:{}: repeat: expected an integer in [0, 1000000], got '{}'",
                                 name, line, r[c.repeat]));
  return {static_cast<size_t>(*p), static_cast<int>(*rep), r[c.hash], line};
}

std::vector<RowId> row_ids(const Table& t, const std::string& name) {
  const IdColumns c = id_columns(t.header, name);
  std::vector<RowId> out;
  out.reserve(t.rows.size());
  for (size_t i = 0; i < t.rows.size(); ++i)
    out.push_back(row_id(t.rows[i], c, i < t.lines.size() ? t.lines[i] : i + 2, name));
  return out;
}

void check_known(const std::vector<RowId>& ids, const KnownPoints& known, const std::string& name,
                 const KnownPoints* also) {
  auto lists = [](const KnownPoints& k, const RowId& id) {
    return id.point < k.hashes.size() && k.hashes.is(id.point, id.hash) && id.repeat < k.repeats;
  };
  std::vector<std::string> bad;
  size_t count = 0;
  for (const auto& id : ids) {
    if (lists(known, id) || (also != nullptr && lists(*also, id))) continue;
    if (++count <= 8)
      bad.push_back(id.point >= known.hashes.size()
                        ? fmt::format("line {} (point {}: the sweep has {})", id.line, id.point,
                                      known.hashes.size())
                    : id.repeat >= known.repeats
                        ? fmt::format("line {} (repeat {}: the sweep has {})", id.line, id.repeat,
                                      known.repeats)
                        : fmt::format("line {} (point {} hash {}, not {})", id.line, id.point,
                                      id.hash, known.hashes.text(id.point)));
  }
  if (count > 0)
    throw StoreError(fmt::format("{}: {} row{} of points its manifest does not list: {}{}", name,
                                 count, count == 1 ? "" : "s", fmt::join(bad, ", "),
                                 count > bad.size() ? ", ..." : ""));
}

std::optional<uint64_t> hash_number(std::string_view text) {
  if (text.size() != 16) return std::nullopt;
  uint64_t v = 0;
  for (const char c : text) {
    const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) return std::nullopt;
    v = v << 4 | static_cast<uint64_t>(d);
  }
  return v;
}

void PointHashes::push_back(std::string_view text) {
  if (const auto n = hash_number(text)) return numbers_.push_back(*n);
  odd_.emplace(numbers_.size(), text);
  numbers_.push_back(0);
}

std::string PointHashes::text(size_t i) const {
  const auto n = number(i);
  return n ? hex64(*n) : odd_.at(i);
}

bool PointHashes::is(size_t i, std::string_view text) const {
  const auto n = number(i);
  if (!n) return odd_.at(i) == text;
  const auto t = hash_number(text);
  return t && *t == *n;  // the same number is the same 16 digits
}

PointIndex::PointIndex(const std::vector<RowId>& ids, const PointHashes& hashes) {
  for (const auto& id : ids) {
    if (const auto n = hash_number(id.hash))
      by_number_.emplace(*n, SIZE_MAX);
    else
      by_text_.emplace(id.hash, SIZE_MAX);
  }
  // A number is one text and a text that is not a number is no number: each
  // point is looked up the one way its hash is kept.
  for (size_t i = 0; i < hashes.size(); ++i) {
    size_t* index = nullptr;
    if (const auto n = hashes.number(i)) {
      if (const auto it = by_number_.find(*n); it != by_number_.end()) index = &it->second;
    } else if (!by_text_.empty()) {
      if (const auto it = by_text_.find(hashes.text(i)); it != by_text_.end()) index = &it->second;
    }
    if (index != nullptr && *index == SIZE_MAX) *index = i;
  }
  std::erase_if(by_number_, [](const auto& kv) { return kv.second == SIZE_MAX; });
  std::erase_if(by_text_, [](const auto& kv) { return kv.second == SIZE_MAX; });
}

std::optional<size_t> PointIndex::find(std::string_view hash) const {
  if (const auto n = hash_number(hash)) {
    const auto it = by_number_.find(*n);
    return it == by_number_.end() ? std::nullopt : std::optional(it->second);
  }
  const auto it = by_text_.find(std::string(hash));
  return it == by_text_.end() ? std::nullopt : std::optional(it->second);
}

std::unordered_map<std::string, size_t> PointIndex::all() const {
  std::unordered_map<std::string, size_t> out(by_text_.begin(), by_text_.end());
  for (const auto& [n, i] : by_number_) out.emplace(hex64(n), i);
  return out;
}

namespace {

StoredRows rows_of(report::CsvReader&& r, const std::string& name) {
  StoredRows out;
  try {
    out.header = r.header();
    const IdColumns c = id_columns(out.header, name);
    const auto sc = r.column("status");
    while (r.next()) {
      RowId id = row_id(r.cells(), c, r.line(), name);
      out.at.push_back(
          {id.point, r.line_offset(), static_cast<uint32_t>(r.line_length()), 0, id.repeat});
      const std::string& status = sc ? r.cell(*sc) : std::string();
      // The states a sweep records; anything else is a damaged or foreign row.
      if (sc && status != "ok" && status != "fault" && status != "error" && status != "crashed")
        throw StoreError(fmt::format("{}:{}: status '{}': expected ok, fault, error or crashed",
                                     name, r.line(), config::printable(status, 40)));
      out.status.push_back(status == "error"     ? RowStatus::error
                           : status == "crashed" ? RowStatus::crashed
                                                 : RowStatus::result);
      out.ids.push_back(std::move(id));
    }
  } catch (const report::CsvError& e) {
    throw StoreError(e.what());
  }
  return out;
}

}  // namespace

StoredRows read_rows(std::string_view text, const std::string& name) {
  try {
    return rows_of(report::CsvReader(text, name, {.whole_lines = true}), name);
  } catch (const report::CsvError& e) {
    throw StoreError(e.what());
  }
}

StoredRows read_rows(report::CsvReader::Source read, const std::string& name) {
  try {
    return rows_of(report::CsvReader(std::move(read), name, {.whole_lines = true}), name);
  } catch (const report::CsvError& e) {
    throw StoreError(e.what());
  }
}

StoredRows read_rows(const InputFile& file) {
  return read_rows([&file](uint64_t off, size_t len) { return file.read(off, len); }, file.name());
}

bool has_whole_line(const InputFile& file) {
  constexpr size_t kPiece = size_t{1} << 16;
  for (uint64_t off = 0;; off += kPiece) {
    const std::string piece = file.read(off, kPiece);
    if (piece.find('\n') != std::string::npos) return true;
    if (piece.size() < kPiece) return false;
  }
}

bool ends_cut_short(const InputFile& file) {
  const uint64_t n = file.size();
  return n > 0 && file.read(n - 1, 1) != "\n";
}

std::string_view RowLines::line(const RowAt& r) {
  Window& w = at_[r.file];
  if (r.offset < w.start || r.offset + r.length > w.start + w.text.size()) {
    w.start = r.offset;
    w.text = files_[r.file].read(r.offset, std::max<size_t>(r.length, kWindow));
    if (w.text.size() < r.length)  // (a file is only appended to while it is read)
      throw StoreError(fmt::format("{}: changed while being read", files_[r.file].name()));
  }
  return {w.text.data() + (r.offset - w.start), r.length};
}

RunSet::RunSet(int repeats, std::vector<uint64_t> keys)
    : repeats_(static_cast<uint64_t>(repeats)), keys_(std::move(keys)) {
  std::sort(keys_.begin(), keys_.end());
}

bool RunSet::contains(size_t point, int repeat) const {
  if (repeat < 0 || static_cast<uint64_t>(repeat) >= repeats_) return false;
  return std::binary_search(keys_.begin(), keys_.end(),
                            point * repeats_ + static_cast<uint64_t>(repeat));
}

std::set<std::pair<size_t, int>> RunSet::runs() const {
  std::set<std::pair<size_t, int>> out;
  for (const uint64_t k : keys_) out.emplace(k / repeats_, static_cast<int>(k % repeats_));
  return out;
}

ResumePlan plan_resume(const StoredRows& old, const std::string& name, const PointHashes& hashes,
                       int repeats, const std::vector<std::string>& header,
                       const std::vector<std::string>& swept, bool retry_crashed) {
  // Columns: the same but for swept keys, which may come and go.
  auto is_key = [&](const std::string& c) {
    return std::find(swept.begin(), swept.end(), c) != swept.end() ||
           c.find('.') != std::string::npos;
  };
  std::vector<std::string> a, b;
  for (const auto& c : old.header)
    if (!is_key(c)) a.push_back(c);
  for (const auto& c : header)
    if (!is_key(c)) b.push_back(c);
  // A sweep may add columns (a stack it now chooses has its own: its rows
  // are kept with those empty); it must keep every column the file has.
  std::vector<std::string> gone;
  for (const auto& c : a)
    if (std::find(b.begin(), b.end(), c) == b.end()) gone.push_back(c);
  if (!gone.empty())
    throw StoreError(fmt::format(
        "{}: its columns {} are not this sweep's (only swept keys may come and go); not resuming "
        "into it",
        name, fmt::join(gone, ", ")));
  const auto index_of = indices_of(old.ids, hashes);  // where each row's point is now
  std::vector<std::pair<uint64_t, uint32_t>> done;    // (run, row) of each kept row
  ResumePlan plan;
  plan.rewrite = old.header != header;
  for (const auto& c : header) {
    const auto at = std::find(old.header.begin(), old.header.end(), c);
    plan.from.push_back(at == old.header.end() ? -1 : static_cast<int>(at - old.header.begin()));
  }
  for (size_t i = 0; i < old.ids.size(); ++i) {
    const auto& id = old.ids[i];
    const auto at = index_of.find(id.hash);
    if (!at || id.repeat >= repeats) {
      plan.dropped.push_back(old.at[i]);
      plan.rewrite = true;
      continue;
    }
    // A row that carries no result (status error: the run ended without
    // saying how it went) is run again, and with retry_crashed a crashed one.
    const RowStatus status = old.status[i];
    if (status == RowStatus::error || (retry_crashed && status == RowStatus::crashed)) {
      ++(status == RowStatus::error ? plan.rerun : plan.retried);
      plan.rewrite = true;
      continue;
    }
    if (*at != id.point) plan.rewrite = true;
    RowAt kept = old.at[i];
    kept.point = *at;
    plan.kept.push_back(kept);
    done.emplace_back(*at * static_cast<uint64_t>(repeats) + static_cast<uint64_t>(id.repeat),
                      static_cast<uint32_t>(i));
  }
  // A run kept twice: the first row, in the file's order, whose run an
  // earlier row already holds.
  std::sort(done.begin(), done.end());
  size_t twice = SIZE_MAX;
  for (size_t k = 1; k < done.size(); ++k)
    if (done[k].first == done[k - 1].first && (k < 2 || done[k - 2].first != done[k].first))
      twice = std::min<size_t>(twice, done[k].second);
  if (twice != SIZE_MAX) {
    const RowId& id = old.ids[twice];
    throw StoreError(fmt::format("{}:{}: point {} repeat {} is recorded twice", name, id.line,
                                 id.point, id.repeat));
  }
  std::vector<uint64_t> keys;
  keys.reserve(done.size());
  for (const auto& [key, row] : done) keys.push_back(key);
  done = {};
  plan.done = RunSet(repeats, std::move(keys));
  return plan;
}

std::vector<std::string> stored_row(std::string_view line) {
  return fields_of(line);
}

std::vector<std::string> kept_row(
    const ResumePlan& plan, const RowAt& row, std::string_view line,
    const std::vector<std::string>& header,
    const std::function<std::string(size_t, const std::string&)>& setting) {
  std::vector<std::string> in = stored_row(line);
  std::vector<std::string> out;
  out.reserve(header.size());
  for (size_t k = 0; k < header.size(); ++k) {
    if (header[k] == "point") {
      out.push_back(std::to_string(row.point));
    } else if (plan.from[k] >= 0 && static_cast<size_t>(plan.from[k]) < in.size()) {
      out.push_back(std::move(in[static_cast<size_t>(plan.from[k])]));
    } else {
      out.push_back(setting(row.point, header[k]));
    }
  }
  return out;
}

std::string aside_text(const std::string& existing, const std::string& name,
                       const std::vector<std::string>& header,
                       const std::vector<std::vector<std::string>>& rows) {
  Table t;
  if (existing.find('\n') != std::string::npos) t = parse_csv(existing, name);
  // The union of the columns: those already there, then the new ones.
  std::vector<std::string> cols = t.header;
  for (const auto& c : header)
    if (std::find(cols.begin(), cols.end(), c) == cols.end()) cols.push_back(c);
  const int hc = std::find(cols.begin(), cols.end(), "point_hash") - cols.begin();
  const int rc = std::find(cols.begin(), cols.end(), "repeat") - cols.begin();
  if (static_cast<size_t>(hc) == cols.size() || static_cast<size_t>(rc) == cols.size())
    throw StoreError(
        fmt::format("{}: not sweep results: the header lacks repeat or point_hash", name));
  std::set<std::pair<std::string, std::string>> seen;
  std::string text = csv_line(cols);
  size_t added = 0;
  auto add = [&](const std::vector<std::string>& from, const std::vector<std::string>& row) {
    std::vector<std::string> out;
    out.reserve(cols.size());
    for (const auto& c : cols) {
      const auto at = std::find(from.begin(), from.end(), c);
      out.push_back(at == from.end() ? "" : row[static_cast<size_t>(at - from.begin())]);
    }
    // A run is kept aside once: the same point and repeat is the same run.
    if (!seen.emplace(out[static_cast<size_t>(hc)], out[static_cast<size_t>(rc)]).second) return;
    text += csv_line(out);
    ++added;
  };
  for (const auto& r : t.rows) add(t.header, r);
  const size_t before = added;
  for (const auto& r : rows) add(header, r);
  if (added == before && cols == t.header) return existing;
  return text;
}

}  // namespace simloop::sweep
