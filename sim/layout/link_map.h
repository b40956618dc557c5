// Where a link put each input section of .text, from ld.lld's link map
// (-Map), and the same sections placed again in another order, as ld.lld's
// --symbol-ordering-file orders them. With each function in a section of its
// own (-ffunction-sections) that moves single functions; a build's `nm`
// symbols then move with their sections, and the moved map feeds the same
// I-cache model as the build itself (layout_from_nm).
#pragma once

#include <cstdint>
#include <istream>
#include <map>
#include <string>
#include <vector>

#include "sim/layout/layout.h"

namespace simloop::models {

struct MapSection {
  uint64_t addr = 0, size = 0, align = 1;
  std::string input;  // "FILE:(SECTION)" as the map names it
  // A runtime library's (an archive member, or the toolchain's crt*.o): the
  // advice leaves it where the linker puts it.
  bool runtime = false;
};

struct LinkMap {
  uint64_t text_addr = 0, text_size = 0;  // the output section .text
  std::vector<MapSection> text;           // its input sections, in address order
};

// An ld.lld map ("VMA LMA Size Align Out In Symbol" columns). Throws
// LayoutError "WHAT line N: ..." on a line it cannot read, or if the map has
// no .text or its sections overlap or end past 2^64.
LinkMap parse_lld_map(std::istream& in, const std::string& what);

// The input section of `map` that holds `addr`, or -1.
int section_of(const LinkMap& map, uint64_t addr);

// The sections of `map` as ld.lld places them with an ordering file of
// `order` (symbol names): every section holding a listed symbol first, by
// its first listed symbol, then the others in map order, each aligned; the
// result is each section's new address, by index in map.text. `symbols` are
// the build's (parse_nm), to find the listed names. Throws LayoutError if
// the map's own order does not place its sections where the map says (the
// map is not of a plain ld.lld link of these sections).
std::vector<uint64_t> place_sections(const LinkMap& map, const std::vector<NmSymbol>& symbols,
                                     const std::vector<std::string>& order);

// Why `symbols` (a build's nm map) and `map` are not of one build: no code
// symbol at all, most functions in sections of their own (.text.NAME)
// missing from nm, or some that nm puts elsewhere than the map puts their
// sections. "" if they agree.
std::string map_mismatch(const LinkMap& map, const std::vector<NmSymbol>& symbols);

// What is wrong with a link order (an --order file, layout.build.order) for
// a build of `symbols`. Throws LayoutError if it names no symbol, or none of
// the build's code (an order of another program: it would move nothing);
// returns a warning, or "", when only some of its names are not code of
// this build (ld.lld passes over those).
std::string check_order(const std::vector<std::string>& order,
                        const std::vector<NmSymbol>& symbols);

// `symbols` moved with their sections to `placed` (place_sections), in
// address order; symbols outside .text keep their addresses.
std::vector<NmSymbol> relink_symbols(const std::vector<NmSymbol>& symbols, const LinkMap& map,
                                     const std::vector<uint64_t>& placed);

// layout_from_nm() from symbols already parsed (parse_nm(), or moved by
// relink_symbols()). Without `diagnose`, LinkedLayout::unfetched and
// ::absent are left empty (a search that links one build many times).
LinkedLayout layout_from_nm(const std::vector<NmSymbol>& symbols,
                            const std::multimap<std::string, std::string>& owners,
                            double hot_fraction = 1.0, const HotProfile* profile = nullptr,
                            const WalkProfile* walks = nullptr, bool diagnose = true);

}  // namespace simloop::models
