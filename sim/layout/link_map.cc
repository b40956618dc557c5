// ld.lld link maps, and .text placed again in another order.
#include "sim/layout/link_map.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "sim/layout/layout_detail.h"
#include "sim/support/text.h"
#include "sim/support/yaml_input.h"

namespace simloop::models {

namespace {

bool runtime_input(const std::string& input) {
  // "DIR/libc.a(memcpy.o):(.text)" or "DIR/crt1.o:(.text)".
  const std::string file = input.substr(0, input.rfind(":("));
  if (file.find(".a(") != std::string::npos) return true;
  const auto slash = file.rfind('/');
  const std::string base = slash == std::string::npos ? file : file.substr(slash + 1);
  return base.starts_with("crt");
}

}  // namespace

LinkMap parse_lld_map(std::istream& in, const std::string& what) {
  LinkMap m;
  std::string line;
  int lineno = 0;
  size_t out_col = std::string::npos;  // where an output section's name starts
  bool in_text = false, seen_text = false;
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    if (out_col == std::string::npos) {
      // The header names the columns; the names below start where "Out" does.
      out_col = line.find(" Out ");
      if (line.find("VMA") == std::string::npos || out_col == std::string::npos)
        throw LayoutError(
            fmt::format("{} line {}: expected the header of an ld.lld map "
                        "(VMA LMA Size Align Out In Symbol), got '{}'",
                        what, lineno, line));
      ++out_col;
      continue;
    }
    // Four numbers, then the name; where the name starts says what it is.
    std::string tok[4];
    size_t at = 0;
    for (auto& t : tok) {
      const size_t b = line.find_first_not_of(" \t", at);
      const size_t e = b == std::string::npos ? b : line.find_first_of(" \t", b);
      if (b == std::string::npos || e == std::string::npos)
        throw LayoutError(fmt::format("{} line {}: expected 'VMA LMA SIZE ALIGN NAME', got '{}'",
                                      what, lineno, line));
      t = line.substr(b, e - b);
      at = e;
    }
    uint64_t a = 0, s = 0, al = 0, unused = 0;
    if (!support::parse_u64(tok[0], &a, 16) || !support::parse_u64(tok[1], &unused, 16) ||
        !support::parse_u64(tok[2], &s, 16) || !support::parse_u64(tok[3], &al, 10))
      throw LayoutError(fmt::format("{} line {}: expected 'VMA LMA SIZE ALIGN NAME', got '{}'",
                                    what, lineno, line));
    const size_t name_at = line.find_first_not_of(" \t", at);
    if (name_at == std::string::npos)
      throw LayoutError(fmt::format("{} line {}: no name in '{}'", what, lineno, line));
    const std::string name = line.substr(name_at);
    if (name_at <= out_col) {  // an output section
      in_text = name == ".text";
      if (in_text) {
        if (seen_text) throw LayoutError(fmt::format("{} line {}: a second .text", what, lineno));
        seen_text = true;
        m.text_addr = a;
        m.text_size = s;
      }
      continue;
    }
    if (!in_text || name_at > out_col + 8) continue;     // a symbol, or not .text
    if (name.find(":(") == std::string::npos) continue;  // linker-made (alignment, etc.)
    if (al == 0 || (al & (al - 1)) != 0)
      throw LayoutError(
          fmt::format("{} line {}: alignment {} is not a power of two", what, lineno, al));
    // A section past the end of the address space would wrap the overlap
    // check below around to address 0, and sections after it could then be
    // out of address order (found by fuzzing).
    if (s > std::numeric_limits<uint64_t>::max() - a)
      throw LayoutError(
          fmt::format("{} line {}: {} ends past the end of the address space", what, lineno, name));
    MapSection sec{a, s, al, name, runtime_input(name)};
    if (!m.text.empty() && a < m.text.back().addr + m.text.back().size)
      throw LayoutError(
          fmt::format("{} line {}: {} overlaps {}", what, lineno, name, m.text.back().input));
    m.text.push_back(std::move(sec));
  }
  if (!seen_text) throw LayoutError(fmt::format("{}: no .text output section", what));
  return m;
}

int section_of(const LinkMap& map, uint64_t addr) {
  const auto it = std::upper_bound(map.text.begin(), map.text.end(), addr,
                                   [](uint64_t a, const MapSection& s) { return a < s.addr; });
  if (it == map.text.begin()) return -1;
  const auto& s = *(it - 1);
  return addr < s.addr + s.size ? static_cast<int>(it - 1 - map.text.begin()) : -1;
}

