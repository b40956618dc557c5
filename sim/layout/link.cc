// Linking: a layout's objects placed at addresses in link order, their hot
// functions as ranges by owner and routines of call sites; two linked
// layouts merged.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "sim/layout/layout.h"
#include "sim/layout/layout_detail.h"

namespace simloop::models {

using detail::align_up;

LinkedLayout link(const Layout& layout) {
  validate(layout);
  struct Placed {
    int order, seq;
    size_t pos;  // link position, for ties
    std::string owner;
    HotRange range;
    const std::vector<CallSite>* calls;
  };
  std::vector<Placed> placed;
  LinkedLayout out;
  uint64_t cursor = layout.text_base;
  const uint64_t fa = layout.function_align;
  for (const auto& o : layout.objects) {
    const uint64_t start = align_up(cursor, std::max(o.align, fa));
    std::vector<size_t> by_offset(o.functions.size());
    for (size_t i = 0; i < by_offset.size(); ++i) by_offset[i] = i;
    std::stable_sort(by_offset.begin(), by_offset.end(), [&](size_t a, size_t b) {
      return o.functions[a].offset < o.functions[b].offset;
    });
    // Alignment padding before a function shifts it and all that follow.
    uint64_t shift = 0;
    for (size_t i : by_offset) {
      const HotFunction& f = o.functions[i];
      const uint64_t off = fa > 0 ? align_up(f.offset + shift, fa) : f.offset;
      shift = off - f.offset;
      if (f.hot_bytes > 0 || !f.calls.empty())
        placed.push_back({f.order,
                          f.seq,
                          placed.size(),
                          f.owner,
                          {start + off, f.hot_bytes, f.symbol},
                          &f.calls});
    }
    const uint64_t end = start + o.size + shift;
    out.objects[o.name] = {start, end};
    cursor = end;
  }
  std::stable_sort(placed.begin(), placed.end(), [](const Placed& a, const Placed& b) {
    if (a.order != b.order) return a.order < b.order;
    return a.seq != b.seq ? a.seq < b.seq : a.pos < b.pos;
  });
  // Owners with call sites run a routine: their ranges in order, each split
  // where its calls come.
  std::set<std::string> with_calls;
  for (const auto& p : placed)
    if (!p.calls->empty()) with_calls.insert(p.owner);
  const auto& owners = layout_owners();
  for (const auto& owner : with_calls) {
    Routine r;
    r.owner = owner;
    for (const auto& p : placed) {
      if (p.owner != owner) continue;
      if (r.symbol.empty()) r.symbol = p.range.symbol;
      uint64_t done = 0;
      for (const CallSite& c : *p.calls) {
        if (c.at > done) r.steps.push_back({p.range.start + done, c.at - done});
        done = std::max(done, c.at);
        CodeStep call;
        call.call =
            static_cast<int>(std::find(owners.begin(), owners.end(), c.owner) - owners.begin());
        r.steps.push_back(call);
      }
      if (p.range.bytes > done) r.steps.push_back({p.range.start + done, p.range.bytes - done});
    }
    out.entry[owner] = static_cast<int>(out.routines.size());
    out.routines.push_back(std::move(r));
  }
  for (auto& p : placed)
    if (p.range.bytes > 0) out.by_owner[p.owner].push_back(std::move(p.range));
  return out;
}

LinkedLayout merge(const LinkedLayout& a, const LinkedLayout& b) {
  LinkedLayout out = a;
  for (const auto& [name, r] : b.objects) {
    for (const auto& [other, q] : out.objects)
      if (r.first < q.second && q.first < r.second)
        throw LayoutError(fmt::format("merging layouts: object {} [{:#x}, {:#x}) overlaps {}", name,
                                      r.first, r.second, other));
    if (!out.objects.emplace(name, r).second)
      throw LayoutError(fmt::format("merging layouts: object '{}' appears in both", name));
  }
  for (const auto& [owner, ranges] : b.by_owner) {
    auto& v = out.by_owner[owner];
    v.insert(v.end(), ranges.begin(), ranges.end());
  }
  const int base = static_cast<int>(out.routines.size());
  for (Routine r : b.routines) {
    for (auto& step : r.steps)
      if (step.callee >= 0) step.callee += base;
    out.routines.push_back(std::move(r));
  }
  // An owner with call sites in one layout runs that routine: its code must
  // not also lie in the other.
  auto refuse = [](const std::string& owner) {
    throw LayoutError(fmt::format(
        "merging layouts: owner '{}' has call sites in one layout and code in the other", owner));
  };
  for (const auto& [owner, index] : a.entry)
    if (b.by_owner.count(owner) != 0 || b.entry.count(owner) != 0) refuse(owner);
  for (const auto& [owner, index] : b.entry) {
    if (a.by_owner.count(owner) != 0) refuse(owner);
    out.entry[owner] = base + index;
  }
  return out;
}

uint64_t total_hot_bytes(const LinkedLayout& linked) {
  std::vector<std::pair<uint64_t, uint64_t>> all;
  for (const auto& [owner, ranges] : linked.by_owner)
    for (const auto& r : ranges)
      if (r.bytes > 0) all.emplace_back(r.start, r.start + r.bytes);
  std::sort(all.begin(), all.end());
  uint64_t n = 0, end = 0;
  for (const auto& [a, b] : all) {
    const uint64_t from = std::max(a, end);
    if (b > from) n += b - from;
    end = std::max(end, b);
  }
  return n;
}

}  // namespace simloop::models
