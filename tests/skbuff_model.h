// The sk_buff layer's model: the skbs a test holds and those queued on one
// socket, each a window [data, tail) onto a head buffer, with a shadow of
// every head's bytes (shared by clones, as the memory is), operated on at
// random (Draw, Apply) and checked after every step (CheckAll) against the
// real structures and the allocator: every field, every known byte of every
// head, users and dataref, truesize and the socket's charges, the drop
// counts, and that the caches hold exactly what the skbs reference.
//
// The includer provides gtest's EXPECT_* / ASSERT_* / ADD_FAILURE macros,
// or its own with the same use; `choose` draws every decision and `fill`
// the bytes written (both uint64_t operator()()).
#pragma once

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <stdexcept>
#include <vector>

#include "sim/stack/linux/skbuff.h"
#include "sim/stack/linux/sock.h"

namespace simloop::lnx::model {

enum Op {
  kAlloc,
  kSendAlloc,
  kReserve,
  kPut,
  kPush,
  kPull,
  kTrim,
  kClone,
  kCopy,
  kPskbCopy,
  kCowHead,
  kUnclone,
  kGet,
  kShareCheck,
  kConsume,
  kKfree,
  kOrphan,
  kEnqueue,
  kDequeue,
  kStale,
  kLimits,
  kBufs,
  kOpCount
};
constexpr std::array<const char*, kOpCount> kOpNames = {
    "alloc_skb", "sock_alloc_send_skb", "skb_reserve", "skb_put",   "skb_push",     "skb_pull",
    "skb_trim",  "skb_clone",           "skb_copy",    "pskb_copy", "skb_cow_head", "skb_unclone",
    "skb_get",   "skb_share_check",     "consume_skb", "kfree_skb", "skb_orphan",   "enqueue",
    "dequeue",   "stale-pointer",       "limits",      "bufs"};
// How often each operation is drawn.
constexpr std::array<int, kOpCount> kOpWeights = {10, 6, 4, 12, 10, 8, 4, 8, 5, 5, 8,
                                                  3,  4, 3, 8,  6,  3, 8, 6, 2, 3, 2};

// The socket of the model, counting its callbacks.
struct CountingSock : Sock {
  uint64_t write_space = 0;
  uint64_t data_ready = 0;
};

// What kmalloc_reserve must pick, derived here from the rule, not the code:
// SKB_HEAD_ALIGN(size), then the 640-byte small-head cache or a power of two.
inline unsigned ExpectAlloc(unsigned size, bool small_heads) {
  const unsigned obj = ((size + 63u) & ~63u) + 320u;
  if (small_heads && obj <= 640u) return 640u;
  unsigned a = 512;
  while (a < obj) a <<= 1;
  return a;
}

template <class Choose, class Fill>
class SkbModel {
 public:
  static constexpr size_t kMaxHeld = 24;  // skbs held at once (alloc, clone, copy stop there)
  static constexpr size_t kSkbs = 96;
  static constexpr size_t kSmallHeads = 40;
  static constexpr std::array<size_t, kKmallocClasses> kHeads = {40, 40, 40, 24, 12, 6, 4, 3, 3};

  SkbModel(Choose& choose, Fill& fill, bool small_heads)
      : choose_(choose), fill_(fill), small_heads_(small_heads), pool_(Config(small_heads)) {
    sk_.sk_write_space = [](Sock* s) { ++static_cast<CountingSock*>(s)->write_space; };
    sk_.sk_data_ready = [](Sock* s) { ++static_cast<CountingSock*>(s)->data_ready; };
    sk_.sk_sndbuf = 20000;
    sk_.sk_rcvbuf = 12000;
  }

  static SkbPoolConfig Config(bool small_heads) {
    SkbPoolConfig c;
    c.skbs = kSkbs;
    c.small_heads = small_heads ? kSmallHeads : 0;
    c.kmalloc = kHeads;
    return c;
  }

  Op Draw() {
    int total = 0;
    for (int w : kOpWeights) total += w;
    int r = Below(total);
    int op = 0;
    while (r >= kOpWeights[op]) r -= kOpWeights[op++];
    return static_cast<Op>(op);
  }