std::vector<uint64_t> place_sections(const LinkMap& map, const std::vector<NmSymbol>& symbols,
                                     const std::vector<std::string>& order) {
  const size_t n = map.text.size();
  auto place = [&](const std::vector<size_t>& seq) {
    std::vector<uint64_t> at(n, 0);
    uint64_t cursor = map.text_addr;
    for (size_t i : seq) {
      at[i] = detail::align_up(cursor, map.text[i].align);
      cursor = at[i] + map.text[i].size;
    }
    return at;
  };
  std::vector<size_t> seq(n);
  for (size_t i = 0; i < n; ++i) seq[i] = i;
  const std::vector<uint64_t> again = place(seq);
  for (size_t i = 0; i < n; ++i)
    if (again[i] != map.text[i].addr)
      throw LayoutError(fmt::format(
          "{} is at {:#x}, but the sections before it, aligned, end at {:#x}: not a plain "
          "ld.lld link of .text",
          map.text[i].input, map.text[i].addr, again[i]));
  if (order.empty()) return again;
  // A section's priority is its first listed symbol's place (ld.lld's).
  std::map<std::string, size_t> rank;
  for (size_t k = 0; k < order.size(); ++k) rank.emplace(order[k], k);
  std::vector<size_t> prio(n, std::numeric_limits<size_t>::max());
  for (const auto& s : symbols) {
    if (!s.text) continue;
    const auto r = rank.find(s.name);
    if (r == rank.end()) continue;
    const int sec = section_of(map, s.addr);
    if (sec >= 0)
      prio[static_cast<size_t>(sec)] = std::min(prio[static_cast<size_t>(sec)], r->second);
  }
  std::stable_sort(seq.begin(), seq.end(), [&](size_t a, size_t b) { return prio[a] < prio[b]; });
  return place(seq);
}

std::string map_mismatch(const LinkMap& map, const std::vector<NmSymbol>& symbols) {
  std::multimap<std::string_view, uint64_t> at;
  for (const auto& s : symbols)
    if (s.text) at.emplace(s.name, s.addr);
  if (at.empty())
    return "the nm map has no code symbols (an empty file, or the nm of a stripped build): "
           "nothing to place or predict";
  // A function in a section of its own ("FILE:(.text.NAME)") must be where
  // the map puts its section.
  size_t named = 0, both = 0, elsewhere = 0;
  std::string first, absent;
  for (const auto& sec : map.text) {
    const size_t b = sec.input.rfind(":(.text.");
    if (sec.runtime || b == std::string::npos || !sec.input.ends_with(")")) continue;
    const std::string_view name =
        std::string_view(sec.input).substr(b + 8, sec.input.size() - b - 9);
    ++named;
    const auto [lo, hi] = at.equal_range(name);
    if (lo == hi) {
      if (absent.empty()) absent = config::printable(name, 60);
      continue;
    }
    ++both;
    bool found = false;
    for (auto it = lo; it != hi && !found; ++it) found = it->second == sec.addr;
    if (found) continue;
    if (++elsewhere <= 2)
      first += fmt::format("{}{} at {:#x} in the map, {:#x} in nm", first.empty() ? "" : "; ",
                           config::printable(name, 60), sec.addr, lo->second);
  }
  // nm lists every function (local ones too); a few map names are not
  // symbols (.text.unlikely.NAME and the like), most are.
  if (named > 0 && 2 * (named - both) > named)
    return fmt::format(
        "{} of the {} functions the map places in sections of their own are not in nm (first: "
        "{}): the nm map is cut short, or of another program",
        named - both, named, absent);
  if (elsewhere > 0)
    return fmt::format(
        "{} of the {} functions both name are at other addresses in nm than in the map "
        "(first: {}): the nm map and the link map are not of one build",
        elsewhere, both, first);
  return "";
}

std::string check_order(const std::vector<std::string>& order,
                        const std::vector<NmSymbol>& symbols) {
  if (order.empty())
    throw LayoutError("names no symbol (the default link needs no order: leave it out)");
  std::set<std::string_view> code;
  for (const auto& s : symbols)
    if (s.text) code.insert(s.name);
  std::vector<std::string_view> unknown;
  for (const auto& name : order)
    if (code.count(name) == 0) unknown.push_back(name);
  if (unknown.empty()) return "";
  std::string first;
  for (size_t i = 0; i < unknown.size() && i < 3; ++i)
    first += (i == 0 ? "" : ", ") + config::printable(unknown[i], 60);
  if (unknown.size() == order.size())
    throw LayoutError(fmt::format(
        "none of its {} names is a function of this build (first: {}): is it the order of "
        "another program?",
        order.size(), first));
  return fmt::format(
      "{} of its {} names are not functions of this build (first: {}); the "
      "linker passes over them",
      unknown.size(), order.size(), first);
}

std::vector<NmSymbol> relink_symbols(const std::vector<NmSymbol>& symbols, const LinkMap& map,
                                     const std::vector<uint64_t>& placed) {
  std::vector<NmSymbol> out = symbols;
  for (auto& s : out) {
    const int sec = section_of(map, s.addr);
    if (sec < 0) continue;
    s.addr = s.addr - map.text[static_cast<size_t>(sec)].addr + placed[static_cast<size_t>(sec)];
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const NmSymbol& a, const NmSymbol& b) { return a.addr < b.addr; });
  return out;
}

}  // namespace simloop::models
