// The I-cache as a probe component: the code that runs (the stack's
// functions as they are entered and left, the helpers at their events, the
// code around the stack at run(Code)) is fetched through an ICache as a
// fetch plan says (models/fetch_plan.h), by way of a FetchReplay, and each
// stall goes to the account's cache stage, in order, when the replay
// settles (or, without the replay, as it happens). Its events are held
// until then and followed as a batch (below). It owns the cache, the plan,
// the replay and the page map (random page colouring, if asked for).
//
// In a Tee it goes beside the account (models/tee.h): a helper's code is
// fetched before the account prices the helper's work, a function's code
// once the account has opened the function (after_enter, after_leave).
// settle() before the account's cycles are taken.
#pragma once

#include <array>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "models/cycle_account.h"
#include "models/fetch_memo.h"
#include "models/fetch_plan.h"
#include "models/fetch_replay.h"
#include "models/icache.h"
#include "sim/layout/layout.h"
#include "sim/stack/net/probe.h"

namespace simloop::models {

// Random physical pages for code (the L2 is physically indexed).
struct PageColouring {
  uint64_t seed = 1;           // fixes the choice: different between runs, the same within one
  int64_t phys_pages = 65536;  // physical pages to choose from
};

class ICacheProbe : public net::NullProbe {
 public:
  // `code` is the linked layout the plan is made of; `replay` replays
  // repeated fetch sequences (identical results); `colouring` (may be null)
  // gives each code page a random physical page; `max_states` is the
  // fetcher's memo's limit (MemoFetcher; smaller only in tests).
  ICacheProbe(CycleAccount& acct, const LinkedLayout& code, const ICacheConfig& config,
              FetchMode fetch, bool replay, const PageColouring* colouring,
              uint32_t max_states = MemoFetcher::kMaxStates);
  ICacheProbe(const ICacheProbe&) = delete;
  ICacheProbe& operator=(const ICacheProbe&) = delete;

  // A function's code, once the account has opened (or closed) it.
  void after_enter(net::FnId fn) { note(kEnter, static_cast<size_t>(fn)); }
  void after_leave(net::FnId fn) { note(kLeave, static_cast<size_t>(fn)); }
  // Code outside the stack ran (system call entry or exit, the sender's loop).
  void run(Code c) { point(c); }
  void copy(net::CopyKind /*kind*/, const void* /*src*/, const void* /*dst*/, size_t /*len*/) {
    point(Code::copy);
  }
  void cksum(const void* /*addr*/, size_t /*len*/) { point(Code::cksum); }
  void alloc(net::Obj /*obj*/, const void* /*addr*/) { point(Code::mbuf_alloc); }
  void free(net::Obj /*obj*/, const void* /*addr*/) { point(Code::mbuf_free); }
  void header(net::FnId /*fn*/, const void* /*addr*/, unsigned /*size*/, bool /*write*/) {
    point(Code::header_access);
  }
  // Follows the events since the last settle and charges the stalls the
  // replay has deferred.
  void settle() {
    if (put_ != events_.data() || spilled_) follow_held();
    acct_.add_in_place(Stage::cache, [this](double& c) { replay_.settle(c); });
  }

  const ICache& cache() const { return cache_; }
  const FetchReplay::Counts& replay_counts() const { return replay_.counts(); }
  // Settles whose events were a batch seen before.
  uint64_t batch_hits() const { return batch_hits_; }

 private:
  // Events are held, a byte each, until settle(): a packet's events come
  // again packet after packet, and the fetcher's moves for the same events
  // from the same move, and the replay's node they lead to, are those of
  // the last time (a Batch). So a batch seen before is one comparison of
  // bytes, not an event-by-event walk of the fetcher. Without the replay
  // nothing is held: each event is followed as it comes, its stall charged
  // at once.
  static constexpr uint8_t kEnter = 0, kLeave = 1, kPoint = 2;  // an event: kind << 6 | owner
  static_assert(kOwnerCount <= 64, "an event's owner fits in six bits");
  // A point of an owner that fetches nothing is not held: the stack's
  // header accesses are most of its events, and few layouts give them code.
  void point(Code c) {
    if (!inert_[static_cast<size_t>(c)]) note(kPoint, static_cast<size_t>(c));
  }
  void note(uint8_t kind, size_t owner) {
    const auto e = static_cast<uint8_t>(kind << 6 | owner);
    if (put_ == end_) [[unlikely]]
      return spill(e);
    *put_++ = e;
  }
  // Full (or nothing is held): what is held, and `e`, followed at once.
  [[gnu::noinline, gnu::cold]] void spill(uint8_t e);
  [[gnu::noinline]] void follow_held();  // the batch that came next last time, or follow_new()
  [[gnu::noinline]] void follow_new();   // any batch seen before, or the fetcher itself
  void follow(const uint8_t* e, size_t n);
  // What one event fetches (a code of the fetcher's); its stall goes to the
  // cache stage, in order: when the replay settles, or now if it does not
  // defer.
  struct Fetch {
    ICacheProbe* self;
    void operator()(uint32_t code) const { self->fetch_code(code); }
  };
  void fetch_code(uint32_t code) {
    if (replay_.defers()) [[likely]]
      replay_.note(code);
    else
      fetch_now(code);
  }
  [[gnu::noinline, gnu::cold]] void fetch_now(uint32_t code) {
    acct_.add_in_place(Stage::cache, [&](double& c) { replay_.fetch(code, c); });
  }

  // The events of one settle seen before: where they took the fetcher and
  // the replay.
  struct Batch {
    uint32_t start = 0, end = 0;  // the fetcher's move before and after
    uint32_t node = 0;            // the replay's node after
    uint64_t generation = 0;      // the replay tree's, when the node was reached
    size_t offset = 0, size = 0;  // its events in pool_
    int32_t next = -1;            // the batch that followed it last time
  };
  size_t held() const { return static_cast<size_t>(put_ - events_.data()); }
  bool same(const Batch& b, uint32_t start) const;
  // The held events were batch `b`: the fetcher and the replay go where it led.
  void go_to(const Batch& b) {
    fetcher_.go_to(b.end);
    replay_.go_to(b.node);
    ++batch_hits_;
  }
  static constexpr size_t kMaxBatches = size_t{1} << 16;
  static constexpr size_t kMaxPool = size_t{1} << 24;  // bytes of events kept

  CycleAccount& acct_;
  std::unordered_map<uint64_t, uint64_t> phys_page_;  // page colouring of this run
  ICache cache_;
  FetchPlan plan_;       // how the code is fetched
  MemoFetcher fetcher_;  // the replay's ids are its codes
  FetchReplay replay_;
  std::vector<uint8_t> events_;  // held since the last settle, up to put_
  uint8_t* put_ = nullptr;       // where the next is held
  uint8_t* end_ = nullptr;       // events_'s end (put_ == end_ at once without the replay)
  std::array<bool, kOwnerCount> inert_{};  // the fetcher's inert(), kept at hand
  bool spilled_ = false;                   // events of this settle were followed before it
  std::vector<Batch> batches_;
  std::vector<uint8_t> pool_;
  std::unordered_map<uint64_t, int32_t> batch_of_;  // a hash of (start, events) -> batch
  int32_t last_ = -1;                               // the batch of the last settle
  uint64_t batch_hits_ = 0;
};

}  // namespace simloop::models