  void Step(int step) { step_ = step; }
  void Report(int op) { ADD_FAILURE() << "at step " << step_ << ", after " << kOpNames[op]; }

  void Apply(Op op) {
    switch (op) {
      case kAlloc:
        return Alloc();
      case kSendAlloc:
        return SendAlloc();
      case kReserve:
        return Reserve();
      case kPut:
        return Put();
      case kPush:
        return Push();
      case kPull:
        return Pull();
      case kTrim:
        return Trim();
      case kClone:
        return Clone();
      case kCopy:
        return Copy(false);
      case kPskbCopy:
        return Copy(true);
      case kCowHead:
        return CowHead(false);
      case kUnclone:
        return CowHead(true);
      case kGet:
        return Get();
      case kShareCheck:
        return ShareCheck();
      case kConsume:
        return Free(false);
      case kKfree:
        return Free(true);
      case kOrphan:
        return Orphan();
      case kEnqueue:
        return Enqueue();
      case kDequeue:
        return Dequeue();
      case kStale:
        return Stale();
      case kLimits:
        return Limits();
      case kBufs:
        return Bufs();
      case kOpCount:
        break;
    }
  }

  // ---- The state ----

  // A head buffer: its allocation and what each byte of [0, end) must be
  // where `known` (bytes never written are not).
  struct Block {
    unsigned alloc;
    unsigned end;
    std::vector<uint8_t> val;
    std::vector<uint8_t> known;  // 0xff or 0
    unsigned refs;               // sk_buffs pointing at it: dataref
  };
  // One sk_buff: the test holds `users` references to it.
  struct Skb {
    SkBuff* skb;
    uint8_t* head;
    unsigned data;  // offsets from head
    unsigned tail;
    unsigned users;
    bool cloned;  // the flag, set by skb_clone on both
    unsigned truesize;
    bool owned;  // charged to sk_
  };

  int Below(int n) { return n <= 0 ? 0 : static_cast<int>(choose_() % static_cast<uint64_t>(n)); }
  unsigned BelowU(unsigned n) { return static_cast<unsigned>(Below(static_cast<int>(n))); }
  bool OneIn(int n) { return Below(n) == 0; }
  size_t Pick() { return static_cast<size_t>(Below(static_cast<int>(held_.size()))); }

  Block& BlockOf(const Skb& s) { return blocks_.at(s.head); }
  unsigned Len(const Skb& s) const { return s.tail - s.data; }
  unsigned Headroom(const Skb& s) const { return s.data; }
  unsigned Tailroom(const Skb& s) { return BlockOf(s).end - s.tail; }
  bool Cloned(const Skb& s) { return s.cloned && BlockOf(s).refs != 1; }

  size_t SkbsInUse() const { return pool_.skbuff_cache().stats().in_use; }

  // Writes fresh bytes at `at` in the real head and in the shadow.
  void Write(const Skb& s, unsigned at, unsigned n) {
    Block& b = BlockOf(s);
    for (unsigned i = 0; i < n; ++i) {
      const auto v = static_cast<uint8_t>(fill_());
      s.skb->head[at + i] = v;
      b.val[at + i] = v;
      b.known[at + i] = 0xff;
    }
  }

  // A new head in the shadow: must not be one already live.
  void AddBlock(SkBuff* skb, unsigned alloc) {
    ASSERT_EQ(blocks_.count(skb->head), 0u) << "a live head handed out again";
    const unsigned end = alloc - 320;
    blocks_[skb->head] =
        Block{alloc, end, std::vector<uint8_t>(end, 0), std::vector<uint8_t>(end, 0), 1};
  }
  void Unref(const Skb& s) {
    Block& b = BlockOf(s);
    if (--b.refs == 0) blocks_.erase(s.head);
  }

  // Whether allocating a head of `alloc` bytes must fail.
  bool HeadFull(unsigned alloc) {
    const KmemCache* c = pool_.head_cache(alloc);
    return c == nullptr || c->stats().in_use >= c->stats().limit;
  }
  bool SkbFull() const {
    return pool_.skbuff_cache().stats().in_use >= pool_.skbuff_cache().stats().limit;
  }

