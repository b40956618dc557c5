// The one CSV reader (sim/report/csv_table): rows of the header's width
// located by their lines, strict numbers, and what it refuses.
#include "sim/report/csv_table.h"

#include <gtest/gtest.h>

#include <string>

namespace simloop::report {
namespace {

std::string error_of(std::string_view text, const CsvOptions& opt = {}) {
  try {
    read_csv_table(text, "t.csv", opt);
  } catch (const CsvError& e) {
    return e.what();
  }
  return "no error";
}

TEST(CsvReader, ReadsRowsWithTheirLines) {
  const std::string text = "a,b\r\n1,\"x, y\"\n\n2,3";
  CsvReader r(text, "t.csv");
  EXPECT_EQ(r.header(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(r.column("b"), 1u);
  EXPECT_FALSE(r.column("c"));
  ASSERT_TRUE(r.next());
  EXPECT_EQ(r.cell(1), "x, y");
  EXPECT_EQ(r.where(), "t.csv:2");
  ASSERT_TRUE(r.next());  // the empty line is skipped
  EXPECT_EQ(r.cells(), (std::vector<std::string>{"2", "3"}));
  EXPECT_EQ(r.line(), 4u);
  EXPECT_FALSE(r.next());
}

TEST(CsvReader, AnAppendCutShortIsNotARowWhenOnlyWholeLinesCount) {
  const auto t = read_csv_table("a,b\n1,2\n3", "t.csv", {.whole_lines = true});
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.lines, (std::vector<size_t>{2}));
  EXPECT_EQ(t.column("b"), 1);
  EXPECT_EQ(t.column("c"), -1);
  EXPECT_EQ(error_of("a,b\n1,2\n3"), "t.csv:3: 1 fields, the header has 2");
}

// Read from a source a few bytes at a time (as a file is read a piece at a
// time), every text gives the rows, lines, places and errors the whole text
// gives, whatever the pieces' size.
TEST(CsvReader, ReadsASourceAPieceAtATimeAsItReadsTheWholeText) {
  const std::vector<std::string> texts = {"a,b\r\n1,\"x, y\"\n\n2,3",
                                          "a,b\n1,2\n3",
                                          "a,b\n1,2\n3,4\n",
                                          "",
                                          "\nA,b\n",
                                          "a,b,a\n",
                                          "a,b\n1,2,3\n",
                                          "a,bb,ccc\n" + std::string(40, 'x') + ",,\n\n\n4,5,6\n",
                                          std::string("a,b\n1,") + '\0' + "\n"};
  auto read_all = [](CsvReader&& r, std::string& log) {
    try {
      log += "header " + std::to_string(r.header().size()) + ";";
      while (r.next()) {
        log += std::to_string(r.line()) + "@" + std::to_string(r.line_offset()) + "+" +
               std::to_string(r.line_length()) + ":";
        for (const auto& c : r.cells()) log += c + "|";
        log += ";";
      }
    } catch (const CsvError& e) {
      log += std::string("error ") + e.what();
    }
  };
  for (const auto& text : texts)
    for (const bool whole : {false, true})
      for (const size_t piece : {size_t{1}, size_t{2}, size_t{3}, size_t{7}, size_t{64}}) {
        std::string whole_text, pieces;
        auto source = [&text, piece](uint64_t off, size_t len) {
          return off >= text.size() ? std::string() : text.substr(off, std::min(len, piece));
        };
        try {
          read_all(CsvReader(text, "t.csv", {.whole_lines = whole}), whole_text);
        } catch (const CsvError& e) {
          whole_text = std::string("error ") + e.what();
        }
        try {
          read_all(CsvReader(source, "t.csv", {.whole_lines = whole}), pieces);
        } catch (const CsvError& e) {
          pieces = std::string("error ") + e.what();
        }
        EXPECT_EQ(whole_text, pieces) << "piece " << piece << " text " << text;
      }
}

TEST(CsvReader, TrimsBlanksWhenAsked) {
  const auto t = read_csv_table(" a , b\n 1 ,2 \n  \t\n", "t.csv", {.trim = true});
  EXPECT_EQ(t.header, (std::vector<std::string>{"a", "b"}));
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.rows[0], (std::vector<std::string>{"1", "2"}));
}

TEST(CsvReader, RefusesWhatIsNotATable) {
  EXPECT_EQ(error_of(""), "t.csv:1:1: no header line");
  EXPECT_EQ(error_of("\nA,b\n"), "t.csv:1:1: no header line");
  EXPECT_EQ(error_of("", {.expected = "a CSV of results"}),
            "t.csv:1:1: no header line; expected a CSV of results");
  EXPECT_EQ(error_of("a,b,a\n"), "t.csv:1: column 'a' appears twice");
  EXPECT_EQ(error_of("a,b\n1,2,3\n"), "t.csv:2: 3 fields, the header has 2");
  EXPECT_EQ(error_of(std::string("a,b\n1,") + '\0' + "\n"), "t.csv:2: not CSV text (a NUL byte)");
}

TEST(ParseNumber, TakesAWholeFiniteNumberAndNothingElse) {
  double v = 0;
  EXPECT_TRUE(parse_number("18", &v));
  EXPECT_EQ(v, 18);
  EXPECT_TRUE(parse_number(" -2.5e3 ", &v));
  EXPECT_EQ(v, -2500);
  for (const char* bad : {"", " ", "fast", "18x", "+1", "0x10", "inf", "nan", "1e400", "1,5"})
    EXPECT_FALSE(parse_number(bad, &v)) << bad;
}

}  // namespace
}  // namespace simloop::report
