// The reader of ld.lld link maps (parse_lld_map) and the placing of .text's
// sections in another order (place_sections, relink_symbols). The input is
// the map's text, optionally followed by a line "#order" and a function
// order (load_order). Any map is read or refused with a LayoutError naming
// it; a map read has .text's sections in address order, apart and aligned,
// and placing them again, in any order, keeps them so.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fuzz_util.h"
#include "sim/layout/build.h"
#include "sim/layout/link_map.h"

namespace {

// "f" and the index: the synthetic functions' names. Built by insert, not
// by "f" + std::string, on which GCC 12 warns falsely (-Wrestrict).
std::string fn_name(size_t i) {
  std::string s = std::to_string(i);
  s.insert(s.begin(), 'f');
  return s;
}

namespace m = simloop::models;

void check(bool ok, int line = __builtin_LINE()) {
  if (ok) return;
  std::fprintf(stderr, "link_map_fuzz.cc:%d: check failed\n", line);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  constexpr std::string_view sep = "\n#order\n";
  const size_t at = in.find(sep);
  const std::string map_text(in.substr(0, at == std::string_view::npos ? in.size() : at + 1));

  m::LinkMap map;
  try {
    std::istringstream text(map_text);
    map = m::parse_lld_map(text, "fuzz.map");
  } catch (const m::LayoutError& e) {
    if (std::string_view(e.what()).rfind("fuzz.map", 0) != 0)
      simloop::fuzz::broken("a message that does not name the map", e.what());
    return 0;
  } catch (const std::exception& e) {
    simloop::fuzz::broken("an exception that is not a LayoutError", e.what());
  }
  const size_t n = map.text.size();
  for (size_t i = 0; i < n; ++i) {
    const auto& s = map.text[i];
    check(s.align > 0 && (s.align & (s.align - 1)) == 0);
    check(s.input.find(":(") != std::string::npos);
    check(s.addr + s.size >= s.addr);  // within the address space
    if (i > 0) check(map.text[i - 1].addr + map.text[i - 1].size <= s.addr);
    if (s.size > 0) check(m::section_of(map, s.addr) == static_cast<int>(i));
  }

  // A function "fI" at the start of each section I, the function a
  // section of its own (-ffunction-sections) is named for, to be ordered by
  // that name; and data before .text.
  std::vector<m::NmSymbol> syms;
  for (size_t i = 0; i < n; ++i) {
    const auto& s = map.text[i];
    syms.push_back({s.addr, s.size, true, fn_name(i)});
    constexpr std::string_view fn = ":(.text.";
    if (const size_t b = s.input.find(fn); b != std::string::npos) {
      const size_t e = s.input.find(')', b);
      syms.push_back({s.addr, s.size, true, s.input.substr(b + fn.size(), e - b - fn.size())});
    }
  }
  syms.push_back({0, 0, false, "data"});
  std::vector<std::string> order;
  if (at != std::string_view::npos) {
    std::istringstream o{std::string(in.substr(at + sep.size()))};
    order = m::load_order(o);
  } else {
    for (size_t i = n; i-- > 0;) order.push_back(fn_name(i));
  }

  std::vector<uint64_t> placed;
  try {
    // The map's own order places every section where the map says.
    const auto same = m::place_sections(map, syms, {});
    check(same.size() == n);
    for (size_t i = 0; i < n; ++i) check(same[i] == map.text[i].addr);
    placed = m::place_sections(map, syms, order);
  } catch (const m::LayoutError&) {
    return 0;  // not a plain ld.lld link of .text
  } catch (const std::exception& e) {
    simloop::fuzz::broken("an exception that is not a LayoutError", e.what());
  }
  check(placed.size() == n);
  std::vector<std::pair<uint64_t, uint64_t>> ranges;  // the sections placed, as [start, end)
  for (size_t i = 0; i < n; ++i) {
    const auto& s = map.text[i];
    check(placed[i] % s.align == 0 && placed[i] >= map.text_addr);
    check(placed[i] + s.size >= placed[i]);
    if (s.size > 0) ranges.emplace_back(placed[i], placed[i] + s.size);
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) check(ranges[i - 1].second <= ranges[i].first);
  check(m::relink_symbols(syms, map, placed).size() == syms.size());
  // A function at the start of each section (not empty) moves with it.
  std::vector<m::NmSymbol> starts;
  for (size_t i = 0; i < n; ++i)
    if (map.text[i].size > 0) starts.push_back({map.text[i].addr, 1, true, std::to_string(i)});
  const auto moved = m::relink_symbols(starts, map, placed);
  check(moved.size() == starts.size());
  for (size_t i = 0; i < moved.size(); ++i) {
    if (i > 0) check(moved[i - 1].addr <= moved[i].addr);
    check(moved[i].addr == placed[std::stoul(moved[i].name)]);
  }
  return 0;
}
