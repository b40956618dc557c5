#include "models/icache_probe.h"

#include <cstring>
#include <functional>
#include <random>
#include <string_view>

namespace simloop::models {

ICacheProbe::ICacheProbe(CycleAccount& acct, const LinkedLayout& code, const ICacheConfig& config,
                         FetchMode fetch, bool replay, const PageColouring* colouring,
                         uint32_t max_states)
    : acct_(acct),
      cache_(config),
      plan_(fetch_plan(code, fetch, config.l1.line_bytes, acct.fns())),
      // Without replay every event is followed and every line fetched: what
      // the replay and the memo must give.
      fetcher_(replay ? max_states : 0),
      replay_(cache_, fetcher_.codes(), replay),
      events_(replay ? size_t{1} << 16 : 0),
      put_(events_.data()),
      end_(events_.data() + events_.size()) {
  fetcher_.attach(&plan_);
  for (size_t o = 0; o < kOwnerCount; ++o) inert_[o] = fetcher_.inert(o);
  if (colouring != nullptr) {
    // Each code page gets a distinct random physical page, fixed by the
    // seed: different between runs, the same within one.
    const CodeMap map = code_map(code, acct.fns());
    std::mt19937_64 rng(colouring->seed * 0x2545f4914f6cdd1dULL + 1);
    const auto page = static_cast<uint64_t>(config.page_bytes);
    std::unordered_map<uint64_t, bool> taken;
    for (const auto& ranges : map)
      for (const auto& [start, bytes] : ranges)
        for (uint64_t v = start / page; v <= (start + bytes) / page; ++v) {
          if (phys_page_.count(v) != 0) continue;
          uint64_t phys;
          do phys = rng() % static_cast<uint64_t>(colouring->phys_pages);
          while (taken[phys] && taken.size() < static_cast<size_t>(colouring->phys_pages));
          taken[phys] = true;
          phys_page_[v] = phys;
        }
    cache_.set_page_map([this](uint64_t v) {
      auto it = phys_page_.find(v);
      return it != phys_page_.end() ? it->second : v;
    });
  }
  cache_.tally_lines(true);
}

void ICacheProbe::follow(const uint8_t* e, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const size_t owner = e[i] & 63u;
    switch (e[i] >> 6) {
      case kEnter:
        fetcher_.enter(owner, Fetch{this});
        break;
      case kLeave:
        fetcher_.leave(owner, Fetch{this});
        break;
      default:
        fetcher_.point(owner, Fetch{this});
    }
  }
}

void ICacheProbe::spill(uint8_t e) {
  follow(events_.data(), held());
  follow(&e, 1);
  put_ = events_.data();
  spilled_ = !events_.empty();
}

// Equal bytes, a word at a time: a batch is a few dozen bytes, too few for
// a call of memcmp to pay.
bool ICacheProbe::same(const Batch& b, uint32_t start) const {
  const size_t n = held();
  if (b.start != start || b.size != n) return false;
  const uint8_t* x = pool_.data() + b.offset;
  const uint8_t* y = events_.data();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t u = 0;
    uint64_t v = 0;
    std::memcpy(&u, x + i, 8);
    std::memcpy(&v, y + i, 8);
    if (u != v) return false;
  }
  for (; i < n; ++i)
    if (x[i] != y[i]) return false;
  return true;
}

void ICacheProbe::follow_held() {
  // Mostly the batch that followed the last one last time, from where it
  // led the fetcher. (Once the fetcher goes by itself, follow_new() leaves
  // last_ at -1 for good: no batch starts from its state of its own.)
  if (last_ >= 0 && !spilled_) {
    const int32_t guess = batches_[static_cast<size_t>(last_)].next;
    if (guess >= 0) {
      const Batch& b = batches_[static_cast<size_t>(guess)];
      if (b.generation == replay_.generation() && replay_.node() == 0 && same(b, fetcher_.at())) {
        go_to(b);
        last_ = guess;
        put_ = events_.data();
        return;
      }
    }
  }
  follow_new();
}

void ICacheProbe::follow_new() {
  const size_t n = held();
  if (spilled_ || fetcher_.by_itself() || replay_.node() != 0) {
    // Part of this settle's events were followed already, or the fetcher
    // has no moves to go to: no batch.
    follow(events_.data(), n);
    put_ = events_.data();
    spilled_ = false;
    last_ = -1;
    return;
  }
  const uint32_t start = fetcher_.at();
  const uint64_t key = std::hash<std::string_view>{}(
                           std::string_view(reinterpret_cast<const char*>(events_.data()), n)) ^
                       (uint64_t{start} * 0x9e3779b97f4a7c15ULL);
  int32_t hit = -1;
  if (const auto it = batch_of_.find(key);
      it != batch_of_.end() && same(batches_[static_cast<size_t>(it->second)], start))
    hit = it->second;
  if (hit >= 0 && batches_[static_cast<size_t>(hit)].generation == replay_.generation()) {
    go_to(batches_[static_cast<size_t>(hit)]);
  } else {
    follow(events_.data(), n);
    if (fetcher_.by_itself()) {
      hit = -1;  // it went by itself on the way: its moves are not kept
    } else if (hit >= 0) {
      // Seen in a generation of the replay's tree that is gone.
      Batch& b = batches_[static_cast<size_t>(hit)];
      b.end = fetcher_.at();
      b.node = replay_.node();
      b.generation = replay_.generation();
    } else if (batches_.size() < kMaxBatches && pool_.size() + n <= kMaxPool) {
      hit = static_cast<int32_t>(batches_.size());
      batches_.push_back(
          Batch{start, fetcher_.at(), replay_.node(), replay_.generation(), pool_.size(), n, -1});
      pool_.insert(pool_.end(), events_.begin(), events_.begin() + static_cast<std::ptrdiff_t>(n));
      batch_of_[key] = hit;
    }
  }
  if (last_ >= 0 && hit >= 0) batches_[static_cast<size_t>(last_)].next = hit;
  last_ = hit;
  put_ = events_.data();
}

}  // namespace simloop::models
