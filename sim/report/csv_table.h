// Reading CSV tables: a header line, then rows of its width, each row known
// by its line so that a message can name it ("FILE:LINE: ..."). Every CSV
// simloop takes in goes through here: measured runs, result files given to
// plot, calibrate and compare, a sweep's stored results and its shards,
// cachegrind rows, the native harness's output.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace simloop::report {

// A table that is not one: the message names the file and the line.
struct CsvError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct CsvOptions {
  // Blanks around names and cells are dropped, and a line of blanks is an
  // empty line (tables written by hand or by other tools).
  bool trim = false;
  // A last line without its '\n' is not a row (an append cut short).
  bool whole_lines = false;
  // What the file should be ("a CSV of results"), said when it has no header.
  std::string expected = {};
};

// Reads a table a row at a time from `text`, which must outlive it. Empty
// lines are skipped; a line's '\r' before its '\n' is dropped.
class CsvReader {
 public:
  // Reads the header. Throws CsvError "NAME:1:1: no header line" (and what
  // was expected) when the text is empty or its first line is, and
  // "NAME:1: column 'C' appears twice".
  CsvReader(std::string_view text, std::string name, CsvOptions opt = {});
  // Reads from `read(offset, length)` instead (a file read a piece at a
  // time: fewer bytes at its end, none past it), holding a piece of it and
  // the line being read, never the whole text. Offsets are the file's.
  using Source = std::function<std::string(uint64_t offset, size_t length)>;
  CsvReader(Source read, std::string name, CsvOptions opt = {});

  const std::vector<std::string>& header() const { return header_; }
  // The header line as it is in the file.
  const std::string& header_line() const { return header_line_; }
  // The index of a column, or nullopt.
  std::optional<size_t> column(std::string_view name) const;

  // Moves to the next row: false at the end. Throws CsvError
  // "NAME:LINE: N fields, the header has M" and on a NUL byte.
  bool next();
  const std::vector<std::string>& cells() const { return cells_; }
  const std::string& cell(size_t column) const { return cells_.at(column); }
  // The line of the row last read (1: the header), and "NAME:LINE".
  size_t line() const { return line_; }
  // Where that line is in the text: its first byte and its length (without
  // its '\n'), so that it can be read again from the file.
  size_t line_offset() const { return line_start_; }
  size_t line_length() const { return line_length_; }
  std::string where() const;
  const std::string& name() const { return name_; }

 private:
  void read_header();
  bool next_line(std::string& line);
  bool blank(std::string_view line) const;
  // Reading from a source: drops what was read, adds the next piece.
  bool more();

  std::string_view text_;  // the text, or the piece of the source held
  Source source_;
  std::string piece_;
  uint64_t base_ = 0;  // where text_ starts in the source
  bool source_done_ = true;
  std::string name_;
  CsvOptions opt_;
  size_t pos_ = 0, line_ = 0;
  size_t line_start_ = 0, line_length_ = 0;
  std::string header_line_;
  std::vector<std::string> header_, cells_;
};

// A whole table: its header and rows as text, and each row's line.
struct CsvTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<size_t> lines;
  int column(std::string_view name) const;  // -1 if absent
};
// Reads every row of `text` (as CsvReader does).
CsvTable read_csv_table(std::string_view text, const std::string& name, const CsvOptions& opt = {});

// A cell as a number: all of it (blanks around it aside), finite, in the
// plain decimal or exponent form ("18", "-2.5", "1e9"); nothing else, and
// not "+1", "0x10", "inf" or "nan". False for an empty cell.
bool parse_number(std::string_view cell, double* v);

// The most a CSV file read here may hold.
inline constexpr size_t kMaxCsvBytes = size_t{256} << 20;

// The text of a CSV file of at most `max_bytes`. Throws CsvError naming
// the file (as `name`) and saying it expected `what`: missing or
// unreadable, a directory or other non-regular file, or longer than the
// limit.
std::string read_csv_file(const std::filesystem::path& path, const std::string& name,
                          const std::string& what = "a CSV file", size_t max_bytes = kMaxCsvBytes);

}  // namespace simloop::report
