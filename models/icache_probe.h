// The I-cache as a probe component: the code that runs (the stack's
// functions as they are entered and left, the helpers at their events, the
// code around the stack at run(Code)) is fetched through an ICache as a
// fetch plan says (models/fetch_plan.h), by way of a FetchReplay, and each
// stall goes to the account's cache stage, in order, as it happens or when
// the replay settles. It owns the cache, the plan, the replay and the page
// map (random page colouring, if asked for).
//
// In a Tee it goes beside the account (models/tee.h): a helper's code is
// fetched before the account prices the helper's work, a function's code
// once the account has opened the function (after_enter, after_leave).
// settle() before the account's cycles are taken.
#pragma once

#include <cstdint>
#include <unordered_map>

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
  // gives each code page a random physical page.
  ICacheProbe(CycleAccount& acct, const LinkedLayout& code, const ICacheConfig& config,
              FetchMode fetch, bool replay, const PageColouring* colouring);
  ICacheProbe(const ICacheProbe&) = delete;
  ICacheProbe& operator=(const ICacheProbe&) = delete;

  // Out of line, as the fetcher's entry and exit were when the account
  // called them: inlined, they would keep the stack's FnScope from being.
  [[gnu::noinline]] void after_enter(net::FnId fn) {
    fetcher_.enter(static_cast<size_t>(fn), Fetch{this});
  }
  [[gnu::noinline]] void after_leave(net::FnId fn) {
    fetcher_.leave(static_cast<size_t>(fn), Fetch{this});
  }
  // Code outside the stack ran (system call entry or exit, the sender's loop).
  void run(Code c) { fetch(static_cast<size_t>(c)); }
  void copy(net::CopyKind /*kind*/, const void* /*src*/, const void* /*dst*/, size_t /*len*/) {
    fetch(static_cast<size_t>(Code::copy));
  }
  void cksum(const void* /*addr*/, size_t /*len*/) { fetch(static_cast<size_t>(Code::cksum)); }
  void alloc(net::Obj /*obj*/, const void* /*addr*/) {
    fetch(static_cast<size_t>(Code::mbuf_alloc));
  }
  void free(net::Obj /*obj*/, const void* /*addr*/) { fetch(static_cast<size_t>(Code::mbuf_free)); }
  void header(net::FnId /*fn*/, const void* /*addr*/, unsigned /*size*/, bool /*write*/) {
    fetch(static_cast<size_t>(Code::header_access));
  }
  // Charges the stalls the replay has deferred.
  void settle() {
    acct_.add_in_place(Stage::cache, [this](double& c) { replay_.settle(c); });
  }

  const ICache& cache() const { return cache_; }
  const FetchReplay::Counts& replay_counts() const { return replay_.counts(); }

 private:
  void fetch(size_t code) {
    if (!fetcher_.inert(code)) fetcher_.point(code, Fetch{this});
  }
  // Fetches what one event fetches (a code of the fetcher's); its stall
  // goes to the cache stage, in order: when the replay settles, or now if
  // it does not defer.
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
  // Out of line: the common path then saves no registers.
  [[gnu::noinline, gnu::cold]] void fetch_now(uint32_t code) {
    acct_.add_in_place(Stage::cache, [&](double& c) { replay_.fetch(code, c); });
  }

  CycleAccount& acct_;
  std::unordered_map<uint64_t, uint64_t> phys_page_;  // page colouring of this run
  ICache cache_;
  FetchPlan plan_;       // how the code is fetched
  MemoFetcher fetcher_;  // the replay's ids are its codes
  FetchReplay replay_;
};

}  // namespace simloop::models
