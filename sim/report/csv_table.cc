#include "sim/report/csv_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>

#include "sim/report/table.h"
#include "sim/support/input_file.h"

namespace simloop::report {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kBlanks = " \t\r";

std::string_view trimmed(std::string_view s) {
  const size_t first = s.find_first_not_of(kBlanks);
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(kBlanks) + 1 - first);
}

}  // namespace

CsvReader::CsvReader(std::string_view text, std::string name, CsvOptions opt)
    : text_(text), name_(std::move(name)), opt_(std::move(opt)) {
  read_header();
}

CsvReader::CsvReader(Source read, std::string name, CsvOptions opt)
    : source_(std::move(read)), name_(std::move(name)), opt_(std::move(opt)) {
  source_done_ = false;
  read_header();
}

bool CsvReader::more() {
  constexpr size_t kPiece = size_t{1} << 22;
  if (source_done_) return false;
  piece_.erase(0, pos_);
  base_ += pos_;
  pos_ = 0;
  const std::string got = source_(base_ + piece_.size(), kPiece);
  if (got.empty()) source_done_ = true;
  piece_ += got;
  text_ = piece_;
  return !got.empty();
}

void CsvReader::read_header() {
  if (!next_line(header_line_) || blank(header_line_))
    throw CsvError(fmt::format("{}:1:1: no header line{}", name_,
                               opt_.expected.empty() ? "" : "; expected " + opt_.expected));
  header_ = split_csv_line(header_line_);
  if (opt_.trim)
    for (auto& h : header_) h = std::string(trimmed(h));
  std::set<std::string_view> seen;
  for (const auto& h : header_)
    if (!seen.insert(h).second)
      throw CsvError(fmt::format("{}:1: column '{}' appears twice", name_, h));
}

bool CsvReader::next_line(std::string& line) {
  size_t nl = text_.find('\n', pos_);
  while (nl == std::string_view::npos && more()) nl = text_.find('\n', pos_);
  if (pos_ >= text_.size()) return false;
  if (nl == std::string_view::npos && opt_.whole_lines) {
    pos_ = text_.size();  // cut short: not a row
    return false;
  }
  const size_t end = nl == std::string_view::npos ? text_.size() : nl;
  line.assign(text_.substr(pos_, end - pos_));
  line_start_ = base_ + pos_;
  line_length_ = end - pos_;
  pos_ = end + 1;
  ++line_;
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (line.find('\0') != std::string::npos)
    throw CsvError(fmt::format("{}:{}: not CSV text (a NUL byte)", name_, line_));
  return true;
}

bool CsvReader::blank(std::string_view line) const {
  return opt_.trim ? trimmed(line).empty() : line.empty();
}

std::optional<size_t> CsvReader::column(std::string_view name) const {
  const auto it = std::find(header_.begin(), header_.end(), name);
  if (it == header_.end()) return std::nullopt;
  return static_cast<size_t>(it - header_.begin());
}

bool CsvReader::next() {
  std::string line;
  do {
    if (!next_line(line)) return false;
  } while (blank(line));
  cells_ = split_csv_line(line);
  if (opt_.trim)
    for (auto& c : cells_) c = std::string(trimmed(c));
  if (cells_.size() != header_.size())
    throw CsvError(
        fmt::format("{}: {} fields, the header has {}", where(), cells_.size(), header_.size()));
  return true;
}

std::string CsvReader::where() const {
  return fmt::format("{}:{}", name_, line_);
}

int CsvTable::column(std::string_view name) const {
  const auto it = std::find(header.begin(), header.end(), name);
  return it == header.end() ? -1 : static_cast<int>(it - header.begin());
}

CsvTable read_csv_table(std::string_view text, const std::string& name, const CsvOptions& opt) {
  CsvReader r(text, name, opt);
  CsvTable t;
  t.header = r.header();
  while (r.next()) {
    t.rows.push_back(r.cells());
    t.lines.push_back(r.line());
  }
  return t;
}

bool parse_number(std::string_view cell, double* v) {
  const std::string_view t = trimmed(cell);
  if (t.empty()) return false;
  const auto r = std::from_chars(t.data(), t.data() + t.size(), *v);
  return r.ec == std::errc() && r.ptr == t.data() + t.size() && std::isfinite(*v);
}

std::string read_csv_file(const fs::path& path, const std::string& name, const std::string& what,
                          size_t max_bytes) {
  std::string text;
  try {
    text = support::read_input_file(path, name, what, max_bytes);
  } catch (const support::InputFileError& e) {
    throw CsvError(e.what());
  }
  if (text.size() > max_bytes)
    throw CsvError(fmt::format("{}: more than {} bytes; expected {}", name, max_bytes, what));
  return text;
}

}  // namespace simloop::report
