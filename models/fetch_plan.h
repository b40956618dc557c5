// Which code a packet fetches, and in what order: the fetch model between the
// stack's probe events and the I-cache.
//
// Code runs in routines. A routine is a sequence of address ranges and call
// sites; at a call site the event of another owner comes (a stack function
// entered, a helper run). When that event arrives, the caller's code up to
// the call site is fetched, then the callee's, and the rest of the caller's
// code when the caller is left. A routine without call sites (the shipped
// YAML layouts, except where they give `calls`) is fetched whole when its
// owner's event comes. Routines built from an execution profile (walks)
// are complete: they hold every byte their code runs, helpers included, so
// helper events inside them fetch nothing of their own.
//
// The plan is flat and the fetcher allocates nothing: it runs for every
// simulated event.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/layout/code.h"
#include "sim/layout/layout.h"
#include "sim/stack/net/fn_table.h"

namespace simloop::models {

// Every owner slot (sim/layout/code.h): the stack's functions, then
// syscall_entry, syscall_exit, user_loop and the five helpers.
inline constexpr size_t kOwnerCount = kCodeCount;
inline constexpr size_t kUserLoopOwner = static_cast<size_t>(Code::user_loop);
static_assert(kOwnerCount <= 64, "FetchPlan::Routine::calls holds one bit per owner");

enum class FetchMode : uint8_t {
  // The caller up to each call site, the callee, the rest of the caller on
  // return (owners without call sites: their code when entered).
  call_sites,
  // Each owner's hot code in one piece when it is entered or its event
  // comes, call sites ignored.
  entry,
};
std::string_view fetch_mode_name(FetchMode m);
std::optional<FetchMode> parse_fetch_mode(std::string_view s);

struct FetchPlan {
  struct Step {
    uint64_t start = 0;
    uint64_t bytes = 0;
    int32_t call = -1;    // >= 0: a call site of this owner's event
    int32_t callee = -1;  // the routine run there (-1: the owner's entry)
    // A range that starts a segment (the ranges between two call sites of a
    // routine, or its start or end): the segment, and the step after it.
    int32_t segment = -1;
    uint32_t segment_end = 0;
  };
  struct Routine {
    uint32_t first = 0, count = 0;  // its steps
    bool slots = false;             // has call sites
    uint64_t calls = 0;             // bit o: has a call site of owner o
    bool complete = false;
    // Its call sites by owner: site_lists[sites + k] for the k-th owner (in
    // owner order) whose bit is set in `calls`.
    uint32_t sites = 0;
  };
  // A call site: its step (from the routine's first) and, for a loop that
  // comes round to it again, where that loop's body starts (the step after
  // the call site before it, or 0).
  struct Site {
    uint32_t at = 0;
    uint32_t body = 0;
  };
  std::vector<Step> steps;
  std::vector<Routine> routines;
  // The call sites of one owner in one routine, ascending: [first, end) of
  // `sites`. Tables derived from `steps` when the plan is built, so the
  // fetcher finds a call site without scanning the routine.
  struct SiteList {
    uint32_t first = 0, end = 0;
  };
  std::vector<SiteList> site_lists;
  std::vector<Site> sites;

  // Where a thread of routine `r`, at step `pos`, goes when the event of
  // `owner` comes: the owner's first call site at or after `pos` (`at`, from
  // the routine's first step), fetching from `pos`; if none is ahead, a
  // loop came round to an earlier call site, the nearest behind, and its
  // body (from the step after the call site before it) runs again. `at` is
  // -1 if the routine has no call site of `owner`.
  struct Call {
    int32_t at = -1;
    uint32_t from = 0;
  };
  Call next_call(int32_t r, uint32_t pos, size_t owner) const {
    const Routine& rt = routines[static_cast<size_t>(r)];
    const uint64_t bit = uint64_t{1} << owner;
    if ((rt.calls & bit) == 0) return {};  // most events: no site here
    const SiteList& list =
        site_lists[rt.sites + static_cast<uint32_t>(std::popcount(rt.calls & (bit - 1)))];
    const Site* first = sites.data() + list.first;
    const Site* end = sites.data() + list.end;
    if (first == end) return {};  // (never: a set bit has a site)
    const Site* s = first;
    while (s != end && s->at < pos) ++s;
    if (s != end) return {static_cast<int32_t>(s->at), pos};
    return {static_cast<int32_t>(end[-1].at), end[-1].body};
  }
  std::array<int32_t, kOwnerCount> entry{};  // owner -> routine; -1: runs nothing
  // The owners of the plan's stack, numbered densely (their slots leave
  // gaps): owner -> its number, and how many there are (a memo of events
  // by owner needs no more rows).
  static constexpr uint8_t kNotOwner = 0xff;  // a slot the stack does not use
  std::array<uint8_t, kOwnerCount> dense{};
  size_t owners = 0;
  // Whether every event of `owner` leaves a CodeFetcher as it was, having
  // fetched nothing: the owner runs no code of its own (entry -1), no
  // routine has a call site of it, and it is not user_loop (which finishes
  // the packet). Helpers of a layout that gives them no code are.
  bool inert(size_t owner) const {
    if (owner == kUserLoopOwner || entry[owner] >= 0) return false;
    const uint64_t bit = uint64_t{1} << owner;
    return std::none_of(routines.begin(), routines.end(),
                        [&](const Routine& r) { return (r.calls & bit) != 0; });
  }
  // The ranges of each segment, in order: what the fetcher hands out (a
  // FetchReplay's code table). Code only ever runs from a segment's start
  // to a call site or the routine's end, so a segment is fetched whole.
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> segments;
};

// Compiles a linked layout for a stack with table `fns` (owners by slot).
// Consecutive ranges that touch the same lines in
// the same order as one range would (for `line_bytes` lines) become one.
FetchPlan fetch_plan(const LinkedLayout& linked, FetchMode mode, int line_bytes,
                     const net::FnTable& fns);

// Follows the events of one thread of code through a plan. Each call takes
// `fetch(segment)`, called with the index in plan.segments of each run of
// ranges to fetch, in order. Which ranges an event fetches depends only on the events before
// it, never on the cache: a replay of the cache's answers can key on them.
class CodeFetcher {
 public:
  void attach(const FetchPlan* plan) {
    plan_ = plan;
    depth_ = 0;
  }
  const FetchPlan* plan() const { return plan_; }

