// Conditions on result rows (--where): equality, inequality and ranges,
// numbers compared as numbers, and what is not a condition refused.
#include "sim/report/row_filter.h"

#include <gtest/gtest.h>

namespace simloop::report {
namespace {

TEST(RowFilter, ParsesEqualityInequalityAndRanges) {
  const auto c = parse_condition("payload>=512");
  EXPECT_EQ(c.key, "payload");
  EXPECT_EQ(c.op, ">=");
  EXPECT_EQ(c.value, "512");
  EXPECT_EQ(parse_condition("align=none").op, "==");
  EXPECT_EQ(parse_condition("align == none").value, "none");
  EXPECT_EQ(parse_condition(" align != copy-down ").key, "align");
  EXPECT_EQ(parse_condition("payload<1000").op, "<");
  EXPECT_EQ(parse_condition("machine.clock_hz>2.4e9").value, "2.4e9");
  EXPECT_EQ(parse_condition("payload<=-1").value, "-1");
}

TEST(RowFilter, NumbersCompareAsNumbers) {
  EXPECT_TRUE(holds(parse_condition("payload>=512"), "512"));
  EXPECT_TRUE(holds(parse_condition("payload>=512"), "1024"));
  EXPECT_FALSE(holds(parse_condition("payload>=512"), "64"));  // as text, "64" > "512"
  EXPECT_TRUE(holds(parse_condition("payload<1000"), "999.5"));
  EXPECT_FALSE(holds(parse_condition("payload<1000"), "1e3"));
  EXPECT_TRUE(holds(parse_condition("payload=512"), "512.0"));
  EXPECT_TRUE(holds(parse_condition("clock=2e9"), "2000000000"));
  EXPECT_FALSE(holds(parse_condition("payload!=512"), "512.0"));
  EXPECT_TRUE(holds(parse_condition("align!=none"), "copy-down"));
  EXPECT_FALSE(holds(parse_condition("align=none"), "copy-down"));
  EXPECT_FALSE(holds(parse_condition("payload>5"), "big")) << "a range holds for no text";
  EXPECT_FALSE(holds(parse_condition("payload>5"), "")) << "nor for an empty cell";
}

TEST(RowFilter, WhatIsNotAConditionIsRefusedSayingWhy) {
  auto why = [](const std::string& text) -> std::string {
    try {
      parse_condition(text);
    } catch (const ConditionError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(why("payload").find("no comparison"), std::string::npos);
  EXPECT_NE(why("=512").find("no column"), std::string::npos);
  EXPECT_NE(why("payload=").find("nothing to compare with"), std::string::npos);
  EXPECT_NE(why("payload=>5").find("'=>' is not a comparison"), std::string::npos);
  EXPECT_NE(why("payload<<5").find("'<<' is not a comparison"), std::string::npos);
  EXPECT_NE(why("payload!5").find("'!' is not a comparison"), std::string::npos);
  EXPECT_NE(why("payload<big").find("'big' is not a number"), std::string::npos);
  EXPECT_EQ(why("payload<=5"), "");
}

}  // namespace
}  // namespace simloop::report
