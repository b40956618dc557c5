// A set-associative LRU instruction cache with a second level behind it.
//
// L1 is indexed and tagged by virtual address (like the Athlon's L1 I-cache);
// L2 by physical address, through a page map that stands for the physical
// placement of code pages (page colouring). Each L1 miss stalls for the L2 hit
// latency or the memory latency, plus the work a refilled line needs before it
// runs (refill_cycles); a next-line prefetch rides along for free.
//
// The model runs for every simulated packet, so it keeps flat arrays ordered
// most-recently-used first within each set and never allocates per fetch.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/support/key_spec.h"

namespace simloop::models {

struct CacheGeometry {
  int64_t size_bytes;
  int assoc;
  int line_bytes;
};

struct ICacheConfig {
  CacheGeometry l1{65536, 2, 64};
  // Extra stall per demand L1 miss, whichever level serves it. On an Athlon
  // (K7) predecode bits and branch selectors live only in L1, so a refilled
  // line is predecoded again and its taken branches mispredict once.
  double l1_refill_cycles = 0;
  // A miss on line X also brings X+1 into L1 (no stall charged: it overlaps).
  bool next_line_prefetch = true;
  bool l2_enabled = true;
  CacheGeometry l2{262144, 16, 64};
  // Exclusive (Athlon): L1 victims go to L2; an L2 hit moves the line to L1.
  // Otherwise fills go to both levels and L1 victims are dropped; with
  // back-invalidation (inclusive) an L2 eviction also drops the line from L1,
  // without it L1 keeps it (cachegrind's last level, which only sees L1
  // misses).
  bool l2_exclusive = true;
  bool l2_back_invalidate = true;
  double l2_hit_cycles = 11;   // stall per L1 miss that hits L2
  double memory_cycles = 150;  // stall per miss in both levels
  int page_bytes = 4096;
};

// machine.cache.*: the caches' geometry and stalls (whether the model runs,
// and how code is fetched, are the experiment's: sim/config/schema.cc).
inline constexpr auto kICacheKeys = std::to_array<support::KeySpec<ICacheConfig>>({
    {"l1", "First-level instruction cache, virtually indexed."},
    {"l1.size_bytes", "Capacity in bytes.",
     &support::at<&ICacheConfig::l1, &CacheGeometry::size_bytes>, 64, 1 << 26},
    {"l1.assoc", "Ways per set.", &support::at<&ICacheConfig::l1, &CacheGeometry::assoc>, 1, 64},
    {"l1.line_bytes", "Line size in bytes.",
     &support::at<&ICacheConfig::l1, &CacheGeometry::line_bytes>, 8, 512},
    {"l1.refill_cycles",
     "Extra stall per L1 miss on top of the level that serves it: work before the refilled line "
     "runs (an Athlon predecodes it again and mispredicts its taken branches once).",
     &support::at<&ICacheConfig::l1_refill_cycles>, 0, 1e4},
    {"next_line_prefetch", "A miss also brings the next line in (no stall).",
     &support::at<&ICacheConfig::next_line_prefetch>},
    {"l2", "Second-level cache behind L1, physically indexed."},
    {"l2.enabled", "Model an L2 (else every L1 miss goes to memory).",
     &support::at<&ICacheConfig::l2_enabled>},
    // Bounded at 256 MB: the model keeps every line's tag (4 Mi lines of 64
    // B, about 100 MB of memory at that size).
    {"l2.size_bytes", "Capacity in bytes (at most 256 MB: the model keeps a tag per line).",
     &support::at<&ICacheConfig::l2, &CacheGeometry::size_bytes>, 64, int64_t{1} << 28},
    {"l2.assoc", "Ways per set.", &support::at<&ICacheConfig::l2, &CacheGeometry::assoc>, 1, 64},
    {"l2.exclusive",
     "Exclusive (L1 victims move to L2, as on the Athlon) or not (fills go to both).",
     &support::at<&ICacheConfig::l2_exclusive>},
    {"l2.back_invalidate",
     "Not exclusive: an L2 eviction also drops the line from L1 (inclusive); off: L1 keeps it "
     "(cachegrind's last level).",
     &support::at<&ICacheConfig::l2_back_invalidate>},
    {"l2.hit_cycles", "Stall per L1 miss that hits L2.", &support::at<&ICacheConfig::l2_hit_cycles>,
     0, 1e4},
    {"memory_cycles", "Stall per miss in every level.", &support::at<&ICacheConfig::memory_cycles>,
     0, 1e5},
});

// Throws std::invalid_argument naming the field ("l1.size_bytes ...") if
// ICache would refuse `config`; allocates nothing.
void check_config(const ICacheConfig& config);

// A stall that is a whole number of cycles below 2^20: sums of such stalls
// (far below 2^53) are exact in any order, so they can be counted and
// added later, or added as one total, giving the same double.
inline bool whole_stall(double s) {
  return s >= 0 && s < 1048576.0 && s == static_cast<double>(static_cast<int64_t>(s));
}

class ICache {
 public:
  // Throws std::invalid_argument naming the bad field: sizes, associativity,
  // line and page sizes must be powers of two, a cache must hold at least one
  // set, L2 lines must equal L1 lines, a page must hold whole lines.
  explicit ICache(const ICacheConfig& config);

