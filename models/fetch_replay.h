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

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "models/icache.h"

namespace simloop::models {

// For each piece of code, the address ranges of its hot instructions.
using CodeRanges = std::vector<std::pair<uint64_t, uint64_t>>;

class FetchReplay {
 public:
  // `code[i]` are the ranges fetched for code id i (the table may grow as
  // the replay runs: it is read at each use). With `enabled` false,
  // every fetch is simulated at once (what replay must match).
  FetchReplay(ICache& cache, const std::vector<CodeRanges>& code, bool enabled)
      : cache_(cache), code_(code), enabled_(enabled) {}
  FetchReplay(const FetchReplay&) = delete;
  FetchReplay& operator=(const FetchReplay&) = delete;
  // The cache may still keep replays of its records, not yet written.
  ~FetchReplay() { cache_.apply_replays(); }

  // Code id `id` runs; its stall is added to `cache_cycles` now or at the
  // next settle().
  void fetch(size_t id, double& cache_cycles) {
    if (!enabled_) {
      for (const auto& [start, bytes] : code_[id]) cache_cycles += cache_.fetch(start, bytes);
      return;
    }
    note(id);
  }
  // Whether fetch() leaves every stall to settle().
  bool defers() const { return enabled_; }
  // fetch() when it defers: one step down the tree of sequences, mostly
  // the step taken last time.
  void note(size_t id) {
    const auto i = static_cast<uint32_t>(id);
    const Node& n = nodes_[at_];
    if (n.last_id == i) [[likely]]
      at_ = n.last_child;
    else
      step(i);  // a call in tail position: the common path saves no registers
  }
  // Adds the stalls of the fetches since the last settle(), in order.
  void settle(double& cache_cycles) {
    if (at_ == 0) return;
    // Most runs: the sequence's first record left the cache as it found it,
    // and nothing has changed the cache since. It holds without looking, and
    // its run changes nothing a chain sees.
    if (const int32_t known = nodes_[at_].entry; known >= 0) {
      Entry& e = entries_[static_cast<size_t>(known)];
      Record& r = *e.records.front();
      if (e.epoch == cache_.epoch() && !r.t.changes()) [[likely]] {
        add_stalls(r, cache_cycles);
        cache_.replay(r.t);
        r.ran = runs_;
        ++counts_.replayed;
        at_ = 0;
        return;
      }
    }
    run(cache_cycles);
  }

  // The node of the ids noted since the last settle(): the same ids noted
  // from the root lead to the same node, in the same generation of the
  // tree (forget() starts a new one). go_to() is those note()s at once.
  uint32_t node() const { return at_; }
  uint64_t generation() const { return generation_; }
  void go_to(uint32_t node) { at_ = node; }

  struct Counts {
    uint64_t replayed = 0, simulated = 0;  // sequences
    uint64_t chained = 0;    // replays known to hold from the records run before (see run())
    uint64_t compared = 0;   // replays found to hold by comparing the cache's sets
    uint64_t forgotten = 0;  // times the tree started over (too many sequences)
  };
  const Counts& counts() const { return counts_; }

 private:
  struct Record {
    ICache::Transition t;
    std::vector<double> stalls;  // the non-zero stalls, in order
    // Whole stalls (each below 2^20, fewer than 2^20 of them) sum exactly
    // in any order: onto a whole running sum, `total` in one addition
    // gives the same double as adding each in turn.
    bool whole = false;
    double total = 0;
    uint64_t id = 0;   // unique among the records of this replay
    uint64_t ran = 0;  // the history's length when it last ran
    // The records that changed the cache between two of its runs, when it
    // held at the second (newest first, each once): the same ones again,
    // with nothing else changing the cache, leave the cache holding it
    // again (see chain_holds()).
    std::vector<uint64_t> chain;
    bool chain_ok = false;
  };
  struct Entry {
    // Most recently used first; each on its own, so reordering them moves
    // pointers, not their vectors.
    std::vector<std::unique_ptr<Record>> records;
    uint64_t epoch = 0;  // the cache's epoch after the first record last ran
  };
  // The sequences seen, as a tree: a node is the sequence of code ids on
  // the path from the root (node 0, the empty sequence) to it.
  struct Node {
    uint32_t parent = 0, id = 0;
    uint32_t last_id = ~uint32_t{0}, last_child = 0;      // the step taken last
    std::vector<std::pair<uint32_t, uint32_t>> children;  // (id, node)
    int32_t entry = -1;  // index in entries_: the sequence ran before
  };
  static constexpr size_t kMaxEntries = 1024;
  static constexpr size_t kMaxNodes = size_t{1} << 17;
  static constexpr size_t kMaxRecords = 4;

  uint32_t child(uint32_t node, uint32_t id);
  [[gnu::noinline]] void step(uint32_t id) { at_ = child(at_, id); }
  void forget();

  void run(double& cache_cycles);
  // Whole stalls onto a whole sum: exact, so one addition is the same.
  static void add_stalls(const Record& r, double& cache_cycles) {
    if (r.whole && !r.stalls.empty() && cache_cycles >= 0 && cache_cycles < 0x1p52 &&
        cache_cycles == static_cast<double>(static_cast<int64_t>(cache_cycles)))
      cache_cycles += r.total;
    else
      for (double s : r.stalls) cache_cycles += s;
  }
  void simulate(Entry& e, double& cache_cycles);
  // The last runs that changed the cache: which record each did (a fresh
  // id for a change by anything else).
  static constexpr uint64_t kHistory = 64;
  bool chain_holds(const Record& r) const;
  void note_chain(Record& r) const;
  void ran(Record& r);

  ICache& cache_;
  const std::vector<CodeRanges>& code_;
  bool enabled_;
  std::vector<Node> nodes_ = std::vector<Node>(1);
  uint32_t at_ = 0;  // the node of the fetches since the last settle
  std::vector<Entry> entries_;
  std::vector<uint32_t> seq_;  // scratch: a sequence to simulate
  Counts counts_;
  std::array<uint64_t, kHistory> history_{};
  uint64_t runs_ = 0;        // the history's length: runs that changed the cache
  uint64_t next_id_ = 1;     // the next record's id
  uint64_t last_epoch_ = 0;  // the cache's epoch after the last run
  uint64_t generation_ = 0;  // forget()s so far
};

}  // namespace simloop::models