  // A refused allocation leaves nothing behind.
  void ExpectClean(size_t skbs, size_t heads, uint64_t failures) {
    EXPECT_EQ(SkbsInUse(), skbs) << "sk_buffs leaked by a failed operation";
    EXPECT_EQ(pool_.heads_in_use(), heads) << "heads leaked by a failed operation";
    EXPECT_EQ(pool_.stats().alloc_failures, failures + 1);
    ++failed_;
  }

  // The final reference gone: the model's side of freeing.
  void Released(const Skb& s, bool drop, SkbDropReason reason) {
    if (drop) {
      ++dropped_;
      ++drops_[static_cast<size_t>(reason)];
    } else {
      ++consumed_;
    }
    if (s.owned) {
      wmem_ -= static_cast<int>(s.truesize);
      ++write_space_;
    }
    Unref(s);
    stale_.push_back(s.skb);
    if (stale_.size() > 8) stale_.erase(stale_.begin());
  }

  void RemoveHeld(size_t i) {
    if (i + 1 != held_.size()) held_[i] = held_.back();
    held_.pop_back();
  }

  unsigned DrawSize() {
    const int r = Below(100);
    if (r < 55) return BelowU(400);
    if (r < 88) return BelowU(3000);
    if (r < 98) return BelowU(20000);
    return BelowU(kSkbMaxAlloc + 1);
  }

  // ---- The operations ----

  void Alloc() {
    if (held_.size() >= kMaxHeld) return;
    const unsigned size = DrawSize();
    const unsigned alloc = ExpectAlloc(size, small_heads_);
    const bool fail = SkbFull() || HeadFull(alloc);
    const size_t skbs = SkbsInUse(), heads = pool_.heads_in_use();
    const uint64_t failures = pool_.stats().alloc_failures;
    SkBuff* skb = pool_.alloc_skb(size);
    ASSERT_EQ(skb == nullptr, fail) << "alloc_skb(" << size << ")";
    if (skb == nullptr) return ExpectClean(skbs, heads, failures);
    EXPECT_GE(skb_tailroom(skb), size);
    AddBlock(skb, alloc);
    held_.push_back({skb, skb->head, 0, 0, 1, false, alloc + 256, false});
    ++ok_[kAlloc];
  }

  // The send side: over sk_sndbuf refused with -EAGAIN; a follow-on skb
  // (ip_append_data) only over twice sk_sndbuf, with -ENOBUFS.
  void SendAlloc() {
    if (held_.size() >= kMaxHeld) return;
    const unsigned size = BelowU(OneIn(4) ? 9000 : 1600);
    const unsigned alloc = ExpectAlloc(size, small_heads_);
    const bool append = OneIn(3);
    const bool refused = append ? wmem_ + 1 > 2 * sk_.sk_sndbuf : wmem_ >= sk_.sk_sndbuf;
    const bool fail = !refused && (SkbFull() || HeadFull(alloc));
    int err = 1;
    SkBuff* skb = append ? sock_alloc_append_skb(pool_, sk_, size, &err)
                         : sock_alloc_send_skb(pool_, sk_, size, true, &err);
    if (refused) {
      ASSERT_EQ(skb, nullptr);
      EXPECT_EQ(err, append ? -ENOBUFS : -EAGAIN);
      ++(append ? nobufs_ : eagain_);
      return;
    }
    ASSERT_EQ(skb == nullptr, fail);
    if (skb == nullptr) {
      EXPECT_EQ(err, -ENOBUFS);
      ++failed_;
      return;
    }
    EXPECT_EQ(err, 0);
    EXPECT_EQ(skb->sk, &sk_);
    AddBlock(skb, alloc);
    held_.push_back({skb, skb->head, 0, 0, 1, false, alloc + 256, true});
    wmem_ += static_cast<int>(alloc + 256);
    ++ok_[kSendAlloc];
  }

  void Reserve() {
    if (held_.empty()) return;
    Skb& s = held_[Pick()];
    // Mostly forward on an empty skb, sometimes back, or over a window.
    const int n = OneIn(5) ? -Below(static_cast<int>(Headroom(s)) + 1)
                           : Below(static_cast<int>(std::min(Tailroom(s), 600u)) + 1);
    skb_reserve(s.skb, n);
    s.data = static_cast<unsigned>(static_cast<int>(s.data) + n);
    s.tail = static_cast<unsigned>(static_cast<int>(s.tail) + n);
    ++ok_[kReserve];
  }