  // Touches every line of [addr, addr + len) in order; returns stall cycles.
  double fetch(uint64_t addr, uint64_t len);

  // The physical page of each virtual page (identity if not set). L2 is
  // physically indexed, so this sets the page colouring. The cached contents
  // belong to the old placement, so both levels are flushed (stats are kept).
  void set_page_map(std::function<uint64_t(uint64_t virt_page)> map);

  struct Stats {
    uint64_t line_accesses = 0, l1_misses = 0, l2_hits = 0, l2_misses = 0, prefetches = 0;
  };
  const Stats& stats() const { return stats_; }
  void reset_stats() { stats_ = {}; }

  // Demand L1 misses by virtual line: how many and the stall they cost (for
  // the per-function and per-set report). Off unless asked for; replayed
  // fetches count as the fetches themselves would.
  struct LineMisses {
    uint64_t misses = 0;
    double stall = 0;
  };
  void tally_lines(bool on) { tally_ = on; }
  std::unordered_map<uint64_t, LineMisses> line_misses() const;
  int line_bytes() const { return config_.l1.line_bytes; }
  // Empties both levels (stats are kept).
  void flush();

  int64_t l1_set_of(uint64_t addr) const;
  int64_t l1_sets() const { return l1_.sets; }
  // The L2 set of the line holding virtual address `addr`, after the page map.
  int64_t l2_set_of(uint64_t addr) const;
  int64_t l2_sets() const { return l2_.sets; }
  // Whether the line holding virtual address `addr` is cached, without
  // touching LRU state (for reports and tests).
  bool in_l1(uint64_t addr) const;
  bool in_l2(uint64_t addr) const;

  const ICacheConfig& config() const { return config_; }

  // For FetchReplay. Every change to either level (a fill, an eviction, a
  // reordering of a set) advances the epoch, so an unchanged epoch means an
  // unchanged state.
  uint64_t epoch() const { return epoch_; }

