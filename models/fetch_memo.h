// A CodeFetcher that works out each of its moves once.
//
// What a CodeFetcher fetches for an event, and the frames it leaves, depend
// only on its frames and the event (models/fetch_plan.h). A packet's events
// come round in the same few states, so each (state, event) pair is
// followed once, by the fetcher itself, and remembered: the ranges it
// fetched and the state it left. After that the event is a table lookup
// and the same ranges, in the same order. States are numbered as they
// are first seen; past a limit (a plan whose states never repeat) the
// fetcher goes on by itself. The replay behind it keys on these moves
// rather than on segments: one step for each event that fetches anything.
//
// Moves are kept in the order they were learnt, which is the order a
// packet's events come in: each event first tries the move after the last
// one taken, a load the processor can make before it knows the state, and
// looks the move up by (state, event) only when that guess is wrong.
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "models/fetch_plan.h"

namespace simloop::models {

class MemoFetcher {
 public:
  using Ranges = std::vector<std::pair<uint64_t, uint64_t>>;
  static constexpr uint32_t kMaxStates = 1u << 14;
  // With max_states 0 it remembers nothing: the fetcher follows every event.
  explicit MemoFetcher(uint32_t max_states = kMaxStates) : max_states_(max_states) {}

  void attach(const FetchPlan* plan) {
    plan_ = plan;
    fetcher_.attach(plan);
    keys_.clear();
    states_.clear();
    moves_of_.clear();
    codes_.clear();
    segment_code_.assign(plan->segments.size(), -1);
    dense_ = plan->dense;
    for (size_t o = 0; o < kOwnerCount; ++o)
      if (dense_[o] != FetchPlan::kNotOwner && plan->inert(o)) dense_[o] = kInert;
    owners_ = plan->owners;
    events_ = 3 * owners_;
    by_itself_ = max_states_ == 0;
    const uint32_t first = intern(fetcher_.frames());
    // The start, as if a move had led there, and the sentinel after it.
    moves_.assign({Move{kNoSlot, base(first), -1, first}, Move{}});
    at_ = 0;
  }

  // As CodeFetcher's, but each call takes `fetch(code)` with an index in
  // codes(): the ranges of every segment the fetcher fetched for the event,
  // in order (an event that fetches nothing calls nothing). Past the state
  // limit, a code per segment.
  template <class F>
  void enter(size_t owner, F&& fetch) {
    event(Kind::enter, owner, fetch);
  }
  template <class F>
  void leave(size_t owner, F&& fetch) {
    event(Kind::leave, owner, fetch);
  }
  template <class F>
  void point(size_t owner, F&& fetch) {
    event(Kind::point, owner, fetch);
  }
  // An owner whose events never fetch anything: a caller may skip them (a
  // call of point() for one costs more than the test).
  bool inert(size_t owner) const { return dense_[owner] == kInert; }
  // Grows as moves are learnt: a FetchReplay's code table.
  const std::vector<Ranges>& codes() const { return codes_; }

  // Where the fetcher stands: the move last taken. The same events from
  // the same move take the same moves, so a caller that saw where they led
  // last time may go there at once (not once the fetcher is by itself).
  uint32_t at() const { return at_; }
  void go_to(uint32_t at) { at_ = at; }

  size_t states() const { return states_.size(); }
  size_t moves() const { return moves_.size() - 2; }  // not the start, nor the sentinel
  bool by_itself() const { return by_itself_; }

 private:
  enum class Kind : uint8_t { enter, leave, point };
  static constexpr uint32_t kNoSlot = ~uint32_t{0};
  static constexpr uint8_t kInert = FetchPlan::kNotOwner - 1;  // dense_ of an inert owner
  struct Move {
    uint32_t slot = kNoSlot;  // the (state, event) it is the move of
    uint32_t next_base = 0;   // the slots of the state it leaves start here
    int32_t code = -1;        // what it fetches (-1: nothing)
    uint32_t next = 0;        // the state it leaves
    uint32_t alt = 0;         // the move taken after it last time, when not the next one
  };
  using Frames = std::vector<CodeFetcher::Frame>;

  template <class F>
  [[gnu::always_inline]] void event(Kind k, size_t owner, F& fetch) {
    const uint8_t d = dense_[owner];
    if (d >= kInert) {
      // The stack's owners only: its slots leave gaps (sim/layout/code.h).
      if (d == FetchPlan::kNotOwner) [[unlikely]]
        not_an_owner(owner);
      return;  // no move to make, nothing to fetch: not even a lookup
    }
    const Move* mv = &moves_[at_];
    const uint32_t slot =
        mv->next_base + static_cast<uint32_t>(k) * static_cast<uint32_t>(owners_) + d;
    if (mv[1].slot == slot) [[likely]] {
      ++at_;
      ++mv;
    } else if (moves_[mv->alt].slot == slot) {
      at_ = mv->alt;
      mv = &moves_[at_];
    } else {
      const int32_t m = moves_of_[slot];
      if (m < 0) [[unlikely]]
        return miss(k, owner, slot, fetch);
      moves_[at_].alt = static_cast<uint32_t>(m);
      at_ = static_cast<uint32_t>(m);
      mv = &moves_[at_];
    }
    if (mv->code >= 0) fetch(static_cast<uint32_t>(mv->code));
  }