  void Put() {
    if (held_.empty()) return;
    Skb& s = held_[Pick()];
    if (OneIn(40)) {
      const unsigned over = Tailroom(s) + 1 + BelowU(8);
      EXPECT_THROW(skb_put(s.skb, over), std::logic_error) << "skb_over_panic";
      ++panics_;
      return;
    }
    const unsigned n = BelowU(std::min(Tailroom(s), OneIn(6) ? 20000u : 1500u) + 1);
    uint8_t* p = skb_put(s.skb, n);
    EXPECT_EQ(p, s.head + s.tail);
    Write(s, s.tail, n);
    s.tail += n;
    ++ok_[kPut];
  }

  void Push() {
    if (held_.empty()) return;
    Skb& s = held_[Pick()];
    if (OneIn(40)) {
      const unsigned over = Headroom(s) + 1 + BelowU(8);
      EXPECT_THROW(skb_push(s.skb, over), std::logic_error) << "skb_under_panic";
      ++panics_;
      return;
    }
    const unsigned n = BelowU(std::min(Headroom(s), 128u) + 1);
    uint8_t* p = skb_push(s.skb, n);
    s.data -= n;
    EXPECT_EQ(p, s.head + s.data);
    Write(s, s.data, n);
    ++ok_[kPush];
  }

  void Pull() {
    if (held_.empty()) return;
    Skb& s = held_[Pick()];
    const bool over = OneIn(8);
    const unsigned n = over ? Len(s) + 1 + BelowU(8) : BelowU(std::min(Len(s), 200u) + 1);
    uint8_t* p = skb_pull(s.skb, n);
    if (over) {
      EXPECT_EQ(p, nullptr);
      return;
    }
    s.data += n;
    EXPECT_EQ(p, s.head + s.data);
    ++ok_[kPull];
  }

  void Trim() {
    if (held_.empty()) return;
    Skb& s = held_[Pick()];
    const unsigned n = BelowU(Len(s) + 40);
    skb_trim(s.skb, n);
    if (n < Len(s)) s.tail = s.data + n;
    ++ok_[kTrim];
  }

  void Clone() {
    if (held_.empty() || held_.size() >= kMaxHeld) return;
    const size_t i = Pick();
    const bool fail = SkbFull();
    const size_t skbs = SkbsInUse(), heads = pool_.heads_in_use();
    const uint64_t failures = pool_.stats().alloc_failures;
    SkBuff* n = pool_.skb_clone(held_[i].skb);
    ASSERT_EQ(n == nullptr, fail);
    if (n == nullptr) return ExpectClean(skbs, heads, failures);
    Skb& s = held_[i];
    EXPECT_EQ(pool_.heads_in_use(), heads) << "a clone shares the head";
    s.cloned = true;
    ++BlockOf(s).refs;
    held_.push_back({n, s.head, s.data, s.tail, 1, true, s.truesize, false});
    ++ok_[kClone];
  }

  // skb_copy: the whole head's used part, same head size; pskb_copy: only
  // the data, into a head of headroom + len.
  void Copy(bool partial) {
    if (held_.empty() || held_.size() >= kMaxHeld) return;
    const size_t i = Pick();
    const Skb s = held_[i];
    const Block& from = BlockOf(s);
    const unsigned alloc = ExpectAlloc(partial ? s.tail : from.end, small_heads_);
    const bool fail = SkbFull() || HeadFull(alloc);
    const size_t skbs = SkbsInUse(), heads = pool_.heads_in_use();
    const uint64_t failures = pool_.stats().alloc_failures;
    SkBuff* n = partial ? pool_.pskb_copy(s.skb) : pool_.skb_copy(s.skb);
    ASSERT_EQ(n == nullptr, fail);
    if (n == nullptr) return ExpectClean(skbs, heads, failures);
    if (!partial) {
      EXPECT_EQ(alloc, from.alloc) << "skb_copy keeps the head's size";
    }
    const Block old = from;
    AddBlock(n, alloc);
    Block& to = blocks_.at(n->head);
    for (unsigned k = partial ? s.data : 0; k < s.tail; ++k) {
      to.val[k] = old.val[k];
      to.known[k] = old.known[k];
    }
    held_.push_back({n, n->head, s.data, s.tail, 1, false, alloc + 256, false});
    ++ok_[partial ? kPskbCopy : kCopy];
  }