  // What some fetches did to the cache: the sets they looked at (in either
  // level), with those sets' contents before and after. What fetches do
  // depends only on the contents of the sets they look at, so the same
  // fetches from any state that holds `before` in those sets do the same
  // again and leave `after` there.
  struct SetRef {
    uint8_t level;  // 0: L1, 1: L2
    uint32_t set;
  };
  struct Transition {
    std::vector<SetRef> sets;
    std::vector<uint32_t> at;             // where each set's words start in before/after
    std::vector<uint64_t> before, after;  // each set's ways (L2: then their virtual lines)
    std::vector<uint32_t> changed;        // the sets (indices) whose after differs
    // Per set, a version of that set known to hold `before`: a set whose
    // version has not moved since need not be compared again.
    std::vector<uint64_t> seen;
    Stats stats;  // what the fetches added to the counters
    // With tally_lines(): each demand miss, as (the line's tally slot,
    // stall), in order. A replay then costs two additions per miss.
    std::vector<std::pair<uint32_t, double>> misses;
    // While every stall tallied is a whole number of cycles, a replay's
    // tally is counted, not added: its misses, one tally group.
    int32_t group = -1;
    uint32_t group_gen = 0;
    bool changes() const { return !changed.empty(); }
  };
  // Between begin_journal() and end_journal(t) the cache notes every set
  // looked at, with its contents at the first look; end_journal fills `t`.
  void begin_journal();
  void end_journal(Transition& t);
  // Whether the cache now holds `t.before` in t's sets (updates t.seen).
  bool holds(Transition& t);
  // Does what `t` records (its sets take their `after` contents, the
  // counters their increments), as the fetches themselves would. The sets
  // are written when something next looks at them: until then the cache
  // keeps `t` (which must stay alive until apply_replays()).
  void replay(const Transition& t) {
    if (t.changes()) defer(t);
    stats_.line_accesses += t.stats.line_accesses;
    stats_.l1_misses += t.stats.l1_misses;
    stats_.l2_hits += t.stats.l2_hits;
    stats_.l2_misses += t.stats.l2_misses;
    stats_.prefetches += t.stats.prefetches;
    if (!tally_) return;
    if (t.group >= 0 && t.group_gen == group_gen_ && tally_whole_) {
      TallyGroup& g = groups_[static_cast<size_t>(t.group)];
      if (++g.pending == kMaxPending) [[unlikely]] {
        add_group(g, slot_tally_);
        g.pending = 0;
      }
      return;
    }
    tally_misses(t);
  }
  // Writes the replays not yet written to their sets. Called by everything
  // here that looks at the sets; a caller calls it before a transition it
  // replayed goes away.
  void apply_replays() {
    if (!deferred_.empty()) write_deferred();
  }
  // Sets written by replays so far (deferred ones once written).
  uint64_t replay_writes() const { return replay_writes_; }

 private:
  static constexpr uint64_t kInvalid = ~uint64_t{0};

  // One level: `assoc` ways per set, most recently used first; invalid ways
  // are kept at the end of a set.
  struct Level {
    int64_t sets = 0;
    int assoc = 0;
    std::vector<uint64_t> tag;    // line number (virtual in L1, physical in L2)
    std::vector<uint64_t> virt;   // L2 only: the virtual line it was filled for
    std::vector<uint32_t> noted;  // per set: the journal that noted it last
    std::vector<uint64_t> ver;    // per set: the epoch of its last change
    size_t words_per_set() const { return virt.empty() ? assoc : 2 * static_cast<size_t>(assoc); }
    uint64_t* set_begin(uint64_t line) {
      return &tag[(line & static_cast<uint64_t>(sets - 1)) * assoc];
    }
    const uint64_t* set_begin(uint64_t line) const {
      return &tag[(line & static_cast<uint64_t>(sets - 1)) * assoc];
    }
    size_t index_of(const uint64_t* way) const { return static_cast<size_t>(way - tag.data()); }
  };

  // Looks `line` up; on a hit moves it to the front of its set.
  bool touch(Level& lv, uint64_t line);
  bool contains(Level& lv, uint64_t line);
  // Inserts `line` as most recently used; returns the evicted line (or
  // kInvalid) and, for L2, its recorded virtual line through `evicted_virt`.
  uint64_t insert(Level& lv, uint64_t line, uint64_t virt, uint64_t* evicted_virt);
  // Drops `line` if present; returns whether it was.
  bool remove(Level& lv, uint64_t line);
  // Called before the set of `line` in `lv` is looked at, and before it
  // changes.
  void looking(Level& lv, uint64_t line) {
    if (journal_on_) note(lv, line);
  }
  void changing(Level& lv, uint64_t line) {
    lv.ver[line & static_cast<uint64_t>(lv.sets - 1)] = ++epoch_;
  }
  void note(Level& lv, uint64_t line);
  Level& level(uint8_t i) { return i == 0 ? l1_ : l2_; }
  const Level& level(uint8_t i) const { return i == 0 ? l1_ : l2_; }
  // Appends the contents of a set to `out`.
  void copy_set(const SetRef& r, std::vector<uint64_t>& out) const;