  // A stack function entered or left.
  template <class F>
  void enter(size_t owner, F&& fetch);
  template <class F>
  void leave(size_t owner, F&& fetch);
  // Any other event: a helper, system call entry or exit. user_loop starts
  // the next packet: the previous one's code is finished first.
  template <class F>
  void point(size_t owner, F&& fetch);

  size_t depth() const { return depth_; }

  // Its whole state: the routines open, innermost last. What an event
  // fetches depends on these and the event alone (MemoFetcher keys on it).
  struct Frame {
    int32_t routine;
    uint32_t pos;  // next step to fetch
    int32_t owner;
  };
  std::span<const Frame> frames() const { return {frames_.data(), depth_}; }
  void restore(std::span<const Frame> f) {
    std::copy(f.begin(), f.end(), frames_.begin());
    depth_ = f.size();
  }

 private:
  static constexpr size_t kMaxFrames = 32;

  const FetchPlan::Routine& routine(int32_t r) const {
    return plan_->routines[static_cast<size_t>(r)];
  }
  template <class F>
  void run(int32_t r, uint32_t from, uint32_t to, F& fetch) const {
    const FetchPlan::Routine& rt = routine(r);
    const uint32_t end = rt.first + to;
    for (uint32_t i = rt.first + from; i < end;) {
      const FetchPlan::Step& s = plan_->steps[i];
      if (s.call >= 0) {
        ++i;
        continue;
      }
      fetch(static_cast<uint32_t>(s.segment));
      i = s.segment_end;
    }
  }
  // Moves the top frame to its call site for `owner`, fetching what runs
  // before it; returns the step's callee (or the owner's entry), or -2 if the
  // frame has no call site for it.
  template <class F>
  int32_t to_call(size_t owner, F& fetch);
  // Whether the running routine calls `owner` anywhere: most events do not,
  // and this test (inline) spares them the call to to_call, which says the
  // same (-2).
  bool has_site(size_t owner) const {
    return ((routine(frames_[depth_ - 1].routine).calls >> owner) & 1) != 0;
  }
  template <class F>
  void finish_top(F& fetch) {
    Frame& t = frames_[depth_ - 1];
    run(t.routine, t.pos, routine(t.routine).count, fetch);
    --depth_;
  }

  const FetchPlan* plan_ = nullptr;
  std::array<Frame, kMaxFrames> frames_{};
  size_t depth_ = 0;
};

template <class F>
int32_t CodeFetcher::to_call(size_t owner, F& fetch) {
  Frame& t = frames_[depth_ - 1];
  const FetchPlan::Call c = plan_->next_call(t.routine, t.pos, owner);
  if (c.at < 0) return -2;
  const auto j = static_cast<uint32_t>(c.at);
  run(t.routine, c.from, j, fetch);
  t.pos = j + 1;
  const int32_t callee = plan_->steps[routine(t.routine).first + j].callee;
  return callee >= 0 ? callee : plan_->entry[owner];
}

template <class F>
void CodeFetcher::enter(size_t owner, F&& fetch) {
  const int32_t r = plan_->entry[owner];
  if (r < 0) return;  // runs nothing of its own (its code is its caller's)
  int32_t callee = r;
  if (depth_ > 0 && has_site(owner)) {
    const int32_t c = to_call(owner, fetch);
    if (c >= 0) callee = c;
  }
  if (depth_ == kMaxFrames) return run(callee, 0, routine(callee).count, fetch);
  frames_[depth_++] = {callee, 0, static_cast<int32_t>(owner)};
  if (!routine(callee).slots) {
    // No call sites: all of it now, as it is entered.
    run(callee, 0, routine(callee).count, fetch);
    frames_[depth_ - 1].pos = routine(callee).count;
  }
}

template <class F>
void CodeFetcher::leave(size_t owner, F&& fetch) {
  if (plan_->entry[owner] < 0) return;
  size_t k = depth_;
  while (k > 0 && frames_[k - 1].owner != static_cast<int32_t>(owner)) --k;
  if (k == 0) return;  // entered beyond the frame limit, or never
  while (depth_ >= k) finish_top(fetch);
}

template <class F>
void CodeFetcher::point(size_t owner, F&& fetch) {
  if (owner == kUserLoopOwner) {
    // The next packet: what the last one left unfinished runs first.
    while (depth_ > 0) finish_top(fetch);
    const int32_t r = plan_->entry[owner];
    if (r < 0) return;
    if (routine(r).slots)
      frames_[depth_++] = {r, 0, static_cast<int32_t>(owner)};  // the packet's root
    else
      run(r, 0, routine(r).count, fetch);
    return;
  }
  int32_t r = plan_->entry[owner];
  if (depth_ > 0) {
    const int32_t c = has_site(owner) ? to_call(owner, fetch) : -2;
    if (c >= 0)
      r = c;
    else if (routine(frames_[depth_ - 1].routine).complete)
      return;  // its code is in the running routine's
  }
  if (r < 0) return;
  run(r, 0, routine(r).count, fetch);
}

}  // namespace simloop::models
