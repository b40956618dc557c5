#include "models/icache_probe.h"

#include <random>

namespace simloop::models {

ICacheProbe::ICacheProbe(CycleAccount& acct, const LinkedLayout& code, const ICacheConfig& config,
                         FetchMode fetch, bool replay, const PageColouring* colouring)
    : acct_(acct),
      cache_(config),
      plan_(fetch_plan(code, fetch, config.l1.line_bytes, acct.fns())),
      // Without replay every event is followed and every line fetched: what
      // the replay and the memo must give.
      fetcher_(replay ? MemoFetcher::kMaxStates : 0),
      replay_(cache_, fetcher_.codes(), replay) {
  fetcher_.attach(&plan_);
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

}  // namespace simloop::models
