#include "models/fetch_replay.h"

#include <algorithm>

namespace simloop::models {

uint32_t FetchReplay::child(uint32_t node, uint32_t id) {
  uint32_t c = 0;
  for (const auto& [i, n] : nodes_[node].children)
    if (i == id) {
      c = n;
      break;
    }
  if (c == 0) {
    c = static_cast<uint32_t>(nodes_.size());
    Node fresh;
    fresh.parent = node;
    fresh.id = id;
    nodes_.push_back(std::move(fresh));
    nodes_[node].children.emplace_back(id, c);
  }
  nodes_[node].last_id = id;
  nodes_[node].last_child = c;
  return c;
}

// Sequences that never repeat: start over.
void FetchReplay::forget() {
  nodes_.assign(1, Node{});
  entries_.clear();
}

void FetchReplay::run(double& cache_cycles) {
  int32_t slot = nodes_[at_].entry;
  if (slot < 0) {
    slot = static_cast<int32_t>(entries_.size());
    entries_.emplace_back();
    nodes_[at_].entry = slot;
  }
  Entry& e = entries_[static_cast<size_t>(slot)];
  if (cache_.epoch() != last_epoch_) {
    // Something else changed the cache since the last run: a run no chain
    // knows.
    history_[runs_ % kHistory] = next_id_++;
    ++runs_;
    last_epoch_ = cache_.epoch();
  }
  // The first record left the cache as it found it and nothing has changed
  // the cache since: it holds without looking.
  size_t hit = e.records.size();
  if (!e.records.empty() && !e.records.front().t.changes() && e.epoch == cache_.epoch()) {
    hit = 0;
  } else {
    for (size_t i = 0; i < e.records.size() && hit == e.records.size(); ++i)
      if (chain_holds(e.records[i])) {
        hit = i;
        ++counts_.chained;
      }
    for (size_t i = 0; i < e.records.size() && hit == e.records.size(); ++i)
      if (cache_.holds(e.records[i].t)) {
        hit = i;
        note_chain(e.records[i]);
      }
  }
  if (hit < e.records.size()) {
    Record& r = e.records[hit];
    // (Whole stalls onto a whole sum: exact, so one addition is the same.)
    if (r.whole && !r.stalls.empty() && cache_cycles >= 0 && cache_cycles < 0x1p52 &&
        cache_cycles == static_cast<double>(static_cast<int64_t>(cache_cycles)))
      cache_cycles += r.total;
    else
      for (double s : r.stalls) cache_cycles += s;
    cache_.replay(r.t);
    ran(r);
    std::rotate(e.records.begin(), e.records.begin() + static_cast<std::ptrdiff_t>(hit),
                e.records.begin() + static_cast<std::ptrdiff_t>(hit) + 1);
    e.epoch = cache_.epoch();
    ++counts_.replayed;
  } else {
    simulate(e, cache_cycles);
  }
  at_ = 0;
  if (entries_.size() >= kMaxEntries || nodes_.size() >= kMaxNodes) forget();
}

void FetchReplay::simulate(Entry& e, double& cache_cycles) {
  if (e.records.size() == kMaxRecords) e.records.pop_back();
  e.records.insert(e.records.begin(), Record{});
  Record& r = e.records.front();
  // The sequence: the path from the root to the settled node.
  seq_.clear();
  for (uint32_t n = at_; n != 0; n = nodes_[n].parent) seq_.push_back(nodes_[n].id);
  std::reverse(seq_.begin(), seq_.end());
  cache_.begin_journal();
  for (uint32_t id : seq_)
    for (const auto& [start, bytes] : code_[id]) {
      const double s = cache_.fetch(start, bytes);
      if (s != 0) r.stalls.push_back(s);
      cache_cycles += s;
    }
  cache_.end_journal(r.t);
  r.id = next_id_++;
  r.whole = r.stalls.size() < (size_t{1} << 20);
  for (double s : r.stalls) {
    r.whole = r.whole && whole_stall(s);
    r.total += s;
  }
  ran(r);
  e.epoch = cache_.epoch();
  ++counts_.simulated;
}

// Whether a record holds can be known from the runs since its last one.
// When it ran last, its sets took their `after` contents; each run since
// gave the sets it changed its record's `after`; a set none of them changed
// still holds what the record left there. So, with nothing else changing
// the cache, the records run since decide whether it holds: if they are
// the same as the last time it was found to hold after them, it holds.
bool FetchReplay::chain_holds(const Record& r) const {
  if (!r.chain_ok || runs_ - r.ran - 1 != r.chain.size()) return false;
  for (size_t k = 0; k < r.chain.size(); ++k)
    if (history_[(r.ran + 1 + k) % kHistory] != r.chain[k]) return false;
  return true;
}

void FetchReplay::note_chain(Record& r) const {
  const uint64_t n = runs_ - r.ran - 1;
  r.chain_ok = n <= kHistory - 1;
  r.chain.clear();
  if (!r.chain_ok) return;
  for (uint64_t k = 0; k < n; ++k) r.chain.push_back(history_[(r.ran + 1 + k) % kHistory]);
}

void FetchReplay::ran(Record& r) {
  history_[runs_ % kHistory] = r.id;
  r.ran = runs_++;
  last_epoch_ = cache_.epoch();
}

}  // namespace simloop::models
