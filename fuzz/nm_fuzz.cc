// The reader of `nm -S --defined-only -n` output (parse_nm) and the layout
// made from it (layout_from_nm): any text is a list of symbols or a
// LayoutError "nm output:N: ..."; nothing else may come out, and what
// is read must hold together: symbols in address order, each named, the
// same symbols read again from their own printing, and every hot range of
// the layout inside the symbol it names.
#include <fmt/format.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "sim/layout/build.h"
#include "sim/layout/layout.h"
#include "sim/layout/link_map.h"

namespace {

namespace m = simloop::models;

void check(bool ok, int line = __builtin_LINE()) {
  if (ok) return;
  std::fprintf(stderr, "nm_fuzz.cc:%d: check failed\n", line);
  std::abort();
}

// The harness's owners file: the names a real nm output has owners for.
const std::multimap<std::string, std::string>& owners() {
  static const auto o = [] {
    std::ifstream in(SIMLOOP_SOURCE_DIR "/configs/harness/owners.txt");
    return m::load_owners(in, "owners.txt");
  }();
  return o;
}

// A profile of the validation's builds, for hot ranges and walks.
const m::CodeProfile& profile() {
  static const auto p = [] {
    std::ifstream in(SIMLOOP_SOURCE_DIR "/experiments/validation/data/profile-wire-18.txt");
    return m::load_profile(in, "profile.txt");
  }();
  return p;
}

void refused(const m::LayoutError& e, const char* prefix) {
  const std::string msg = e.what();
  if (msg.rfind(prefix, 0) != 0) simloop::fuzz::broken("a message without its location", msg);
}

// Every hot range inside a text symbol of the name it gives (a name may
// repeat: each symbol of it gets its own ranges).
void check_inside(const m::LinkedLayout& linked, const std::vector<m::NmSymbol>& syms) {
  std::multimap<std::string, const m::NmSymbol*> by_name;
  for (const auto& s : syms)
    if (s.text && s.size > 0) by_name.emplace(s.name, &s);
  for (const auto& [owner, ranges] : linked.by_owner) {
    check(m::is_layout_owner(owner));
    for (const auto& r : ranges) {
      check(r.bytes > 0);
      bool inside = false;
      const auto [first, last] = by_name.equal_range(r.symbol);
      for (auto it = first; it != last && !inside; ++it) {
        const m::NmSymbol& s = *it->second;
        inside = r.start >= s.addr && r.start - s.addr <= s.size &&
                 r.bytes <= s.size - (r.start - s.addr);
      }
      check(inside);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<m::NmSymbol> syms;
  try {
    std::istringstream in(text);
    syms = m::parse_nm(in);
  } catch (const m::LayoutError& e) {
    refused(e, "nm output:");
    // The layout reader refuses the same text.
    try {
      std::istringstream again(text);
      (void)m::layout_from_nm(again, owners());
      check(false);
    } catch (const m::LayoutError&) {
    }
    return 0;
  } catch (const std::exception& e) {
    simloop::fuzz::broken("an exception that is not a LayoutError", e.what());
  }
  for (size_t i = 0; i < syms.size(); ++i) {
    check(!syms[i].name.empty() && syms[i].name.find('\n') == std::string::npos);
    if (i > 0) check(syms[i - 1].addr <= syms[i].addr);
  }
  // Printed as nm prints them (a size for each), the symbols read back the
  // same. (Lines end in "\r\n": the reader takes one '\r' off a line, and
  // a name read from a line that ended in two keeps the other.)
  std::string printed;
  for (const auto& s : syms)
    printed += fmt::format("{:016x} {:016x} {} {}\r\n", s.addr, s.size, s.text ? 'T' : 'd', s.name);
  std::istringstream in2(printed);
  const auto back = m::parse_nm(in2);
  check(back.size() == syms.size());
  for (size_t i = 0; i < syms.size(); ++i)
    check(back[i].addr == syms[i].addr && back[i].size == syms[i].size &&
          back[i].text == syms[i].text && back[i].name == syms[i].name);

  // The layouts of the harness's owners: whole symbols, a part of each, and
  // a profile's ranges and walks.
  const double fraction = size % 2 == 0 ? 1.0 : 0.25;
  try {
    const m::LinkedLayout whole = m::layout_from_nm(syms, owners(), fraction);
    check_inside(whole, syms);
  } catch (const m::LayoutError& e) {
    simloop::fuzz::broken("a layout of whole symbols refused", e.what());
  }
  try {
    const m::LinkedLayout linked =
        m::layout_from_nm(syms, owners(), 1.0, &profile().hot, &profile().walks);
    check_inside(linked, syms);
    for (const auto& r : linked.routines)
      for (const auto& st : r.steps) check(st.call >= 0 || st.bytes > 0);
    (void)m::total_hot_bytes(linked);
  } catch (const m::LayoutError& e) {
    refused(e, "profile: ");
  } catch (const std::exception& e) {
    simloop::fuzz::broken("an exception that is not a LayoutError", e.what());
  }
  return 0;
}
