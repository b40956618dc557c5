#include "sim/report/table.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace simloop::report {

Row& Row::set(std::string key, Value v) {
  for (auto& [k, old] : cells_) {
    if (k == key) {
      old = std::move(v);
      return *this;
    }
  }
  cells_.emplace_back(std::move(key), std::move(v));
  return *this;
}

const Value* Row::find(const std::string& key) const {
  for (const auto& [k, v] : cells_)
    if (k == key) return &v;
  return nullptr;
}

std::string format_value(const Value& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return fmt::format("{}", *i);
  if (const auto* d = std::get_if<double>(&v)) return fmt::format("{:.6g}", *d);
  return std::get<std::string>(v);
}

namespace {

std::vector<std::string> all_columns(const std::vector<Row>& rows) {
  std::vector<std::string> cols;
  for (const auto& r : rows)
    for (const auto& [k, v] : r.cells())
      if (std::find(cols.begin(), cols.end(), k) == cols.end()) cols.push_back(k);
  return cols;
}

}  // namespace

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c == '\n' || c == '\r' ? ' ' : c;  // one row per line
  }
  return out + "\"";
}

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        out.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        out.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.emplace_back();
    } else if (c != '\r') {
      out.back() += c;
    }
  }
  return out;
}

std::string format_table(const std::vector<Row>& rows, const std::vector<std::string>& columns) {
  const auto cols = columns.empty() ? all_columns(rows) : columns;
  std::vector<size_t> width(cols.size());
  std::vector<std::vector<std::string>> cells;
  for (size_t c = 0; c < cols.size(); ++c) width[c] = cols[c].size();
  for (const auto& r : rows) {
    auto& line = cells.emplace_back();
    for (size_t c = 0; c < cols.size(); ++c) {
      const Value* v = r.find(cols[c]);
      line.push_back(v != nullptr ? format_value(*v) : "");
      width[c] = std::max(width[c], line.back().size());
    }
  }
  std::string out;
  auto emit = [&](const std::vector<std::string>& line) {
    for (size_t c = 0; c < cols.size(); ++c)
      out += fmt::format("{}{:>{}}", c == 0 ? "" : "  ", line[c], width[c]);
    out += '\n';
  };
  emit(cols);
  for (const auto& line : cells) emit(line);
  return out;
}

std::string to_csv(const std::vector<Row>& rows) {
  const auto cols = all_columns(rows);
  std::string out;
  for (size_t c = 0; c < cols.size(); ++c) {
    if (c != 0) out += ',';
    out += csv_field(cols[c]);
  }
  out += '\n';
  for (const auto& r : rows) {
    for (size_t c = 0; c < cols.size(); ++c) {
      if (c != 0) out += ',';
      if (const Value* v = r.find(cols[c])) out += csv_field(format_value(*v));
    }
    out += '\n';
  }
  return out;
}

nlohmann::json to_json(const Row& row) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : row.cells())
    std::visit([&, &key = k](const auto& x) { j[key] = x; }, v);
  return j;
}

}  // namespace simloop::report
