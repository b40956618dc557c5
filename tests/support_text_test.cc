// The shared text helpers: edit distance, "did you mean", numbers, words and
// positions in a text.
#include <gtest/gtest.h>

#include "sim/support/text.h"

namespace simloop::support {
namespace {

TEST(EditDistance, CountsInsertionsDeletionsAndSubstitutions) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("abc", ""), 3u);
  EXPECT_EQ(edit_distance("", "ab"), 2u);
  EXPECT_EQ(edit_distance("payload", "paylaod"), 2u);  // a swap is two edits
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("sitting", "kitten"), 3u);
}

TEST(Closest, TakesTheNearestWithinTheBoundAndTheFirstOfTies) {
  const std::vector<std::string> keys = {"payload", "packets", "dest"};
  EXPECT_EQ(closest("paylod", keys, 2), "payload");
  EXPECT_EQ(closest("pckets", keys, 1), "packets");
  EXPECT_EQ(closest("zzzzzz", keys, 2), "");
  EXPECT_EQ(closest("desk", {"dest", "desc"}, 1), "dest");
  EXPECT_EQ(closest("x", {}, 5), "");
}

TEST(ParseU64, TakesTheWholeNumberOrNothing) {
  uint64_t v = 0;
  EXPECT_TRUE(parse_u64("1234", &v));
  EXPECT_EQ(v, 1234u);
  EXPECT_TRUE(parse_u64("0x1f", &v, 16));
  EXPECT_EQ(v, 31u);
  EXPECT_TRUE(parse_u64("0X1F", &v, 16));
  EXPECT_EQ(v, 31u);
  EXPECT_TRUE(parse_u64("ff", &v, 16));
  EXPECT_EQ(v, 255u);
  EXPECT_FALSE(parse_u64("", &v));
  EXPECT_FALSE(parse_u64("12x", &v));
  EXPECT_FALSE(parse_u64("-1", &v));
  EXPECT_FALSE(parse_u64("0x", &v, 16));
  EXPECT_FALSE(parse_u64("99999999999999999999999", &v));  // out of range
}

TEST(Words, SplitsOnAnyWhitespace) {
  EXPECT_EQ(words("  a\tbb \n c  "), (std::vector<std::string>{"a", "bb", "c"}));
  EXPECT_TRUE(words("").empty());
  EXPECT_TRUE(words(" \t\n").empty());
}

TEST(ReplaceAll, ReplacesEveryOccurrenceLeftToRight) {
  EXPECT_EQ(replace_all("-n {n} x{n}y", "{n}", "2000"), "-n 2000 x2000y");
  EXPECT_EQ(replace_all("aaa", "aa", "b"), "ba");            // no overlap: left to right
  EXPECT_EQ(replace_all("abc", "", "x"), "abc");             // nothing to find
  EXPECT_EQ(replace_all("{n}", "{n}", "{n}{n}"), "{n}{n}");  // the result is not searched again
  EXPECT_EQ(replace_all("", "{n}", "1"), "");
}

TEST(TextPosition, CountsLinesAndBytes) {
  const std::string_view t = "ab\ncd\n\nx";
  EXPECT_EQ(text_position(t, 0).line, 1);
  EXPECT_EQ(text_position(t, 0).col, 1);
  EXPECT_EQ(text_position(t, 2).col, 3);  // the '\n' itself is on line 1
  EXPECT_EQ(text_position(t, 3).line, 2);
  EXPECT_EQ(text_position(t, 3).col, 1);
  EXPECT_EQ(text_position(t, 8).line, 4);
  EXPECT_EQ(text_position(t, 100).line, 4);  // past the end: where the text ends
  // A JSON parser's count of bytes read names the last one it read.
  EXPECT_EQ(json_error_position(t, 0).line, 1);
  EXPECT_EQ(json_error_position(t, 1).col, 1);
  EXPECT_EQ(json_error_position(t, 5).line, 2);
  EXPECT_EQ(json_error_position(t, 5).col, 2);
}

}  // namespace
}  // namespace simloop::support
