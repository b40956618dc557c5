// Checks of input files that the subcommands share, so that a bad file is
// refused up front in one message style (FILE:LINE:COL or FILE:LINE and the
// column) with exit status 2, before anything runs on it.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <string>
#include <vector>

#include "sim/report/csv_table.h"
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
                       const std::vector<std::string>& numeric, size_t max_bytes,
                       const std::string& limit_for) {
  const std::string what = "a CSV of results";
  const std::string name = config::printable(path, 200);
  // Refused by its size before a byte is read (read_input_file still stops
  // one byte past the limit for a file whose size says nothing).
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec))
    if (const auto size = std::filesystem::file_size(path, ec); !ec && size > max_bytes)
      throw UserError(fmt::format("{}: too large: {} bytes, past the limit of {} MiB{}", name, size,
                                  max_bytes >> 20, limit_for.empty() ? "" : ", " + limit_for));
  const std::string text = read_input_file(path, what, max_bytes);
  if (!text.empty() && (text[0] == '{' || text[0] == '['))
    throw UserError(
        fmt::format("{}:1:1: this looks like JSON; expected {} (the .csv beside it?)", name, what));
  try {
    report::CsvReader csv(text, name, {.expected = what});
    const auto& header = csv.header();
    if (header.size() < 2)
      throw UserError(fmt::format("{}:1:1: the header '{}' has one column; expected {}", name,
                                  config::printable(csv.header_line()), what));
    for (const auto& r : required)
      if (!csv.column(r)) {
        std::string msg = fmt::format("{}:1: no column '{}'", name, r);
        if (const auto near = support::closest(r, header, 2); !near.empty())
          msg += fmt::format(" (is '{}' it?)", near);
        throw UserError(msg + fmt::format("; columns: {}", fmt::join(header, ", ")));
      }
    std::vector<std::pair<size_t, std::string>> numbers;
    for (const auto& n : numeric)
      if (const auto c = csv.column(n)) numbers.emplace_back(*c, n);
    int rows = 0;
    while (csv.next()) {
      for (const auto& [c, col] : numbers) {
        const std::string& v = csv.cell(c);
        double d = 0;
        if (!v.empty() && !report::parse_number(v, &d))
          throw UserError(fmt::format("{}: column {}: expected a number, got '{}'", csv.where(),
                                      col, config::printable(v)));
      }
      ++rows;
    }
    if (rows == 0)
      throw UserError(fmt::format("{}:{}: no result rows after the header", name, csv.line() + 1));
  } catch (const report::CsvError& e) {
    throw UserError(e.what());
  }
}

}  // namespace simloop::cli
