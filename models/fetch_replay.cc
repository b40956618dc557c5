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
  cache_.apply_replays();  // before the records it may keep go
  nodes_.assign(1, Node{});
  entries_.clear();
  ++generation_;
  ++counts_.forgotten;
}

// settle() when the sequence's first record does not hold without looking.
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
    history_[runs_++ % kHistory] = next_id_++;
    last_epoch_ = cache_.epoch();
  }
  size_t hit = e.records.size();
  for (size_t i = 0; i < e.records.size() && hit == e.records.size(); ++i)
    if (chain_holds(*e.records[i])) {
      hit = i;
      ++counts_.chained;
    }
  for (size_t i = 0; i < e.records.size() && hit == e.records.size(); ++i)
    if (cache_.holds(e.records[i]->t)) {
      hit = i;
      ++counts_.compared;
      note_chain(*e.records[i]);
    }
  if (hit < e.records.size()) {
    Record& r = *e.records[hit];
    add_stalls(r, cache_cycles);
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
  if (e.records.size() == kMaxRecords) {
    cache_.apply_replays();  // before a record it may keep goes
    e.records.pop_back();
  }
  e.records.insert(e.records.begin(), std::make_unique<Record>());
  Record& r = *e.records.front();
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
// the cache, each set holds what the last of those runs to change it left:
// the records run since, each counted where it ran last, decide whether it
// holds. If they are the same as the last time it was found to hold after
// them, it holds. (A record run twice counts once: an interrupt twice
// within a few packets leaves what it leaves once.)
bool FetchReplay::chain_holds(const Record& r) const {
  if (!r.chain_ok || runs_ - r.ran > kHistory) return false;
  // r.chain: those records, newest first, each once.
  size_t j = 0;
  for (uint64_t k = runs_; k > r.ran; --k) {
    const uint64_t id = history_[(k - 1) % kHistory];
    const auto seen = r.chain.begin() + static_cast<std::ptrdiff_t>(j);
    if (std::find(r.chain.begin(), seen, id) != seen) continue;  // it ran again later
    if (j == r.chain.size() || r.chain[j] != id) return false;
    ++j;
  }
  return j == r.chain.size();
}

void FetchReplay::note_chain(Record& r) const {
  r.chain_ok = runs_ - r.ran <= kHistory;
  r.chain.clear();
  if (!r.chain_ok) return;
  for (uint64_t k = runs_; k > r.ran; --k) {
    const uint64_t id = history_[(k - 1) % kHistory];
    if (std::find(r.chain.begin(), r.chain.end(), id) == r.chain.end()) r.chain.push_back(id);
  }
}

// A run that changes no set is left out of the history: the chains see
// only what changes the cache, so a fixed point repeated a varying number
// of times between two others does not make their chains differ.
void FetchReplay::ran(Record& r) {
  if (r.t.changes()) history_[runs_++ % kHistory] = r.id;
  r.ran = runs_;
  last_epoch_ = cache_.epoch();
}

}  // namespace simloop::models