  uint64_t phys_line(uint64_t virt_line) const;
  // Brings virtual line `v` into L1 from L2 or memory; returns the stall a
  // demand miss would pay (a prefetch ignores it).
  double fill(uint64_t v, bool demand);

  // The tags of a set as the cache holds them (a deferred replay's, if one
  // changed it), without writing anything.
  const uint64_t* tags_of(uint8_t level, uint64_t line) const;
  void write_deferred();

  ICacheConfig config_;
  Level l1_, l2_;
  // Replays whose sets are not written yet, each once, in the order of its
  // last replay: a set holds what the last of them to change it left, so
  // writing each once in this order gives what writing every replay would.
  // A packet's path and an interrupt's, replayed in turn, are then written
  // only when something looks.
  static constexpr size_t kMaxDeferred = 8;
  std::vector<const Transition*> deferred_;
  uint64_t replay_writes_ = 0;
  int line_shift_ = 0, page_shift_ = 0;
  std::function<uint64_t(uint64_t)> page_map_;
  // A small direct-mapped translation cache: the std::function is slow next
  // to a cache lookup, and the hot path touches a few dozen pages.
  static constexpr size_t kTlbEntries = 256;
  mutable std::array<uint64_t, kTlbEntries> tlb_virt_{}, tlb_phys_{};
  Stats stats_;
  uint64_t epoch_ = 0;
  // The journal: the sets looked at, and their contents at the first look.
  bool journal_on_ = false;
  uint32_t journal_id_ = 0;
  std::vector<SetRef> journal_;
  std::vector<uint64_t> journal_words_;
  std::vector<uint64_t> journal_seen_;  // each noted set's version at the first look
  Stats journal_stats_;                 // the counters when the journal began
  std::vector<std::pair<uint32_t, double>> journal_misses_;
  bool tally_ = false;
  // Per missed line: a slot in flat arrays (found by hash only when a miss
  // is simulated, never when one is replayed).
  std::unordered_map<uint64_t, uint32_t> slot_of_;
  std::vector<uint64_t> slot_line_;
  std::vector<LineMisses> slot_tally_;
  // Deferred tallies. A sum of whole numbers (each below 2^20, the sums far
  // below 2^53) is exact in any order, so while every stall tallied is one
  // (tally_whole_), a replayed transition only counts how often it ran
  // (its group's `pending`) and line_misses() adds count x stall: the same
  // doubles as adding each miss in turn. The first stall that is not a
  // whole number adds every pending count first and ends deferring.
  struct TallyGroup {
    std::vector<std::pair<uint32_t, double>> misses;
    uint64_t pending = 0;
  };
  static constexpr size_t kMaxGroups = 4096;
  static constexpr uint64_t kMaxPending = uint64_t{1} << 20;
  std::vector<TallyGroup> groups_;
  uint32_t group_gen_ = 0;  // a transition's group is valid only in its generation
  bool tally_whole_ = true;
  static void add_group(const TallyGroup& g, std::vector<LineMisses>& tally);
  // replay()'s parts that are not counting: keeping `t` to write its sets
  // later, and tallying its misses one by one.
  void defer(const Transition& t);
  void tally_misses(const Transition& t);
  void flush_groups();
  void tally(uint64_t line, double stall) {
    if (tally_whole_ && !whole_stall(stall)) {
      flush_groups();
      tally_whole_ = false;
    }
    auto [it, fresh] = slot_of_.try_emplace(line, static_cast<uint32_t>(slot_line_.size()));
    if (fresh) {
      slot_line_.push_back(line);
      slot_tally_.emplace_back();
    }
    auto& m = slot_tally_[it->second];
    ++m.misses;
    m.stall += stall;
    if (journal_on_) journal_misses_.emplace_back(it->second, stall);
  }
};

}  // namespace simloop::models
