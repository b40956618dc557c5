#include "models/icache.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

namespace simloop::models {

namespace {

bool pow2(int64_t v) {
  return v > 0 && std::has_single_bit(static_cast<uint64_t>(v));
}

void check_geometry(const CacheGeometry& g, const std::string& name) {
  if (!pow2(g.size_bytes))
    throw std::invalid_argument(
        fmt::format("{}.size_bytes must be a power of two, got {}", name, g.size_bytes));
  if (!pow2(g.assoc))
    throw std::invalid_argument(
        fmt::format("{}.assoc must be a power of two, got {}", name, g.assoc));
  if (!pow2(g.line_bytes))
    throw std::invalid_argument(
        fmt::format("{}.line_bytes must be a power of two, got {}", name, g.line_bytes));
  const int64_t way_set = static_cast<int64_t>(g.assoc) * g.line_bytes;
  if (g.size_bytes % way_set != 0)
    throw std::invalid_argument(
        fmt::format("{}.size_bytes ({}) must be a multiple of assoc * line_bytes ({} * {})", name,
                    g.size_bytes, g.assoc, g.line_bytes));
}

void check_cycles(double v, const char* name) {
  if (!std::isfinite(v) || v < 0)
    throw std::invalid_argument(fmt::format("{} must be a finite number >= 0, got {}", name, v));
}

}  // namespace

void check_config(const ICacheConfig& config) {
  check_geometry(config.l1, "l1");
  if (config.l2_enabled) {
    check_geometry(config.l2, "l2");
    // Victims and fills move whole lines between the levels.
    if (config.l2.line_bytes != config.l1.line_bytes)
      throw std::invalid_argument(fmt::format("l2.line_bytes ({}) must equal l1.line_bytes ({})",
                                              config.l2.line_bytes, config.l1.line_bytes));
  }
  if (!pow2(config.page_bytes))
    throw std::invalid_argument(
        fmt::format("page_bytes must be a power of two, got {}", config.page_bytes));
  if (config.page_bytes < config.l1.line_bytes)
    throw std::invalid_argument(fmt::format("page_bytes ({}) must hold whole lines of {} bytes",
                                            config.page_bytes, config.l1.line_bytes));
  check_cycles(config.l1_refill_cycles, "l1_refill_cycles");
  check_cycles(config.l2_hit_cycles, "l2_hit_cycles");
  check_cycles(config.memory_cycles, "memory_cycles");
}

ICache::ICache(const ICacheConfig& config) : config_(config) {
  check_config(config);

  line_shift_ = std::countr_zero(static_cast<unsigned>(config.l1.line_bytes));
  page_shift_ = std::countr_zero(static_cast<unsigned>(config.page_bytes));
  auto init = [](Level& lv, const CacheGeometry& g, bool with_virt) {
    lv.assoc = g.assoc;
    lv.sets = g.size_bytes / (static_cast<int64_t>(g.assoc) * g.line_bytes);
    lv.tag.assign(static_cast<size_t>(lv.sets * lv.assoc), kInvalid);
    if (with_virt) lv.virt.assign(lv.tag.size(), kInvalid);
    lv.noted.assign(static_cast<size_t>(lv.sets), 0);
    lv.ver.assign(static_cast<size_t>(lv.sets), 0);
  };
  init(l1_, config.l1, false);
  if (config.l2_enabled) init(l2_, config.l2, true);
  tlb_virt_.fill(kInvalid);
}

void ICache::set_page_map(std::function<uint64_t(uint64_t)> map) {
  page_map_ = std::move(map);
  tlb_virt_.fill(kInvalid);
  flush();
}

void ICache::flush() {
  deferred_.clear();  // their sets are emptied too
  ++epoch_;
  for (Level* lv : {&l1_, &l2_}) std::fill(lv->ver.begin(), lv->ver.end(), epoch_);
  std::fill(l1_.tag.begin(), l1_.tag.end(), kInvalid);
  std::fill(l2_.tag.begin(), l2_.tag.end(), kInvalid);
  std::fill(l2_.virt.begin(), l2_.virt.end(), kInvalid);
}

int64_t ICache::l1_set_of(uint64_t addr) const {
  return static_cast<int64_t>((addr >> line_shift_) & static_cast<uint64_t>(l1_.sets - 1));
}

int64_t ICache::l2_set_of(uint64_t addr) const {
  if (!config_.l2_enabled) return -1;
  return static_cast<int64_t>(phys_line(addr >> line_shift_) & static_cast<uint64_t>(l2_.sets - 1));
}

namespace {
bool has_line(const uint64_t* set, int assoc, uint64_t line) {
  return std::find(set, set + assoc, line) != set + assoc;
}
}  // namespace

const uint64_t* ICache::tags_of(uint8_t lv, uint64_t line) const {
  const Level& l = level(lv);
  const auto set = static_cast<uint32_t>(line & static_cast<uint64_t>(l.sets - 1));
  for (auto it = deferred_.rbegin(); it != deferred_.rend(); ++it)
    for (uint32_t i : (*it)->changed)
      if ((*it)->sets[i].level == lv && (*it)->sets[i].set == set)
        return (*it)->after.data() + (*it)->at[i];
  return l.set_begin(line);
}

bool ICache::in_l1(uint64_t addr) const {
  return has_line(tags_of(0, addr >> line_shift_), l1_.assoc, addr >> line_shift_);
}

bool ICache::in_l2(uint64_t addr) const {
  if (!config_.l2_enabled) return false;
  const uint64_t p = phys_line(addr >> line_shift_);
  return has_line(tags_of(1, p), l2_.assoc, p);
}

uint64_t ICache::phys_line(uint64_t virt_line) const {
  if (!page_map_) return virt_line;
  const int sub = page_shift_ - line_shift_;  // lines per page, as a shift
  const uint64_t vpage = virt_line >> sub;
  const size_t slot = vpage & (kTlbEntries - 1);
  if (tlb_virt_[slot] != vpage) {
    tlb_virt_[slot] = vpage;
    tlb_phys_[slot] = page_map_(vpage);
  }
  return (tlb_phys_[slot] << sub) | (virt_line & ((uint64_t{1} << sub) - 1));
}

namespace {
// Moves way i of a set to the front, shifting ways 0..i-1 back by one. Sets
// hold a handful of ways: a plain loop beats std::rotate's general case.
inline void to_front(uint64_t* set, int i) {
  const uint64_t x = set[i];
  for (int k = i; k > 0; --k) set[k] = set[k - 1];
  set[0] = x;
}
}  // namespace

bool ICache::touch(Level& lv, uint64_t line) {
  looking(lv, line);
  uint64_t* set = lv.set_begin(line);
  if (set[0] == line) return true;  // most recently used: nothing moves
  for (int i = 1; i < lv.assoc; ++i) {
    if (set[i] == line) {
      changing(lv, line);
      // Move to front; L2 keeps its virtual-line record in step.
      to_front(set, i);
      if (!lv.virt.empty()) to_front(&lv.virt[lv.index_of(set)], i);
      return true;
    }
  }
  return false;
}

bool ICache::contains(Level& lv, uint64_t line) {
  if (lv.sets == 0) return false;
  looking(lv, line);
  const uint64_t* set = lv.set_begin(line);
  return std::find(set, set + lv.assoc, line) != set + lv.assoc;
}

uint64_t ICache::insert(Level& lv, uint64_t line, uint64_t virt, uint64_t* evicted_virt) {
  looking(lv, line);
  changing(lv, line);
  uint64_t* set = lv.set_begin(line);
  // Replace the first invalid way, else the least recently used (the last).
  int j = 0;
  while (j < lv.assoc - 1 && set[j] != kInvalid) ++j;
  const uint64_t victim = set[j];
  std::rotate(set, set + j, set + j + 1);  // one element: a memmove
  set[0] = line;
  if (!lv.virt.empty()) {
    uint64_t* v = &lv.virt[lv.index_of(set)];
    if (evicted_virt != nullptr) *evicted_virt = v[j];
    std::rotate(v, v + j, v + j + 1);
    v[0] = virt;
  }
  return victim;
}

bool ICache::remove(Level& lv, uint64_t line) {
  looking(lv, line);
  uint64_t* set = lv.set_begin(line);
  for (int i = 0; i < lv.assoc; ++i) {
    if (set[i] == line) {
      changing(lv, line);
      // Close the gap so invalid ways stay at the end of the set.
      std::rotate(set + i, set + i + 1, set + lv.assoc);
      set[lv.assoc - 1] = kInvalid;
      if (!lv.virt.empty()) {
        uint64_t* v = &lv.virt[lv.index_of(set)];
        std::rotate(v + i, v + i + 1, v + lv.assoc);
        v[lv.assoc - 1] = kInvalid;
      }
      return true;
    }
  }
  return false;
}

double ICache::fill(uint64_t v, bool demand) {
  if (!config_.l2_enabled) {
    if (demand) ++stats_.l2_misses;
    insert(l1_, v, v, nullptr);
    return config_.memory_cycles;
  }
  const uint64_t p = phys_line(v);
  double stall;
  if (config_.l2_exclusive) {
    // The line moves up: exclusive levels never share it.
    const bool hit = remove(l2_, p);
    if (demand) ++(hit ? stats_.l2_hits : stats_.l2_misses);
    stall = hit ? config_.l2_hit_cycles : config_.memory_cycles;
    const uint64_t victim = insert(l1_, v, v, nullptr);
    if (victim != kInvalid) {
      // Two virtual lines may share a physical one (aliased pages): never
      // hold a line twice in a set.
      const uint64_t vp = phys_line(victim);
      if (!touch(l2_, vp)) insert(l2_, vp, victim, nullptr);
    }
  } else {
    const bool hit = touch(l2_, p);
    if (demand) ++(hit ? stats_.l2_hits : stats_.l2_misses);
    stall = hit ? config_.l2_hit_cycles : config_.memory_cycles;
    if (hit) {
      // touch() put it at the front; it now serves virtual line v.
      const size_t front = l2_.index_of(l2_.set_begin(p));
      if (l2_.virt[front] != v) {
        changing(l2_, p);
        l2_.virt[front] = v;
      }
    } else {
      uint64_t evicted_virt = kInvalid;
      // Fill L2 first, so its back-invalidation cannot drop the line L1 is
      // about to receive.
      if (insert(l2_, p, v, &evicted_virt) != kInvalid && evicted_virt != kInvalid &&
          config_.l2_back_invalidate)
        remove(l1_, evicted_virt);
    }
    insert(l1_, v, v, nullptr);  // an L1 victim stays in L2: nothing to do
  }
  return stall;
}

double ICache::fetch(uint64_t addr, uint64_t len) {
  apply_replays();
  if (len == 0) return 0;
  const uint64_t first = addr >> line_shift_;
  const uint64_t last = (addr + (len - 1)) >> line_shift_;
  double stall = 0;
  for (uint64_t x = first;; ++x) {
    ++stats_.line_accesses;
    // L1 keeps no virtual-line record, so its lookup is done here, without a
    // call: the most recently used way is the common hit and moves nothing.
    looking(l1_, x);
    uint64_t* set = l1_.set_begin(x);
    int way = 0;
    while (way < l1_.assoc && set[way] != x) ++way;
    if (way < l1_.assoc) {
      if (way > 0) {
        changing(l1_, x);
        to_front(set, way);
      }
    } else {
      ++stats_.l1_misses;
      const double miss = fill(x, true) + config_.l1_refill_cycles;
      stall += miss;
      if (tally_) tally(x, miss);
      if (config_.next_line_prefetch && !contains(l1_, x + 1)) {
        fill(x + 1, false);
        ++stats_.prefetches;
      }
    }
    if (x == last) break;
  }
  return stall;
}

void ICache::note(Level& lv, uint64_t line) {
  const auto set = static_cast<uint32_t>(line & static_cast<uint64_t>(lv.sets - 1));
  if (lv.noted[set] == journal_id_) return;
  lv.noted[set] = journal_id_;
  const SetRef r{static_cast<uint8_t>(&lv == &l1_ ? 0 : 1), set};
  journal_.push_back(r);
  journal_seen_.push_back(lv.ver[set]);
  copy_set(r, journal_words_);
}

void ICache::copy_set(const SetRef& r, std::vector<uint64_t>& out) const {
  const Level& lv = level(r.level);
  const size_t ways = static_cast<size_t>(lv.assoc);
  const auto first = lv.tag.begin() + static_cast<std::ptrdiff_t>(r.set * ways);
  out.insert(out.end(), first, first + static_cast<std::ptrdiff_t>(ways));
  if (!lv.virt.empty()) {
    const auto v = lv.virt.begin() + static_cast<std::ptrdiff_t>(r.set * ways);
    out.insert(out.end(), v, v + static_cast<std::ptrdiff_t>(ways));
  }
}

void ICache::begin_journal() {
  apply_replays();
  journal_.clear();
  journal_words_.clear();
  journal_seen_.clear();
  if (++journal_id_ == 0) {  // wrapped: no set may look noted by an old journal
    for (Level* lv : {&l1_, &l2_}) std::fill(lv->noted.begin(), lv->noted.end(), 0);
    journal_id_ = 1;
  }
  journal_stats_ = stats_;
  journal_misses_.clear();
  journal_on_ = true;
}

void ICache::end_journal(Transition& t) {
  journal_on_ = false;
  t.sets = journal_;
  t.seen = journal_seen_;
  t.before = journal_words_;
  t.after.clear();
  t.at.clear();
  t.changed.clear();
  for (size_t i = 0; i < journal_.size(); ++i) {
    t.at.push_back(static_cast<uint32_t>(t.after.size()));
    copy_set(journal_[i], t.after);
    if (!std::equal(t.after.begin() + t.at[i], t.after.end(), t.before.begin() + t.at[i]))
      t.changed.push_back(static_cast<uint32_t>(i));
  }
  t.stats = {stats_.line_accesses - journal_stats_.line_accesses,
             stats_.l1_misses - journal_stats_.l1_misses, stats_.l2_hits - journal_stats_.l2_hits,
             stats_.l2_misses - journal_stats_.l2_misses,
             stats_.prefetches - journal_stats_.prefetches};
  t.misses = journal_misses_;
  t.group = -1;
  if (tally_ && tally_whole_ && !t.misses.empty()) {
    // Every stall here is whole (tally() ends deferring at the first that
    // is not): this transition's tally can be counted.
    if (groups_.size() == kMaxGroups) {
      flush_groups();
      groups_.clear();
      ++group_gen_;
    }
    t.group = static_cast<int32_t>(groups_.size());
    t.group_gen = group_gen_;
    groups_.push_back({t.misses, 0});
  }
}

void ICache::add_group(const TallyGroup& g, std::vector<LineMisses>& tally) {
  const auto n = static_cast<double>(g.pending);
  for (const auto& [slot, stall] : g.misses) {
    auto& m = tally[slot];
    m.misses += g.pending;
    m.stall += stall * n;
  }
}

void ICache::flush_groups() {
  for (auto& g : groups_) {
    if (g.pending == 0) continue;
    add_group(g, slot_tally_);
    g.pending = 0;
  }
}

bool ICache::holds(Transition& t) {
  apply_replays();
  for (size_t i = 0; i < t.sets.size(); ++i) {
    const SetRef& r = t.sets[i];
    const Level& lv = level(r.level);
    if (lv.ver[r.set] == t.seen[i]) continue;  // unchanged since it last held `before`
    const size_t ways = static_cast<size_t>(lv.assoc);
    const uint64_t* w = t.before.data() + t.at[i];
    if (!std::equal(w, w + ways, lv.tag.begin() + static_cast<std::ptrdiff_t>(r.set * ways)))
      return false;
    if (!lv.virt.empty() &&
        !std::equal(w + ways, w + 2 * ways,
                    lv.virt.begin() + static_cast<std::ptrdiff_t>(r.set * ways)))
      return false;
    t.seen[i] = lv.ver[r.set];
  }
  return true;
}

namespace {
// A set's ways: a copy of a size known here, not a call to the library's
// (a set is a few words, and a replay copies dozens of them).
inline void copy_ways(const uint64_t* from, size_t ways, uint64_t* to) {
  switch (ways) {
    case 1:
      to[0] = from[0];
      return;
    case 2:
      std::memcpy(to, from, 2 * sizeof(uint64_t));
      return;
    case 4:
      std::memcpy(to, from, 4 * sizeof(uint64_t));
      return;
    case 8:
      std::memcpy(to, from, 8 * sizeof(uint64_t));
      return;
    case 16:
      std::memcpy(to, from, 16 * sizeof(uint64_t));
      return;
    default:
      std::copy(from, from + ways, to);
  }
}
}  // namespace

void ICache::write_deferred() {
  // Each set written takes the epoch as its version: every deferred
  // replay advanced the epoch, so no earlier look saw this version.
  for (const Transition* t : deferred_)
    for (uint32_t i : t->changed) {
      const SetRef& r = t->sets[i];
      Level& lv = level(r.level);
      const size_t ways = static_cast<size_t>(lv.assoc);
      const uint64_t* w = t->after.data() + t->at[i];
      copy_ways(w, ways, &lv.tag[r.set * ways]);
      if (!lv.virt.empty()) copy_ways(w + ways, ways, &lv.virt[r.set * ways]);
      lv.ver[r.set] = epoch_;
      ++replay_writes_;
    }
  deferred_.clear();
}

void ICache::defer(const Transition& t) {
  const auto it = std::find(deferred_.begin(), deferred_.end(), &t);
  if (it != deferred_.end())
    deferred_.erase(it);  // it goes last: its sets end as it leaves them
  else if (deferred_.size() == kMaxDeferred)
    write_deferred();
  deferred_.push_back(&t);
  ++epoch_;  // the cache changed, though its sets are not written yet
}

void ICache::tally_misses(const Transition& t) {
  for (const auto& [slot, stall] : t.misses) {
    auto& m = slot_tally_[slot];
    ++m.misses;
    m.stall += stall;
  }
}

std::unordered_map<uint64_t, ICache::LineMisses> ICache::line_misses() const {
  std::vector<LineMisses> t = slot_tally_;
  for (const auto& g : groups_)
    if (g.pending != 0) add_group(g, t);
  std::unordered_map<uint64_t, LineMisses> out;
  for (size_t i = 0; i < slot_line_.size(); ++i) out[slot_line_[i]] = t[i];
  return out;
}

}  // namespace simloop::models
