// Tidy result rows and the three ways simloop shows them: a table on the
// terminal, CSV (one row per run) and JSON. Files are written atomically, so
// a reader never sees half a file and an interrupted write loses nothing old.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "sim/report/safe_file.h"

namespace simloop::report {

using Value = std::variant<int64_t, double, std::string>;

// One run: named values in a fixed column order.
class Row {
 public:
  Row& set(std::string key, Value v);
  const std::vector<std::pair<std::string, Value>>& cells() const { return cells_; }
  const Value* find(const std::string& key) const;

 private:
  std::vector<std::pair<std::string, Value>> cells_;
};

std::string format_value(const Value& v);

// A fixed-width table of the chosen columns (all columns when empty).
std::string format_table(const std::vector<Row>& rows, const std::vector<std::string>& columns);

// CSV with a header row; the columns are the union of all rows' keys, in
// first-seen order.
std::string to_csv(const std::vector<Row>& rows);
nlohmann::json to_json(const Row& row);

// One CSV field, quoted when it must be (line breaks become spaces: one row
// per line), and one CSV line split back into its fields.
std::string csv_field(const std::string& s);
std::vector<std::string> split_csv_line(const std::string& line);

// Writes `rows` to `path` atomically: a JSON array of objects if the name
// ends in .json, else CSV.
void write_rows(const std::filesystem::path& path, const std::vector<Row>& rows);

}  // namespace simloop::report
