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
