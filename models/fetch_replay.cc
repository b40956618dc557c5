#include "models/fetch_replay.h"

#include <algorithm>

namespace simloop::models {

void FetchReplay::run(double& cache_cycles) {
  auto it = entries_.find(hash_);
  if (it != entries_.end() && it->second.seq != seq_) {
    entries_.erase(it);  // another sequence with the same hash: start over
    it = entries_.end();
  }
  if (it == entries_.end()) {
    if (entries_.size() >= kMaxEntries) entries_.clear();  // sequences that never repeat
    it = entries_.emplace(hash_, Entry{seq_, {}, 0}).first;
  }
  Entry& e = it->second;
  // The first record left the cache as it found it and nothing has changed
  // the cache since: it holds without looking.
  size_t hit = e.records.size();
  if (!e.records.empty() && !e.records.front().t.changes() && e.epoch == cache_.epoch()) {
    hit = 0;
  } else {
    for (size_t i = 0; i < e.records.size(); ++i)
      if (cache_.holds(e.records[i].t)) {
        hit = i;
        break;
      }
  }
  if (hit < e.records.size()) {
    Record& r = e.records[hit];
    for (double s : r.stalls) cache_cycles += s;
    cache_.replay(r.t);
    std::rotate(e.records.begin(), e.records.begin() + static_cast<std::ptrdiff_t>(hit),
                e.records.begin() + static_cast<std::ptrdiff_t>(hit) + 1);
    e.epoch = cache_.epoch();
    ++counts_.replayed;
  } else {
    simulate(e, cache_cycles);
  }
  seq_.clear();
  hash_ = kHashSeed;
}

void FetchReplay::simulate(Entry& e, double& cache_cycles) {
  if (e.records.size() == kMaxRecords) e.records.pop_back();
  e.records.insert(e.records.begin(), Record{});
  Record& r = e.records.front();
  cache_.begin_journal();
  for (uint32_t id : seq_)
    for (const auto& [start, bytes] : code_[id]) {
      const double s = cache_.fetch(start, bytes);
      if (s != 0) r.stalls.push_back(s);
      cache_cycles += s;
    }
  cache_.end_journal(r.t);
  e.epoch = cache_.epoch();
  ++counts_.simulated;
}

}  // namespace simloop::models