  [[noreturn, gnu::noinline, gnu::cold]] static void not_an_owner(size_t owner) {
    throw std::logic_error("fetch memo: an event of owner slot " + std::to_string(owner) +
                           ", which the plan's stack does not have");
  }

  // A move not learnt yet, or past the limit (where the last move leads to a state of
  // its own with no move: every event comes here).
  // `fetch` by value: the caller's copy then needs no place on its stack.
  template <class F>
  [[gnu::noinline, gnu::cold]] void miss(Kind k, size_t owner, uint32_t slot, F fetch) {
    if (by_itself_) {
      auto each = [&](uint32_t s) { fetch(segment_code(s)); };
      return follow(k, owner, each);
    }
    learn(k, owner, slot, fetch);
  }

  // The fetcher itself, from the state it was left in.
  template <class F>
  void follow(Kind k, size_t owner, F& fetch) {
    switch (k) {
      case Kind::enter:
        return fetcher_.enter(owner, fetch);
      case Kind::leave:
        return fetcher_.leave(owner, fetch);
      case Kind::point:
        return fetcher_.point(owner, fetch);
    }
  }

  template <class F>
  void learn(Kind k, size_t owner, uint32_t slot, F& fetch) {
    fetcher_.restore(states_[moves_[at_].next]);
    Ranges ranges;
    auto collect = [&](uint32_t s) {
      const auto& seg = plan_->segments[s];
      ranges.insert(ranges.end(), seg.begin(), seg.end());
    };
    follow(k, owner, collect);
    int32_t code = -1;
    if (!ranges.empty()) {
      code = static_cast<int32_t>(codes_.size());
      codes_.push_back(std::move(ranges));
    }
    // The new move (or the state of its own) takes the sentinel's place.
    const auto fresh = static_cast<uint32_t>(moves_.size() - 1);
    if (fresh != at_ + 1) moves_[at_].alt = fresh;
    at_ = fresh;
    if (states_.size() >= max_states_ && keys_.find(key(fetcher_.frames())) == keys_.end()) {
      // The fetcher holds the state: it goes on from here. A state with no
      // moves, so every event comes to miss().
      by_itself_ = true;
      const auto own = static_cast<uint32_t>(states_.size());
      moves_of_.resize(moves_of_.size() + events_, -1);
      moves_.back() = Move{kNoSlot, base(own), -1, own};
    } else {
      const uint32_t next = intern(fetcher_.frames());
      moves_of_[slot] = static_cast<int32_t>(at_);
      moves_.back() = Move{slot, base(next), code, next};
    }
    moves_.emplace_back();  // the sentinel
    if (code >= 0) fetch(static_cast<uint32_t>(code));
  }

  uint32_t segment_code(uint32_t s) {
    int32_t& c = segment_code_[s];
    if (c < 0) {
      c = static_cast<int32_t>(codes_.size());
      codes_.push_back(plan_->segments[s]);
    }
    return static_cast<uint32_t>(c);
  }

  static_assert(std::has_unique_object_representations_v<CodeFetcher::Frame>,
                "a state's key is its frames' bytes");
  static std::string key(std::span<const CodeFetcher::Frame> f) {
    return {reinterpret_cast<const char*>(f.data()), f.size_bytes()};
  }
  uint32_t base(uint32_t state) const { return state * static_cast<uint32_t>(events_); }
  uint32_t intern(std::span<const CodeFetcher::Frame> f) {
    const auto [it, fresh] = keys_.try_emplace(key(f), static_cast<uint32_t>(states_.size()));
    if (fresh) {
      states_.emplace_back(f.begin(), f.end());
      moves_of_.resize(moves_of_.size() + events_, -1);
    }
    return it->second;
  }

  uint32_t max_states_;
  const FetchPlan* plan_ = nullptr;
  CodeFetcher fetcher_;
  std::unordered_map<std::string, uint32_t> keys_;  // a state's frames -> its number
  std::vector<Frames> states_;                      // number -> frames
  std::vector<int32_t> moves_of_;                   // (state, event) -> move, or -1
  std::vector<Move> moves_;                         // the start, the moves as learnt, a sentinel
  std::vector<Ranges> codes_;
  std::vector<int32_t> segment_code_;         // past the limit: a segment's code, or -1
  std::array<uint8_t, kOwnerCount> dense_{};  // the plan's owner numbers, kept at hand
  size_t owners_ = 0;
  size_t events_ = 0;  // per state: three kinds by the plan's owners
  uint32_t at_ = 0;    // the move last taken
  bool by_itself_ = false;
};

}  // namespace simloop::models
