#include "models/fetch_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <stdexcept>

namespace simloop::models {

std::string_view fetch_mode_name(FetchMode m) {
  return m == FetchMode::entry ? "entry" : "call-sites";
}

std::optional<FetchMode> parse_fetch_mode(std::string_view s) {
  if (s == "call-sites") return FetchMode::call_sites;
  if (s == "entry") return FetchMode::entry;
  return std::nullopt;
}

FetchPlan fetch_plan(const LinkedLayout& linked, FetchMode mode, int line_bytes,
                     const net::FnTable& fns) {
  // Owners by slot; a layout's call sites name owners by their index in
  // layout_owners(), which is every stack's, so they are mapped to slots.
  std::vector<std::string> owners(kOwnerCount);
  FetchPlan plan;
  plan.dense.fill(FetchPlan::kNotOwner);
  for (size_t o : owner_slots(fns)) {
    owners[o] = owner_name(fns, o);
    plan.dense[o] = static_cast<uint8_t>(plan.owners++);
  }
  const auto& all = layout_owners();
  constexpr int32_t kForeignCall = -2;
  auto call_slot = [&](int32_t call) -> int32_t {
    if (call < 0) return call;
    if (static_cast<size_t>(call) >= all.size()) return static_cast<int32_t>(kOwnerCount);
    const auto s = owner_slot(fns, all[static_cast<size_t>(call)]);
    // A call site of another stack's function: that event never comes here.
    return s ? static_cast<int32_t>(*s) : kForeignCall;
  };
  if (line_bytes <= 0 || !std::has_single_bit(static_cast<unsigned>(line_bytes)))
    throw std::invalid_argument(
        fmt::format("fetch_plan: line_bytes must be a power of two, got {}", line_bytes));
  const int shift = std::countr_zero(static_cast<unsigned>(line_bytes));
  plan.entry.fill(-1);

  auto add_step = [&](FetchPlan::Routine& r, FetchPlan::Step s) {
    if (s.call < 0) {
      if (s.bytes == 0) return;
      if (r.count > 0) {
        FetchPlan::Step& prev = plan.steps.back();
        const uint64_t end = prev.start + prev.bytes;
        // Starting on the line the previous range ended on, or the next one:
        // the same lines in the same order (a repeated touch of the most
        // recently used line changes nothing).
        if (prev.call < 0 && s.start >= end && (s.start >> shift) <= ((end - 1) >> shift) + 1) {
          prev.bytes = s.start + s.bytes - prev.start;
          return;
        }
      }
    } else {
      r.slots = true;
      r.calls |= uint64_t{1} << s.call;
    }
    plan.steps.push_back(s);
    ++r.count;
  };

  // Routines from the layout (call sites and walks), in call_sites mode.
  std::vector<int32_t> index(linked.routines.size(), -1);
  if (mode == FetchMode::call_sites) {
    for (size_t i = 0; i < linked.routines.size(); ++i) {
      const Routine& src = linked.routines[i];
      FetchPlan::Routine r;
      r.first = static_cast<uint32_t>(plan.steps.size());
      r.complete = src.complete;
      for (const CodeStep& cs : src.steps) {
        FetchPlan::Step s;
        s.start = cs.start;
        s.bytes = cs.bytes;
        s.call = call_slot(cs.call);
        s.callee = cs.callee;
        // Its bytes still run; the call itself never happens on this stack.
        if (s.call == kForeignCall) {
          s.call = -1;
          s.callee = -1;
          if (s.bytes == 0) continue;
        }
        if (s.call >= static_cast<int32_t>(kOwnerCount) ||
            s.callee >= static_cast<int32_t>(linked.routines.size()))
          throw std::invalid_argument(
              fmt::format("fetch_plan: routine {} of {} has a bad call site", i, src.owner));
        add_step(r, s);
      }
      index[i] = static_cast<int32_t>(plan.routines.size());
      plan.routines.push_back(r);
    }
    for (auto& s : plan.steps)
      if (s.callee >= 0) s.callee = index[static_cast<size_t>(s.callee)];
  }
  for (size_t o = 0; o < kOwnerCount; ++o) {
    if (owners[o].empty()) continue;
    if (mode == FetchMode::call_sites) {
      const auto e = linked.entry.find(owners[o]);
      if (e != linked.entry.end()) {
        if (e->second < 0 || static_cast<size_t>(e->second) >= index.size())
          throw std::invalid_argument(
              fmt::format("fetch_plan: owner {} has no routine {}", owners[o], e->second));
        plan.entry[o] = index[static_cast<size_t>(e->second)];
        continue;
      }
    }
    // The owner's ranges in one piece.
    const auto it = linked.by_owner.find(owners[o]);
    if (it == linked.by_owner.end() || it->second.empty()) continue;
    FetchPlan::Routine r;
    r.first = static_cast<uint32_t>(plan.steps.size());
    for (const HotRange& h : it->second) add_step(r, {h.start, h.bytes, -1, -1});
    if (r.count == 0) continue;
    plan.entry[o] = static_cast<int32_t>(plan.routines.size());
    plan.routines.push_back(r);
  }
  // Call sites: by routine, by owner in owner order, ascending.
  for (FetchPlan::Routine& r : plan.routines) {
    r.sites = static_cast<uint32_t>(plan.site_lists.size());
    for (size_t o = 0; o < kOwnerCount; ++o) {
      if (((r.calls >> o) & 1) == 0) continue;
      FetchPlan::SiteList list;
      list.first = static_cast<uint32_t>(plan.sites.size());
      uint32_t body = 0;  // the step after the last call site seen
      for (uint32_t j = 0; j < r.count; ++j) {
        const int32_t call = plan.steps[r.first + j].call;
        if (call < 0) continue;
        if (call == static_cast<int32_t>(o)) plan.sites.push_back({j, body});
        body = j + 1;
      }
      list.end = static_cast<uint32_t>(plan.sites.size());
      plan.site_lists.push_back(list);
    }
  }
  // Segments: each routine's runs of ranges between call sites.
  for (const FetchPlan::Routine& r : plan.routines) {
    const uint32_t end = r.first + r.count;
    for (uint32_t i = r.first; i < end;) {
      if (plan.steps[i].call >= 0) {
        ++i;
        continue;
      }
      uint32_t j = i;
      std::vector<std::pair<uint64_t, uint64_t>> ranges;
      for (; j < end && plan.steps[j].call < 0; ++j)
        ranges.emplace_back(plan.steps[j].start, plan.steps[j].bytes);
      plan.steps[i].segment = static_cast<int32_t>(plan.segments.size());
      plan.steps[i].segment_end = j;
      plan.segments.push_back(std::move(ranges));
      i = j;
    }
  }
  return plan;
}

}  // namespace simloop::models
