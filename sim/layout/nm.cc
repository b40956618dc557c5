// Layouts of real binaries: the symbols `nm` prints, owned by stack
// functions through an owners file, with hot ranges and walks from an
// execution profile.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <sstream>

#include "sim/layout/layout.h"
#include "sim/layout/link_map.h"
#include "sim/support/text.h"
#include "sim/support/yaml_input.h"

namespace simloop::models {

std::vector<NmSymbol> parse_nm(std::istream& nm_output, const std::string& what) {
  auto hex = [](const std::string& s, uint64_t* v) { return support::parse_u64(s, v, 16); };
  std::vector<NmSymbol> syms;
  std::vector<bool> sized;
  std::string line;
  int lineno = 0;
  while (std::getline(nm_output, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    // "ADDR SIZE TYPE NAME" or "ADDR TYPE NAME"; NAME may hold spaces (nm -C).
    // nm pads a size to the address's width, which tells the two apart even
    // when a type letter is also a hex digit ('b', 'd').
    std::istringstream in(line);
    std::string a, b, c;
    in >> a >> b >> c;
    NmSymbol s;
    bool has_size = false;
    char type = 0;
    if (hex(a, &s.addr) && b.size() == a.size() && hex(b, &s.size) && c.size() == 1) {
      has_size = true;
      type = c[0];
      in >> std::ws;
    } else if (hex(a, &s.addr) && b.size() == 1 && !c.empty()) {
      type = b[0];
      s.name = c;
    } else {
      throw LayoutError(fmt::format("{}:{}: expected 'address [size] type name', got '{}'", what,
                                    lineno, config::printable(line, 200)));
    }
    std::string rest;
    std::getline(in, rest);
    s.name += rest;
    if (s.name.empty())
      throw LayoutError(
          fmt::format("{}:{}: no symbol name in '{}'", what, lineno, config::printable(line, 200)));
    s.text = type == 'T' || type == 't' || type == 'W' || type == 'w' || type == 'i';
    if (has_size && s.size > UINT64_MAX - s.addr)
      throw LayoutError(
          fmt::format("{}:{}: {} at {:#x} with size {:#x} runs past the top of memory", what,
                      lineno, config::printable(s.name, 120), s.addr, s.size));
    syms.push_back(std::move(s));
    sized.push_back(has_size);
  }
  std::vector<size_t> order(syms.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t x, size_t y) { return syms[x].addr < syms[y].addr; });
  // The next higher address after each symbol's, found from the end in one
  // pass (a scan per symbol was quadratic where many share an address).
  std::vector<uint64_t> next(order.size(), 0);
  for (size_t k = order.size(); k-- > 1;) {
    const uint64_t here = syms[order[k - 1]].addr, after = syms[order[k]].addr;
    next[k - 1] = after > here ? after : next[k];
  }
  std::vector<NmSymbol> out;
  out.reserve(syms.size());
  for (size_t k = 0; k < order.size(); ++k) {
    NmSymbol s = std::move(syms[order[k]]);
    // No size: up to the next symbol at a higher address (0 if none).
    if (!sized[order[k]] || s.size == 0) s.size = next[k] > s.addr ? next[k] - s.addr : 0;
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<std::string> nm_warnings(const std::vector<NmSymbol>& symbols,
                                     const std::set<std::string>& names) {
  std::vector<std::string> out;
  const auto matters = [&names](const NmSymbol& s) { return names.count(s.name) != 0; };
  // Code that overlaps other code without being an alias of it (the same
  // address and size): two functions cannot both own those bytes.
  size_t overlaps = 0;
  std::string first_overlap;
  const NmSymbol* reach = nullptr;  // the code symbol that ends furthest so far
  for (const auto& s : symbols) {
    if (!s.text || s.size == 0) continue;
    if (reach != nullptr && s.addr < reach->addr + reach->size &&
        !(s.addr == reach->addr && s.size == reach->size) && (matters(s) || matters(*reach))) {
      if (overlaps++ == 0)
        first_overlap = fmt::format(
            "{} at {:#x} overlaps {} [{:#x}, {:#x})", config::printable(s.name, 80), s.addr,
            config::printable(reach->name, 80), reach->addr, reach->addr + reach->size);
    }
    if (reach == nullptr || s.addr + s.size > reach->addr + reach->size) reach = &s;
  }
  if (overlaps > 0)
    out.push_back(
        fmt::format("{} code symbol{} overlap{} other code ({}{}): each byte is "
                    "charged to one of them",
                    overlaps, overlaps == 1 ? "" : "s", overlaps == 1 ? "s" : "", first_overlap,
                    overlaps > 1 ? ", ..." : ""));
  // One name at two addresses (a static function in two objects): walks
  // and profiles name symbols, and the first address is the one used.
  std::map<std::string_view, uint64_t> at;
  size_t repeated = 0;
  std::string first_repeat;
  for (const auto& s : symbols) {
    if (!s.text || s.size == 0 || !matters(s)) continue;
    const auto [it, fresh] = at.emplace(s.name, s.addr);
    if (fresh || it->second == s.addr) continue;
    if (repeated++ == 0)
      first_repeat =
          fmt::format("{} at {:#x} and {:#x}", config::printable(s.name, 80), it->second, s.addr);
  }
  if (repeated > 0)
    out.push_back(fmt::format(
        "{} code symbol name{} at more than one address ({}{}): profiles "
        "and walks name symbols, and the lowest address is used",
        repeated, repeated == 1 ? " is" : "s are", first_repeat, repeated > 1 ? ", ..." : ""));
  return out;
}

namespace {

// Expands walks into routines for layout_from_nm.
class WalkExpander {
 public:
  WalkExpander(const std::vector<NmSymbol>& syms,
               const std::multimap<std::string, std::string>& owners, const WalkProfile& walks,
               const HotProfile* profile, LinkedLayout& out)
      : owners_(owners), walks_(walks), profile_(profile), out_(out) {
    for (const auto& s : syms)
      if (s.text && s.size > 0) addr_.emplace(s.name, &s);  // the first of a repeated name
  }

  // The routine run for `owner`'s event at a call of (symbol, offset); with
  // `call` >= 0, at the call-th call of a packet (Walk::per_call).
  int routine(const std::pair<std::string, uint64_t>& key, const std::string& owner,
              int call = -1) {
    const auto memo = memo_.find({{key, owner}, call});
    if (memo != memo_.end()) return memo->second;
    const int index = static_cast<int>(out_.routines.size());
    memo_[{{key, owner}, call}] = index;
    out_.routines.push_back({owner, key.first, {}, true});
    std::set<std::pair<std::string, uint64_t>> path = {key};
    std::vector<CodeStep> steps;
    // The call sites of routines with per-call walks, in order.
    std::map<std::pair<std::string, uint64_t>, std::vector<size_t>> sites;
    auto* outer = sites_;
    sites_ = &sites;
    expand(key, owner, 0, path, steps, call);
    sites_ = outer;
    // Where this routine calls such a routine as many times as a packet
    // does, its calls are a packet's calls in order: each runs its own walk.
    for (const auto& [callee, at] : sites) {
      const auto& per_call = walks_.at(callee).per_call;
      if (at.size() != per_call.size()) continue;
      for (size_t k = 0; k < at.size(); ++k) {
        const auto fn = static_cast<size_t>(steps[at[k]].call);
        steps[at[k]].callee = routine(callee, layout_owners()[fn], static_cast<int>(k));
      }
    }
    out_.routines[static_cast<size_t>(index)].steps = std::move(steps);
    return index;
  }

  bool has_walk(const std::string& symbol) const {
    return addr_.count(symbol) != 0 && walks_.count({symbol, 0}) != 0;
  }

  // Symbols some routine runs bytes of.
  const std::set<std::string>& fetched() const { return fetched_; }

 private:
  static constexpr int kMaxDepth = 24;
  // Walk items expanded, over every routine. A walk that calls another
  // twice, which calls another twice, and so on, expands exponentially: a
  // profile of a kilobyte made 2^25 steps and took a minute
  // (fuzz/regressions/order). Real profiles expand a few hundred items.
  static constexpr uint64_t kMaxItems = uint64_t{1} << 18;

  void spend(uint64_t items) {
    items_ += items;
    if (items_ > kMaxItems)
      throw LayoutError(fmt::format(
          "profile: its walks expand to more than {} runs and calls: do walks call others many "
          "times over, many levels deep?",
          kMaxItems));
  }

  // The stack function (an owner that is a stack's function) that runs `symbol`, unless `caller`
  // is one of its owners; -1 if none.
  int fn_owner(const std::string& symbol, const std::string& caller) const {
    const auto [first, last] = owners_.equal_range(symbol);
    int fn = -1;
    for (auto it = first; it != last; ++it) {
      if (it->second == caller) return -1;
      const auto& all = layout_owners();
      const auto at =
          static_cast<size_t>(std::find(all.begin(), all.end(), it->second) - all.begin());
      if (is_stack_fn_owner(at) && fn < 0) fn = static_cast<int>(at);
    }
    return fn;
  }

  void expand(const std::pair<std::string, uint64_t>& key, const std::string& owner, int depth,
              std::set<std::pair<std::string, uint64_t>>& path, std::vector<CodeStep>& steps,
              int nth = -1) {
    const auto sym = addr_.find(key.first);
    if (sym == addr_.end()) return;  // not in this build
    const NmSymbol& s = *sym->second;
    const auto w = walks_.find(key);
    if (w == walks_.end()) {
      // No walk: the symbol's hot ranges, if the profile has them.
      if (profile_ == nullptr || key.second != 0) return;
      const auto p = profile_->find(key.first);
      if (p == profile_->end()) return;
      spend(p->second.size());
      for (const auto& [off, bytes] : p->second) add_run(s, off, bytes, steps);
      return;
    }
    const auto& items =
        nth >= 0 ? w->second.per_call.at(static_cast<size_t>(nth)) : w->second.items;
    spend(items.size());
    for (const WalkItem& item : items) {
      if (item.target.empty()) {
        add_run(s, item.offset, item.bytes, steps);
        continue;
      }
      const std::pair<std::string, uint64_t> callee{item.target, item.target_offset};
      if (depth >= kMaxDepth || path.count(callee) != 0) continue;  // recursion
      const int fn = fn_owner(item.target, owner);
      if (fn >= 0) {
        CodeStep call;
        call.call = fn;
        call.callee = routine(callee, layout_owners()[static_cast<size_t>(fn)]);
        if (const auto cw = walks_.find(callee);
            sites_ != nullptr && cw != walks_.end() && !cw->second.per_call.empty())
          (*sites_)[callee].push_back(steps.size());
        steps.push_back(call);
        continue;
      }
      path.insert(callee);
      expand(callee, owner, depth + 1, path, steps);
      path.erase(callee);
    }
  }

  void add_run(const NmSymbol& s, uint64_t off, uint64_t bytes, std::vector<CodeStep>& steps) {
    if (bytes == 0) return;
    fetched_.insert(s.name);
    // Compared without adding: an offset near 2^64 must not wrap to a fit.
    if (off > s.size || bytes > s.size - off)
      throw LayoutError(fmt::format(
          "profile: {} has a walk range of {:#x} bytes at offset {:#x}, beyond its size {:#x}: "
          "is the profile from a build of other objects?",
          config::printable(s.name, 120), bytes, off, s.size));
    const uint64_t start = s.addr + off;
    if (!steps.empty() && steps.back().call < 0 &&
        steps.back().start + steps.back().bytes == start) {
      steps.back().bytes += bytes;  // contiguous
      return;
    }
    steps.push_back({start, bytes});
  }

  const std::multimap<std::string, std::string>& owners_;
  const WalkProfile& walks_;
  const HotProfile* profile_;
  LinkedLayout& out_;
  std::map<std::string, const NmSymbol*> addr_;
  std::map<std::pair<std::pair<std::pair<std::string, uint64_t>, std::string>, int>, int> memo_;
  // The routine being expanded's calls of routines with per-call walks.
  std::map<std::pair<std::string, uint64_t>, std::vector<size_t>>* sites_ = nullptr;
  std::set<std::string> fetched_;
  uint64_t items_ = 0;
};

// A function's hot bytes a packet: its profile ranges' lengths summed.
uint64_t hot_bytes_of(const std::vector<std::pair<uint64_t, uint64_t>>& ranges) {
  uint64_t bytes = 0;
  for (const auto& r : ranges) bytes += r.second;
  return bytes;
}

// Most bytes first, ties in the order found.
void most_bytes_first(std::vector<std::pair<std::string, uint64_t>>& fns) {
  std::stable_sort(fns.begin(), fns.end(),
                   [](const auto& x, const auto& y) { return x.second > y.second; });
}

// The profile's functions in `syms` that nothing in `out` runs.
std::vector<std::pair<std::string, uint64_t>> unfetched_functions(
    const std::vector<NmSymbol>& syms, const HotProfile& profile, const LinkedLayout& out,
    const std::set<std::string>& walked) {
  std::set<std::string> fetched = walked;
  for (const auto& [owner, ranges] : out.by_owner)
    for (const auto& r : ranges) fetched.insert(r.symbol);
  std::set<std::string> seen;
  std::vector<std::pair<std::string, uint64_t>> missed;
  for (const NmSymbol& s : syms) {
    if (!s.text || s.size == 0 || fetched.count(s.name) != 0 || !seen.insert(s.name).second)
      continue;
    const auto p = profile.find(s.name);
    if (p == profile.end()) continue;
    if (const uint64_t bytes = hot_bytes_of(p->second); bytes > 0)
      missed.emplace_back(s.name, bytes);
  }
  most_bytes_first(missed);
  return missed;
}

// The profile's functions that are no text symbol of `syms`.
std::vector<std::pair<std::string, uint64_t>> absent_functions(const std::vector<NmSymbol>& syms,
                                                               const HotProfile& profile) {
  std::set<std::string> text;
  for (const NmSymbol& s : syms)
    if (s.text && s.size > 0) text.insert(s.name);
  std::vector<std::pair<std::string, uint64_t>> out;
  for (const auto& [name, ranges] : profile) {
    if (text.count(name) != 0) continue;
    if (const uint64_t bytes = hot_bytes_of(ranges); bytes > 0) out.emplace_back(name, bytes);
  }
  most_bytes_first(out);
  return out;
}

}  // namespace

LinkedLayout layout_from_nm(std::istream& nm_output,
                            const std::multimap<std::string, std::string>& owners,
                            double hot_fraction, const HotProfile* profile,
                            const WalkProfile* walks) {
  return layout_from_nm(parse_nm(nm_output), owners, hot_fraction, profile, walks);
}

LinkedLayout layout_from_nm(const std::vector<NmSymbol>& syms,
                            const std::multimap<std::string, std::string>& owners,
                            double hot_fraction, const HotProfile* profile,
                            const WalkProfile* walks, bool diagnose) {
  if (!(hot_fraction > 0 && hot_fraction <= 1))
    throw LayoutError(fmt::format("hot_fraction must be in (0, 1], got {}", hot_fraction));
  for (const auto& [sym, owner] : owners)
    if (!is_layout_owner(owner))
      throw LayoutError(fmt::format("symbol {}: unknown owner '{}' (valid: {})", sym, owner,
                                    fmt::join(layout_owners(), ", ")));
  LinkedLayout out;
  for (const NmSymbol& s : syms) {
    if (!s.text || s.size == 0) continue;
    const auto [first, last] = owners.equal_range(s.name);
    if (first == last) continue;
    // The symbol's hot ranges, the same under each of its owners.
    std::vector<HotRange> hot;
    if (profile != nullptr) {
      const auto p = profile->find(s.name);
      if (p == profile->end()) continue;  // it never ran
      for (const auto& [off, bytes] : p->second) {
        if (off > s.size || bytes > s.size - off)  // compared without adding: no wrap
          throw LayoutError(fmt::format(
              "profile: {} has a hot range of {:#x} bytes at offset {:#x}, beyond its size "
              "{:#x}: is the profile from a build of other objects?",
              config::printable(s.name, 120), bytes, off, s.size));
        hot.push_back({s.addr + off, bytes, s.name});
      }
    } else {
      // A double holds a size past 2^53 only roughly, and llround cannot
      // hold one past 2^63: the hot bytes are never more than the symbol's
      // own (found by fuzzing: a range past the symbol's end).
      const double hot_bytes = std::round(static_cast<double>(s.size) * hot_fraction);
      hot.push_back({s.addr,
                     hot_bytes >= static_cast<double>(s.size)
                         ? s.size
                         : std::max<uint64_t>(1, static_cast<uint64_t>(hot_bytes)),
                     s.name});
    }
    for (auto it = first; it != last; ++it) {
      auto& ranges = out.by_owner[it->second];
      ranges.insert(ranges.end(), hot.begin(), hot.end());
    }
  }
  if (walks == nullptr || walks->empty()) {
    if (profile != nullptr && diagnose) {
      out.unfetched = unfetched_functions(syms, *profile, out, {});
      out.absent = absent_functions(syms, *profile);
    }
    return out;
  }

  // Entry routines: for each owner, its symbols with walks that no walk of
  // another of its symbols calls (in address order; several are run one
  // after the other).
  WalkExpander expander(syms, owners, *walks, profile, out);
  std::map<std::string, std::vector<std::string>> owned;  // owner -> symbols with walks
  std::multimap<std::string, std::string> owners_of;      // symbol -> owners
  for (const NmSymbol& s : syms) {
    if (!s.text || s.size == 0 || !expander.has_walk(s.name)) continue;
    const auto [first, last] = owners.equal_range(s.name);
    for (auto it = first; it != last; ++it) {
      auto& v = owned[it->second];
      if (std::find(v.begin(), v.end(), s.name) == v.end()) v.push_back(s.name);
    }
  }
  for (const auto& [owner, symbols] : owned) {
    std::vector<std::string> roots;
    for (const auto& sym : symbols) {
      bool called = false;
      for (const auto& caller : symbols) {
        const auto w = walks->find({caller, 0});
        if (caller == sym || w == walks->end()) continue;
        for (const auto& item : w->second.items)
          if (item.target == sym && item.target_offset == 0) called = true;
      }
      if (!called) roots.push_back(sym);
    }
    if (roots.empty()) roots.push_back(symbols.front());
    if (roots.size() == 1) {
      out.entry[owner] = expander.routine({roots.front(), 0}, owner);
      continue;
    }
    Routine r{owner, roots.front(), {}, true};
    for (const auto& sym : roots) {
      const int i = expander.routine({sym, 0}, owner);
      const auto& steps = out.routines[static_cast<size_t>(i)].steps;
      r.steps.insert(r.steps.end(), steps.begin(), steps.end());
    }
    out.entry[owner] = static_cast<int>(out.routines.size());
    out.routines.push_back(std::move(r));
  }
  if (profile != nullptr && diagnose) {
    out.unfetched = unfetched_functions(syms, *profile, out, expander.fetched());
    out.absent = absent_functions(syms, *profile);
  }
  return out;
}

}  // namespace simloop::models