  // skb_cow_head(skb, n), or skb_unclone: a new private head when shared or
  // short of headroom; BUG (a throw) if that is needed on a shared skb.
  void CowHead(bool unclone) {
    if (held_.empty()) return;
    Skb& s = held_[Pick()];
    const unsigned want = unclone ? 0 : BelowU(OneIn(3) ? 400 : 100);
    const unsigned delta = want > Headroom(s) ? want - Headroom(s) : 0;
    const bool needed = delta != 0 || Cloned(s);
    const unsigned nhead = (delta + 63) / 64 * 64;
    if (needed && s.users > 1) {
      EXPECT_THROW(unclone ? pool_.skb_unclone(s.skb) : pool_.skb_cow_head(s.skb, want),
                   std::logic_error)
          << "pskb_expand_head of a shared skb";
      ++panics_;
      return;
    }
    const Block& from = BlockOf(s);
    const unsigned alloc = ExpectAlloc(from.end + nhead, small_heads_);
    const bool fail = needed && HeadFull(alloc);
    const size_t skbs = SkbsInUse(), heads = pool_.heads_in_use();
    const uint64_t failures = pool_.stats().alloc_failures;
    const int r = unclone ? pool_.skb_unclone(s.skb) : pool_.skb_cow_head(s.skb, want);
    if (fail) {
      ASSERT_EQ(r, -ENOMEM);
      return ExpectClean(skbs, heads, failures);
    }
    ASSERT_EQ(r, 0);
    ++ok_[unclone ? kUnclone : kCowHead];
    if (!needed) {
      EXPECT_EQ(s.skb->head, s.head) << "nothing to do, yet a new head";
      return;
    }
    ASSERT_NE(s.skb->head, s.head);
    const Block old = from;
    Unref(s);
    AddBlock(s.skb, alloc);
    Block& to = blocks_.at(s.skb->head);
    for (unsigned k = 0; k < s.tail; ++k) {
      to.val[nhead + k] = old.val[k];
      to.known[nhead + k] = old.known[k];
    }
    s.head = s.skb->head;
    s.data += nhead;
    s.tail += nhead;
    s.cloned = false;
    if (!s.owned) s.truesize += to.end - old.end;
    EXPECT_GE(Headroom(s), want);
    ++expands_;
  }

  void Get() {
    if (held_.empty()) return;
    Skb& s = held_[Pick()];
    if (s.users >= 4) return;
    EXPECT_EQ(skb_get(s.skb), s.skb);
    ++s.users;
    ++ok_[kGet];
  }

  // One of the references to a shared skb becomes a clone of its own.
  void ShareCheck() {
    if (held_.empty() || held_.size() >= kMaxHeld) return;
    const size_t i = Pick();
    const Skb s = held_[i];
    const bool shared = s.users > 1;
    const bool fail = shared && SkbFull();
    SkBuff* r = pool_.skb_share_check(s.skb);
    if (!shared) {
      EXPECT_EQ(r, s.skb);
      ++ok_[kShareCheck];
      return;
    }
    // Either way the original loses the reference, never the last.
    --held_[i].users;
    if (fail) {
      EXPECT_EQ(r, nullptr);
      ++failed_;
      return;
    }
    ASSERT_NE(r, nullptr);
    ASSERT_NE(r, s.skb);
    held_[i].cloned = true;
    ++BlockOf(s).refs;
    held_.push_back({r, s.head, s.data, s.tail, 1, true, s.truesize, false});
    ++ok_[kShareCheck];
  }

