// Checks of input files that the subcommands share, so that a bad file is
// refused up front in one message style (FILE:LINE:COL or FILE:LINE and the
// column) with exit status 2, before anything runs on it.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "sim/report/table.h"
#include "sim/support/input_file.h"
#include "sim/support/text.h"
#include "sim/support/yaml_input.h"
#include "sim/tools/cli/commands.h"

namespace simloop::cli {

std::string read_input_file(const std::string& path, const std::string& what, size_t max_bytes) {
  const std::string name = config::printable(path, 200);
  std::string text;
  try {
    text = support::read_input_file(path, name, what, max_bytes);
  } catch (const support::InputFileError& e) {
    throw UserError(e.what());
  }
  if (text.size() > max_bytes)
    throw UserError(fmt::format("{}: more than {} bytes; expected {}", name, max_bytes, what));
  try {
    config::check_text(text, name, what);
  } catch (const config::ConfigError& e) {
    throw UserError(e.what());
  }
  return text;
}

void check_results_csv(const std::string& path, const std::vector<std::string>& required,
                       const std::vector<std::string>& numeric) {
  const std::string what = "a CSV of results";
  const std::string text = read_input_file(path, what, size_t{256} << 20);
  const std::string name = config::printable(path, 200);
  size_t at = 0;
  int lineno = 0;
  auto next_line = [&](std::string& line) {
    if (at >= text.size()) return false;
    const size_t nl = text.find('\n', at);
    line = text.substr(at, nl == std::string::npos ? std::string::npos : nl - at);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    at = nl == std::string::npos ? text.size() : nl + 1;
    ++lineno;
    return true;
  };
  std::string line;
  if (!next_line(line) || line.empty())
    throw UserError(fmt::format("{}:1:1: no header line; expected {}", name, what));
  if (line[0] == '{' || line[0] == '[')
    throw UserError(
        fmt::format("{}:1:1: this looks like JSON; expected {} (the .csv beside it?)", name, what));
  const auto header = report::split_csv_line(line);
  if (header.size() < 2)
    throw UserError(fmt::format("{}:1:1: the header '{}' has one column; expected {}", name,
                                config::printable(line), what));
  for (const auto& r : required)
    if (std::find(header.begin(), header.end(), r) == header.end()) {
      std::string msg = fmt::format("{}:1: no column '{}'", name, r);
      if (const auto near = support::closest(r, header, 2); !near.empty())
        msg += fmt::format(" (is '{}' it?)", near);
      throw UserError(msg + fmt::format("; columns: {}", fmt::join(header, ", ")));
    }
  std::vector<std::pair<size_t, std::string>> numbers;
  for (const auto& n : numeric)
    if (auto it = std::find(header.begin(), header.end(), n); it != header.end())
      numbers.emplace_back(static_cast<size_t>(it - header.begin()), n);
  int rows = 0;
  while (next_line(line)) {
    if (line.empty()) continue;
    const auto cells = report::split_csv_line(line);
    if (cells.size() != header.size())
      throw UserError(fmt::format("{}:{}: {} fields, the header has {}", name, lineno, cells.size(),
                                  header.size()));
    for (const auto& [c, col] : numbers) {
      const std::string& v = cells[c];
      if (v.empty()) continue;
      size_t used = 0;
      double d = 0;
      try {
        d = std::stod(v, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != v.size() || !std::isfinite(d))
        throw UserError(fmt::format("{}:{}: column {}: expected a number, got '{}'", name, lineno,
                                    col, config::printable(v)));
    }
    ++rows;
  }
  if (rows == 0)
    throw UserError(fmt::format("{}:{}: no result rows after the header", name, lineno + 1));
}

}  // namespace simloop::cli
