// The I-cache's answers to fetch sequences it has already seen.
//
// A packet's code fetches repeat packet after packet. What a sequence of
// fetches does depends only on the contents of the cache sets it looks at,
// so once it has run, its effect is known for every state that holds the
// same contents in those sets: the same misses and stalls, and the same
// contents afterwards (ICache::Transition). Each sequence keeps a few such
// records; when the cache holds one's starting contents, the record is
// replayed instead of the fetches. A record that leaves the cache as it
// found it (a fixed point) replays again at no cost while nothing else has
// changed the cache. Results are identical bit for bit: the same stalls are
// added in the same order, and the cache ends in the same state.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "models/icache.h"

namespace simloop::models {

// For each piece of code, the address ranges of its hot instructions.
using CodeRanges = std::vector<std::pair<uint64_t, uint64_t>>;

class FetchReplay {
 public:
  // `code[i]` are the ranges fetched for code id i. With `enabled` false,
  // every fetch is simulated at once (what replay must match).
  FetchReplay(ICache& cache, const std::vector<CodeRanges>& code, bool enabled)
      : cache_(cache), code_(code), enabled_(enabled) {}

  // Code id `id` runs; its stall is added to `cache_cycles` now or at the
  // next settle().
  void fetch(size_t id, double& cache_cycles) {
    if (!enabled_) {
      for (const auto& [start, bytes] : code_[id]) cache_cycles += cache_.fetch(start, bytes);
      return;
    }
    seq_.push_back(static_cast<uint32_t>(id));
    hash_ = (hash_ ^ id) * 0x100000001b3ULL;
  }
  // Adds the stalls of the fetches since the last settle(), in order.
  void settle(double& cache_cycles) {
    if (!seq_.empty()) run(cache_cycles);
  }

  struct Counts {
    uint64_t replayed = 0, simulated = 0;  // sequences
  };
  const Counts& counts() const { return counts_; }

 private:
  struct Record {
    ICache::Transition t;
    std::vector<double> stalls;  // the non-zero stalls, in order
  };
  struct Entry {
    std::vector<uint32_t> seq;
    std::vector<Record> records;  // most recently used first
    uint64_t epoch = 0;           // the cache's epoch after the first record last ran
  };
  static constexpr uint64_t kHashSeed = 0xcbf29ce484222325ULL;
  static constexpr size_t kMaxEntries = 1024;
  static constexpr size_t kMaxRecords = 4;

  void run(double& cache_cycles);
  void simulate(Entry& e, double& cache_cycles);

  ICache& cache_;
  const std::vector<CodeRanges>& code_;
  bool enabled_;
  std::vector<uint32_t> seq_;
  uint64_t hash_ = kHashSeed;
  std::unordered_map<uint64_t, Entry> entries_;
  Counts counts_;
};

}  // namespace simloop::models