  void Free(bool drop) {
    if (held_.empty()) return;
    const size_t i = Pick();
    const Skb s = held_[i];
    const auto reason =
        static_cast<SkbDropReason>(static_cast<int>(SkbDropReason::kNotSpecified) +
                                   Below(static_cast<int>(SkbDropReason::kCount) -
                                         static_cast<int>(SkbDropReason::kNotSpecified)));
    if (drop) {
      pool_.kfree_skb_reason(s.skb, reason);
    } else {
      pool_.consume_skb(s.skb);
    }
    if (s.users > 1) {
      --held_[i].users;
    } else {
      Released(s, drop, reason);
      RemoveHeld(i);
    }
    ++ok_[drop ? kKfree : kConsume];
  }

  void Orphan() {
    if (held_.empty()) return;
    Skb& s = held_[Pick()];
    skb_orphan(s.skb);
    if (s.owned) {
      wmem_ -= static_cast<int>(s.truesize);
      ++write_space_;
      s.owned = false;
    }
    ++ok_[kOrphan];
  }

  // Delivery: orphaned (as the loopback device does), then queued unless
  // the receive buffer is full; a refused one is dropped, as UDP does.
  void Enqueue() {
    if (held_.empty()) return;
    const size_t i = Pick();
    if (held_[i].users != 1) return;
    if (held_[i].owned) {
      skb_orphan(held_[i].skb);
      wmem_ -= static_cast<int>(held_[i].truesize);
      ++write_space_;
      held_[i].owned = false;
    }
    const Skb s = held_[i];
    const auto rmem = static_cast<unsigned>(rmem_);
    const auto rcvbuf = static_cast<unsigned>(sk_.sk_rcvbuf);
    const bool drop = rmem + s.truesize > rcvbuf && (rcvbuf > (INT_MAX >> 1) || rmem != 0);
    const int r = sk_rmem_enqueue(sk_, s.skb);
    RemoveHeld(i);
    if (drop) {
      ASSERT_EQ(r, -ENOMEM);
      ++rcvbuf_errors_;
      pool_.kfree_skb_reason(s.skb, SkbDropReason::kSocketRcvbuff);
      Released(s, true, SkbDropReason::kSocketRcvbuff);
      return;
    }
    ASSERT_EQ(r, 0);
    rmem_ += static_cast<int>(s.truesize);
    ++data_ready_;
    queued_.push_back(s);
    ++ok_[kEnqueue];
  }

  void Dequeue() {
    if (held_.size() >= kMaxHeld) return;
    SkBuff* skb = sk_rmem_dequeue(sk_);
    if (queued_.empty()) {
      EXPECT_EQ(skb, nullptr);
      return;
    }
    ASSERT_EQ(skb, queued_.front().skb) << "the queue is not first in, first out";
    rmem_ -= static_cast<int>(queued_.front().truesize);
    held_.push_back(queued_.front());
    queued_.pop_front();
    ++ok_[kDequeue];
  }

  // A freed sk_buff handed back: refused by name, nothing changed.
  void Stale() {
    for (SkBuff* p : stale_) {
      if (pool_.is_live(p)) continue;
      const size_t skbs = SkbsInUse(), heads = pool_.heads_in_use();
      if (OneIn(2)) {
        EXPECT_THROW(pool_.kfree_skb(p), std::logic_error) << "double free";
      } else {
        EXPECT_THROW(pool_.skb_clone(p), std::logic_error) << "use after free";
      }
      EXPECT_EQ(SkbsInUse(), skbs);
      EXPECT_EQ(pool_.heads_in_use(), heads);
      ++ok_[kStale];
      return;
    }
  }

  // Now and then the caches run nearly dry, so allocations fail.
  void Limits() {
    auto set = [&](KmemCache& c) {
      c.set_limit(OneIn(3)
                      ? std::min(c.capacity(), c.stats().in_use + static_cast<size_t>(Below(3)))
                      : c.capacity());
    };
    set(pool_.skbuff_cache());
    if (pool_.small_head_cache() != nullptr) set(*pool_.small_head_cache());
    for (size_t k = 0; k < kKmallocClasses; ++k) set(pool_.kmalloc_cache(k));
    ++ok_[kLimits];
  }

  void Bufs() {
    if (OneIn(2)) {
      sock_set_sndbuf(sk_, 1000 + Below(15000));
    } else {
      sock_set_rcvbuf(sk_, OneIn(4) ? Below(2000) : 1000 + Below(15000));
    }
    ++ok_[kBufs];
  }

