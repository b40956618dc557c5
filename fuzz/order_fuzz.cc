// The readers of a build's small text files (sim/layout/build.h): a
// function order (load_order), an owners file (load_owners) and a profile
// of hot ranges and walks (load_profile), each given the same text. The
// order is words; the others are read or refused with a LayoutError naming
// the file. A profile read then makes a layout of symbols of its own
// functions (layout_from_nm): its hot ranges and walks are either inside
// their functions or refused.
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_util.h"
#include "sim/layout/build.h"
#include "sim/layout/link_map.h"

namespace {

namespace m = simloop::models;

void check(bool ok, int line = __builtin_LINE()) {
  if (ok) return;
  std::fprintf(stderr, "order_fuzz.cc:%d: check failed\n", line);
  std::abort();
}

void refused(const m::LayoutError& e, std::string_view prefix) {
  const std::string_view msg = e.what();
  if (msg.rfind(prefix, 0) != 0) simloop::fuzz::broken("a message without its location", msg);
}

constexpr uint64_t kBase = 0x400000, kStride = 0x10000, kSize = 0x1000;

// Whether [start, start + bytes) is inside one of `syms`.
bool inside(const std::vector<m::NmSymbol>& syms, uint64_t start, uint64_t bytes) {
  for (const auto& s : syms)
    if (start >= s.addr && start - s.addr <= s.size && bytes <= s.size - (start - s.addr))
      return true;
  return false;
}

void layout(const m::CodeProfile& p, const std::multimap<std::string, std::string>& read_owners) {
  // Every function the profile names, kSize bytes each, kStride apart;
  // those with hot ranges owned (by each owner in turn), those only walked
  // or called not (expanded in their callers' routines).
  std::set<std::string> names;
  for (const auto& [sym, ranges] : p.hot) names.insert(sym);
  for (const auto& [key, walk] : p.walks) {
    names.insert(key.first);
    for (const auto& item : walk.items)
      if (!item.target.empty()) names.insert(item.target);
  }
  std::vector<m::NmSymbol> syms;
  std::multimap<std::string, std::string> owners = read_owners;
  const auto& all = m::layout_owners();
  for (const auto& name : names) {
    if (syms.size() == 512) break;
    const size_t k = syms.size();
    syms.push_back({kBase + k * kStride, kSize, true, name});
    if (p.hot.count(name) != 0) owners.emplace(name, all[k % all.size()]);
  }
  try {
    const m::LinkedLayout linked = m::layout_from_nm(syms, owners, 1.0, &p.hot, &p.walks);
    for (const auto& [owner, ranges] : linked.by_owner)
      for (const auto& r : ranges) check(r.bytes > 0 && inside(syms, r.start, r.bytes));
    for (const auto& r : linked.routines)
      for (const auto& st : r.steps)
        if (st.call < 0) check(st.bytes > 0 && inside(syms, st.start, st.bytes));
    for (const auto& [owner, i] : linked.entry)
      check(i >= 0 && static_cast<size_t>(i) < linked.routines.size());
  } catch (const m::LayoutError& e) {
    refused(e, "profile: ");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    std::istringstream in(text);
    for (const auto& w : m::load_order(in)) {
      check(!w.empty() && w.find('#') == std::string::npos);
      for (const char c : w) check(!std::isspace(static_cast<unsigned char>(c)));
    }
  } catch (const std::exception& e) {
    simloop::fuzz::broken("load_order threw", e.what());
  }

  std::multimap<std::string, std::string> owners;
  try {
    std::istringstream in(text);
    owners = m::load_owners(in, "owners.txt");
    for (const auto& [sym, owner] : owners) check(m::is_layout_owner(owner) && !sym.empty());
  } catch (const m::LayoutError& e) {
    refused(e, "owners.txt:");
  } catch (const std::exception& e) {
    simloop::fuzz::broken("an exception that is not a LayoutError", e.what());
  }

  m::CodeProfile p;
  try {
    std::istringstream in(text);
    p = m::load_profile(in, "profile.txt");
  } catch (const m::LayoutError& e) {
    refused(e, "profile.txt:");
    return 0;
  } catch (const std::exception& e) {
    simloop::fuzz::broken("an exception that is not a LayoutError", e.what());
  }
  check(!p.hot.empty());
  for (const auto& [sym, ranges] : p.hot)
    for (size_t i = 0; i < ranges.size(); ++i) {
      check(ranges[i].second > 0);
      if (i > 0) check(ranges[i - 1] <= ranges[i]);
    }
  for (const auto& [key, walk] : p.walks) {
    check(walk.calls_per_packet >= 0);
    for (const auto& item : walk.items) check(!item.target.empty() || item.bytes > 0);
  }
  try {
    layout(p, owners);
  } catch (const std::exception& e) {
    simloop::fuzz::broken("an exception that is not a LayoutError", e.what());
  }
  return 0;
}
