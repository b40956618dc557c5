// ld.lld link maps, and .text placed again as --symbol-ordering-file does.
#include "sim/layout/link_map.h"

#include <gtest/gtest.h>

#include <sstream>

namespace simloop::models {
namespace {

// A map as ld.lld 14 writes it: three object sections (one per function)
// and a libc member, each 16-aligned except the last (64).
constexpr const char* kMap =
    "             VMA              LMA     Size Align Out     In      Symbol\n"
    "          200200           200200       20     4 .rodata\n"
    "          200200           200200       20     4         a.o:(.rodata)\n"
    "          201000           201000      124    64 .text\n"
    "          201000           201000       31    16         /usr/lib/crt1.o:(.text)\n"
    "          201000           201000       22     1                 _start\n"
    "          201040           201040       28    16         a.o:(.text.f)\n"
    "          201040           201040       28     1                 f()\n"
    "          201070           201070       10    16         a.o:(.text.g)\n"
    "          201070           201070       10     1                 g()\n"
    "          201080           201080       30    16         b.o:(.text.h)\n"
    "          201080           201080       30     1                 h()\n"
    "          2010c0           2010c0       64    64         /usr/lib/libc.a(memcpy.o):(.text)\n"
    "          2010c0           2010c0       64     1                 memcpy\n"
    "          202000           202000        8     8 .data\n";

std::vector<NmSymbol> symbols() {
  return {{0x201000, 0x22, true, "_start"}, {0x201040, 0x28, true, "f"},
          {0x201070, 0x10, true, "g"},      {0x201080, 0x30, true, "h"},
          {0x2010c0, 0x64, true, "memcpy"}, {0x202000, 8, false, "data"}};
}

LinkMap parsed() {
  std::istringstream in(kMap);
  return parse_lld_map(in, "test.map");
}

TEST(LinkMap, ReadsTheInputSectionsOfText) {
  const LinkMap m = parsed();
  EXPECT_EQ(m.text_addr, 0x201000u);
  EXPECT_EQ(m.text_size, 0x124u);
  ASSERT_EQ(m.text.size(), 5u);
  EXPECT_EQ(m.text[1].input, "a.o:(.text.f)");
  EXPECT_EQ(m.text[1].size, 0x28u);
  EXPECT_EQ(m.text[4].align, 64u);
  EXPECT_TRUE(m.text[0].runtime);  // crt1.o
  EXPECT_FALSE(m.text[1].runtime);
  EXPECT_TRUE(m.text[4].runtime);  // an archive member
  EXPECT_EQ(section_of(m, 0x201075), 2);
  EXPECT_EQ(section_of(m, 0x201038), -1);  // alignment padding
}

TEST(LinkMap, TheMapsOwnOrderPlacesEverySectionWhereItIs) {
  const LinkMap m = parsed();
  const auto at = place_sections(m, symbols(), {});
  for (size_t i = 0; i < m.text.size(); ++i) EXPECT_EQ(at[i], m.text[i].addr) << i;
  EXPECT_EQ(relink_symbols(symbols(), m, at)[3].addr, 0x201080u);
}

TEST(LinkMap, OrderedSectionsGoFirstAlignedAndTheRestFollowInMapOrder) {
  const LinkMap m = parsed();
  const auto at = place_sections(m, symbols(), {"h", "g", "nosuch"});
  EXPECT_EQ(at[3], 0x201000u);  // h: 0x30 bytes
  EXPECT_EQ(at[2], 0x201030u);  // g: 0x10
  EXPECT_EQ(at[0], 0x201040u);  // crt1: 0x31, then f aligned to 16
  EXPECT_EQ(at[1], 0x201080u);
  EXPECT_EQ(at[4], 0x2010c0u);  // memcpy: 0x2010a8 aligned up to 64
  const auto moved = relink_symbols(symbols(), m, at);
  ASSERT_EQ(moved.size(), 6u);
  EXPECT_EQ(moved[0].name, "h");  // in address order again
  EXPECT_EQ(moved[1].name, "g");
  EXPECT_EQ(moved[5].name, "data");
  EXPECT_EQ(moved[5].addr, 0x202000u);  // outside .text: unmoved
}

TEST(LinkMap, RefusesWhatIsNotAPlainLldMap) {
  std::istringstream no_header("  201000 201000 10 16 .text\n");
  EXPECT_THROW(parse_lld_map(no_header, "x.map"), LayoutError);
  std::istringstream no_text(
      "             VMA              LMA     Size Align Out     In      Symbol\n"
      "          202000           202000        8     8 .data\n");
  EXPECT_THROW(parse_lld_map(no_text, "x.map"), LayoutError);
  std::istringstream bad_align(
      "             VMA              LMA     Size Align Out     In      Symbol\n"
      "          201000           201000      124    64 .text\n"
      "          201000           201000       31    12         a.o:(.text)\n");
  EXPECT_THROW(parse_lld_map(bad_align, "x.map"), LayoutError);
  // A section not where its predecessors and alignment put it.
  std::string text = kMap;
  const std::string from = "          201080           201080";
  text.replace(text.find(from), from.size(), "          201090           201090");
  std::istringstream moved(text);
  const LinkMap m = parse_lld_map(moved, "x.map");
  EXPECT_THROW(place_sections(m, symbols(), {}), LayoutError);
}

}  // namespace
}  // namespace simloop::models