  // ---- The invariants ----

  void CheckSkb(const Skb& s, bool queued) {
    SkBuff* skb = s.skb;
    ASSERT_TRUE(pool_.is_live(skb)) << "a freed sk_buff in use";
    const auto it = blocks_.find(s.head);
    ASSERT_NE(it, blocks_.end());
    const Block& b = it->second;
    ASSERT_EQ(skb->head, s.head);
    ASSERT_EQ(skb->end, b.end);
    ASSERT_EQ(static_cast<unsigned>(skb->data - skb->head), s.data);
    ASSERT_EQ(skb->tail, s.tail);
    ASSERT_LE(s.data, s.tail);
    ASSERT_EQ(skb->len, s.tail - s.data);
    ASSERT_EQ(skb->data_len, 0u);
    ASSERT_EQ(skb_headlen(skb), skb->len);
    ASSERT_EQ(skb_headroom(skb), s.data);
    ASSERT_EQ(skb_tailroom(skb), b.end - s.tail);
    ASSERT_EQ(skb->users, s.users);
    ASSERT_EQ(skb_shared(skb), s.users != 1);
    ASSERT_EQ(skb->cloned != 0, s.cloned);
    ASSERT_EQ(skb_cloned(skb), s.cloned && b.refs != 1);
    ASSERT_EQ(skb_shinfo(skb)->dataref, b.refs)
        << "dataref differs from the sk_buffs sharing the head";
    ASSERT_EQ(skb_shinfo(skb)->nr_frags, 0);
    ASSERT_EQ(skb->truesize, s.truesize);
    ASSERT_EQ(skb->sk, s.owned ? static_cast<Sock*>(&sk_) : nullptr);
    ASSERT_EQ(skb->destructor != nullptr, s.owned);
    ASSERT_EQ(skb->list, queued ? &sk_.sk_receive_queue : nullptr);
    ++refs_seen_[s.head];
  }

  void CheckAll() {
    refs_seen_.clear();
    std::vector<const SkBuff*> all;
    int wmem = 0;
    for (const Skb& s : held_) {
      CheckSkb(s, false);
      if (::testing::Test::HasFatalFailure()) return;
      all.push_back(s.skb);
      if (s.owned) wmem += static_cast<int>(s.truesize);
    }
    int rmem = 0;
    const SkBuff* q = skb_peek(&sk_.sk_receive_queue);
    for (const Skb& s : queued_) {
      CheckSkb(s, true);
      if (::testing::Test::HasFatalFailure()) return;
      ASSERT_EQ(q, s.skb) << "queue order";
      q = q->next;
      all.push_back(s.skb);
      rmem += static_cast<int>(s.truesize);
    }
    ASSERT_EQ(q, nullptr);
    ASSERT_EQ(skb_queue_len(&sk_.sk_receive_queue), queued_.size());
    std::sort(all.begin(), all.end());
    ASSERT_TRUE(std::adjacent_find(all.begin(), all.end()) == all.end()) << "one sk_buff twice";
    // Every head: its refs, and every byte the model knows.
    std::map<unsigned, size_t> per_alloc;
    for (const auto& [head, b] : blocks_) {
      ASSERT_EQ(refs_seen_[head], b.refs) << "a head's refs differ from the sk_buffs on it";
      ++per_alloc[b.alloc];
      // Branch-free over the whole head (it vectorizes); then find the byte.
      uint8_t diff = 0;
      for (unsigned k = 0; k < b.end; ++k) diff |= (head[k] ^ b.val[k]) & b.known[k];
      if (diff != 0) {
        for (unsigned k = 0; k < b.end; ++k) {
          if (((head[k] ^ b.val[k]) & b.known[k]) != 0) {
            FAIL() << "head byte " << k << " of " << b.end << " is " << int{head[k]}
                   << ", expected " << int{b.val[k]};
          }
        }
      }
    }
    // The caches hold exactly what the skbs reference.
    ASSERT_EQ(SkbsInUse(), held_.size() + queued_.size());
    ASSERT_EQ(pool_.heads_in_use(), blocks_.size());
    for (const auto& [alloc, n] : per_alloc) {
      ASSERT_EQ(pool_.head_cache(alloc)->stats().in_use, n) << "head cache of " << alloc;
    }
    // The socket's charges are the truesizes of what it owns and queues.
    ASSERT_EQ(wmem, wmem_);
    ASSERT_EQ(sk_wmem_alloc_get(sk_), wmem_);
    ASSERT_EQ(rmem, rmem_);
    ASSERT_EQ(sk_rmem_alloc_get(sk_), rmem_);
    ASSERT_EQ(sk_.write_space, write_space_);
    ASSERT_EQ(sk_.data_ready, data_ready_);
    ASSERT_EQ(sk_.stats.rcvbuf_errors, rcvbuf_errors_);
    ASSERT_EQ(sk_.sk_drops, rcvbuf_errors_);
    ASSERT_EQ(sk_.stats.sndbuf_full, eagain_);
    ASSERT_EQ(sk_.stats.append_nobufs, nobufs_);
    // Only the last reference is traced, as a drop or as consumed.
    ASSERT_EQ(pool_.stats().consumed, consumed_);
    ASSERT_EQ(pool_.stats().dropped, dropped_);
    ASSERT_TRUE(pool_.stats().drops == drops_) << "drops by reason differ";
  }

  // Everything freed: every cache back to 0 in use, nothing charged.
  void FreeAll() {
    for (const Skb& s : held_) {
      for (unsigned k = 0; k < s.users; ++k) pool_.consume_skb(s.skb);
      Released(s, false, SkbDropReason::kConsumed);
    }
    held_.clear();
    for (const Skb& s : queued_) Released(s, true, SkbDropReason::kNotSpecified);
    sk_rmem_purge(pool_, sk_);
    rmem_ = 0;
    queued_.clear();
    EXPECT_TRUE(blocks_.empty());
    EXPECT_TRUE(pool_.idle());
    EXPECT_EQ(SkbsInUse(), 0u);
    EXPECT_EQ(pool_.heads_in_use(), 0u);
    EXPECT_EQ(pool_.skbuff_cache().stats().allocs, pool_.skbuff_cache().stats().frees);
    EXPECT_EQ(sk_.sk_wmem_alloc, 1u) << "only the socket's own reference is left";
    EXPECT_EQ(sk_.sk_rmem_alloc, 0);
    EXPECT_EQ(wmem_, 0);
    EXPECT_EQ(pool_.stats().consumed, consumed_);
    EXPECT_EQ(pool_.stats().dropped, dropped_);
  }

  // A run that never reached an operation, or never failed, proves little.
  void ExpectCoverage() {
    for (int op = 0; op < kOpCount; ++op) {
      EXPECT_GT(ok_[op], 20) << kOpNames[op] << " rarely succeeded";
    }
    EXPECT_GT(failed_, 20) << "allocation failures were not exercised";
    EXPECT_GT(expands_, 20) << "heads were rarely expanded";
    EXPECT_GT(panics_, 20) << "BUG() checks were not exercised";
    EXPECT_GT(eagain_, 5u) << "sk_sndbuf was never reached";
    EXPECT_GT(rcvbuf_errors_, 5u) << "sk_rcvbuf was never reached";
    EXPECT_GT(consumed_, 100u);
    EXPECT_GT(dropped_, 100u);
  }

 private:
  Choose& choose_;
  Fill& fill_;
  bool small_heads_;
  SkbPool pool_;
  CountingSock sk_;
  std::vector<Skb> held_;
  std::deque<Skb> queued_;
  std::map<const uint8_t*, Block> blocks_;
  std::map<const uint8_t*, unsigned> refs_seen_;
  std::vector<SkBuff*> stale_;
  int wmem_ = 0;
  int rmem_ = 0;
  uint64_t write_space_ = 0, data_ready_ = 0;
  uint64_t rcvbuf_errors_ = 0, eagain_ = 0, nobufs_ = 0;
  uint64_t consumed_ = 0, dropped_ = 0;
  std::array<uint64_t, kSkbDropReasonCount> drops_{};
  std::array<int, kOpCount> ok_{};
  int failed_ = 0;
  int expands_ = 0;
  int panics_ = 0;
  int step_ = 0;
};

}  // namespace simloop::lnx::model
