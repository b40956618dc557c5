// The mbuf layer's model: a set of chains, each with a shadow copy of the
// bytes it must hold, operated on at random (Draw, Apply) and checked after
// every step (CheckAll) against the shadows and the allocator: lengths,
// buffer bounds, cluster reference counts, and that the zones hold exactly
// what the chains reference.
//
// Shared by the property test (gtest, a seeded generator) and the mbuf fuzz
// target (its input drives every choice). The includer provides gtest's
// EXPECT_* / ASSERT_* / ADD_FAILURE macros, or its own with the same use.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "sim/stack/bsd/mbuf_ops.h"

namespace simloop::net::bsd::model {

using Bytes = std::vector<uint8_t>;

inline uintptr_t Addr(const void* p) {
  return reinterpret_cast<uintptr_t>(p);
}

inline int Count(const Mbuf* m) {
  int n = 0;
  for (; m != nullptr; m = m->m_next) ++n;
  return n;
}

enum Op {
  kNew,
  kCopym,
  kDup,
  kPullup,
  kCopyup,
  kPrepend,
  kAdj,
  kCopydata,
  kCopyback,
  kCat,
  kFreem,
  kReadOnly,
  kLimits,
  kOpCount
};
constexpr std::array<const char*, kOpCount> kOpNames = {
    "uiotombuf", "copym",    "dup", "pullup", "copyup",    "prepend", "adj",
    "copydata",  "copyback", "cat", "freem",  "read-only", "limits"};
// How often each operation is drawn.
constexpr std::array<int, kOpCount> kOpWeights = {10, 10, 6, 8, 5, 10, 10, 6, 10, 6, 6, 2, 3};

template <class Choose, class Fill>
class MbufModel {
 public:
  static constexpr size_t kMbufs = 8192;
  static constexpr size_t kClusters = 4096;
  static constexpr size_t kMaxChains = 20;
  static constexpr int kMaxBytes = 30000;  // a chain stops growing past this
  static constexpr int kMaxMbufs = 256;    // nor cat chains of more mbufs

  // `choose` draws every decision, `fill` the bytes written; both are
  // called as uint64_t operator()().
  MbufModel(Choose& choose, Fill& fill)
      : choose_(choose),
        fill_(fill),
        pool_(kMbufs, kClusters),
        mb_(pool_, probe_),
        mbuf_seen_(kMbufs, 0),
        cluster_refs_(kClusters, 0) {}

  // The next operation, drawn by weight.
  Op Draw() {
    int total_weight = 0;
    for (int w : kOpWeights) total_weight += w;
    int r = Below(total_weight);
    int op = 0;
    while (r >= kOpWeights[op]) r -= kOpWeights[op++];
    return static_cast<Op>(op);
  }

  void Step(int step) { step_ = step; }
  void Report(int op) { ADD_FAILURE() << "at step " << step_ << ", after " << kOpNames[op]; }

  struct Chain {
    Mbuf* m;
    Bytes shadow;
  };
  struct Saved {
    const uint8_t* start;
    Bytes bytes;
  };

  int Below(int n) { return n <= 0 ? 0 : static_cast<int>(choose_() % static_cast<uint64_t>(n)); }
  bool OneIn(int n) { return Below(n) == 0; }
  size_t Pick() { return static_cast<size_t>(Below(static_cast<int>(chains_.size()))); }

  Bytes RandomBytes(int n) {
    Bytes b(static_cast<size_t>(n));
    for (auto& x : b) x = static_cast<uint8_t>(fill_());
    return b;
  }

  size_t Failures() const { return pool_.mbufs.stats().failures + pool_.clusters.stats().failures; }
  size_t MbufsInUse() const { return pool_.mbufs.stats().in_use; }
  size_t ClustersInUse() const { return pool_.clusters.stats().in_use; }

  void Remove(size_t i) {
    if (i + 1 != chains_.size()) chains_[i] = std::move(chains_.back());
    chains_.pop_back();
  }

  void Apply(Op op) {
    switch (op) {
      case kNew:
        return New();
      case kCopym:
        return Copym();
      case kDup:
        return Dup();
      case kPullup:
        return Pullup();
      case kCopyup:
        return Copyup();
      case kPrepend:
        return Prepend();
      case kAdj:
        return Adj();
      case kCopydata:
        return Copydata();
      case kCopyback:
        return Copyback();
      case kCat:
        return Cat();
      case kFreem:
        return Freem();
      case kReadOnly:
        return ReadOnly();
      case kLimits:
        return Limits();
      case kOpCount:
        break;
    }
  }

  // An allocation failure may only come from a zone at its limit; it must
  // leave behind nothing of what was being built.
  void ExpectCleanFailure(size_t failures, size_t mbufs, size_t clusters) {
    EXPECT_GT(Failures(), failures) << "nullptr without an allocation failure";
    EXPECT_EQ(MbufsInUse(), mbufs) << "mbufs leaked by a failed operation";
    EXPECT_EQ(ClustersInUse(), clusters) << "clusters leaked by a failed operation";
    ++failed_;
  }

  void New() {
    if (chains_.size() >= kMaxChains) return;
    const int len = OneIn(2) ? Below(301) : Below(5001);
    const int align = OneIn(3) ? 56 : Below(kMHLen);
    const Bytes b = RandomBytes(len);
    const size_t failures = Failures(), mbufs = MbufsInUse(), clusters = ClustersInUse();
    Mbuf* m = mb_.uiotombuf(b.data(), len, align);
    if (m == nullptr) return ExpectCleanFailure(failures, mbufs, clusters);
    ASSERT_TRUE((m->m_flags & M_PKTHDR) != 0);
    EXPECT_EQ(m->m_data - m_bufstart(m), align);
    EXPECT_EQ((m->m_flags & M_EXT) != 0, len + align >= kMinClSize);
    chains_.push_back({m, b});
    ++ok_[kNew];
  }

  void Copym() {
    if (chains_.empty()) return;
    const Chain& c = chains_[Pick()];
    const int size = static_cast<int>(c.shadow.size());
    const int off = Below(size + 1);
    const bool all = OneIn(3);
    const int len = all ? kMCopyAll : Below(size - off + 1);
    const int n = all ? size - off : len;
    const bool hdr = off == 0 && (c.m->m_flags & M_PKTHDR) != 0;
    const size_t failures = Failures(), mbufs = MbufsInUse(), clusters = ClustersInUse();
    Mbuf* r = mb_.copym(c.m, off, len);
    if (r == nullptr) {
      if (n == 0 && Failures() == failures) return;  // nothing to copy
      return ExpectCleanFailure(failures, mbufs, clusters);
    }
    EXPECT_EQ(ClustersInUse(), clusters) << "m_copym never allocates a cluster";
    EXPECT_EQ((r->m_flags & M_PKTHDR) != 0, hdr);
    if (hdr) {
      EXPECT_EQ(r->pkthdr().len, n);
    }
    for (Mbuf* x = r; x != nullptr; x = x->m_next) {
      // Clusters are shared, hence read-only; internal data starts its buffer.
      if ((x->m_flags & M_EXT) != 0) {
        EXPECT_FALSE(m_writable(x));
        EXPECT_EQ(m_leadingspace(x), 0);
        EXPECT_GE(*x->ext().refcnt, 2u);
      } else {
        EXPECT_EQ(x->m_data, m_bufstart(x));
        EXPECT_TRUE(m_writable(x));
      }
    }
    Bytes slice(c.shadow.begin() + off, c.shadow.begin() + off + n);
    chains_.push_back({r, std::move(slice)});
    ++ok_[kCopym];
  }

  void Dup() {
    if (chains_.empty()) return;
    const Chain& c = chains_[Pick()];
    if ((c.m->m_flags & M_PKTHDR) == 0) return;
    const size_t failures = Failures(), mbufs = MbufsInUse(), clusters = ClustersInUse();
    Mbuf* r = mb_.dup(c.m);
    if (r == nullptr) return ExpectCleanFailure(failures, mbufs, clusters);
    for (Mbuf* x = r; x != nullptr; x = x->m_next) {
      // A deep copy: writable, packed from the start of each buffer, and
      // every buffer but the last full.
      EXPECT_TRUE(m_writable(x));
      EXPECT_EQ(x->m_data, m_bufstart(x));
      if (x->m_next != nullptr) {
        EXPECT_EQ(x->m_len, m_bufsize(x));
      }
    }
    chains_.push_back({r, c.shadow});
    ++ok_[kDup];
  }

  void Pullup() {
    if (chains_.empty()) return;
    const size_t i = Pick();
    Chain& c = chains_[i];
    const int size = static_cast<int>(c.shadow.size());
    const int len = 1 + (OneIn(4) ? Below(kMLen + 16) : Below(100));
    Mbuf* head = c.m;
    const bool contiguous = head->m_len >= len;
    const size_t failures = Failures(), allocs = pool_.mbufs.stats().allocs;
    Mbuf* r = mb_.pullup(c.m, len);
    if (contiguous) {
      EXPECT_EQ(r, head);
      EXPECT_EQ(pool_.mbufs.stats().allocs, allocs);
    }
    if (r == nullptr) {
      // The chain was freed: that is what m_pullup does on failure.
      EXPECT_TRUE(len > size || len > kMHLen || Failures() > failures)
          << "pullup(" << len << ") of " << size << " bytes failed";
      Remove(i);
      ++failed_;
      return;
    }
    EXPECT_GE(r->m_len, len);
    c.m = r;
    ++ok_[kPullup];
  }

  void Copyup() {
    if (chains_.empty()) return;
    const size_t i = Pick();
    Chain& c = chains_[i];
    const int size = static_cast<int>(c.shadow.size());
    const int len = 1 + Below(OneIn(4) ? kMHLen + 8 : 80);
    const int dstoff = Below(64);
    Mbuf* head = c.m;
    const size_t failures = Failures();
    Mbuf* r = mb_.copyup(c.m, len, dstoff);
    if (r == nullptr) {
      EXPECT_TRUE(len > size || len > kMHLen - dstoff || Failures() > failures)
          << "copyup(" << len << ", " << dstoff << ") of " << size << " bytes failed";
      Remove(i);
      ++failed_;
      return;
    }
    EXPECT_NE(r, head) << "m_copyup always uses a new mbuf";
    EXPECT_EQ(r->m_data, m_bufstart(r) + dstoff);
    EXPECT_GE(r->m_len, len);
    c.m = r;
    ++ok_[kCopyup];
  }

  void Prepend() {
    if (chains_.empty()) return;
    const size_t i = Pick();
    Chain& c = chains_[i];
    const int len = OneIn(5) ? Below(kMLen + 8) : Below(64);
    const bool hdr = (c.m->m_flags & M_PKTHDR) != 0;
    const bool slow = OneIn(4);  // m_prepend itself rather than M_PREPEND
    const bool in_place = !slow && m_leadingspace(c.m) >= len;
    Mbuf* head = c.m;
    const size_t failures = Failures();
    Mbuf* r = slow ? mb_.prepend_new(c.m, len) : mb_.prepend(c.m, len);
    if (r == nullptr) {
      EXPECT_FALSE(in_place);
      EXPECT_TRUE(len > (hdr ? kMHLen : kMLen) || Failures() > failures)
          << "prepend(" << len << ") failed";
      Remove(i);
      ++failed_;
      return;
    }
    if (in_place) {
      EXPECT_EQ(r, head);
    } else {
      EXPECT_EQ(r->m_next, head);
      EXPECT_EQ(head->m_flags & M_PKTHDR, 0) << "the header moved to the new mbuf";
    }
    EXPECT_EQ((r->m_flags & M_PKTHDR) != 0, hdr);
    if (slow && hdr) r->pkthdr().len += len;  // what M_PREPEND adds
    ASSERT_GE(r->m_len, len);
    c.m = r;
    // The new front is only ever in storage this chain may write.
    if (len > 0) {
      EXPECT_TRUE(m_writable(r));
    }
    if (m_writable(r)) {
      const Bytes front = RandomBytes(len);
      if (len > 0) std::memcpy(r->m_data, front.data(), front.size());
      c.shadow.insert(c.shadow.begin(), front.begin(), front.end());
    }
    ++ok_[kPrepend];
  }

  void Adj() {
    if (chains_.empty()) return;
    Chain& c = chains_[Pick()];
    const int size = static_cast<int>(c.shadow.size());
    // Mostly header-sized trims, sometimes most of the packet or more.
    const int pick = Below(10);
    const int n =
        pick < 7 ? Below(std::min(size, 100) + 1) : (pick < 9 ? Below(size + 1) : size + Below(20));
    const int cut = std::min(n, size);
    if (OneIn(2)) {
      const int mbufs = Count(c.m);
      mb_.adj(c.m, n);
      EXPECT_EQ(Count(c.m), mbufs) << "a head trim frees nothing";
      c.shadow.erase(c.shadow.begin(), c.shadow.begin() + cut);
    } else {
      mb_.adj(c.m, -n);
      c.shadow.resize(static_cast<size_t>(size - cut));
    }
    ++ok_[kAdj];
  }

  void Copydata() {
    if (chains_.empty()) return;
    const Chain& c = chains_[Pick()];
    const int size = static_cast<int>(c.shadow.size());
    const int off = Below(size + 1);
    const int len = Below(size - off + 1);
    Bytes out(static_cast<size_t>(len) + 1, 0x5A);
    mb_.copydata(c.m, off, len, out.data());
    EXPECT_TRUE(std::equal(out.begin(), out.begin() + len, c.shadow.begin() + off));
    EXPECT_EQ(out.back(), 0x5A) << "copydata wrote past its length";
    ++ok_[kCopydata];
  }

  // Whether every mbuf holding bytes of [from, to) may be written.
  static bool RangeWritable(const Mbuf* m, int from, int to) {
    for (int pos = 0; m != nullptr && pos < to; pos += m->m_len, m = m->m_next) {
      if (pos + m->m_len > from && m->m_len > 0 && !m_writable(m)) return false;
    }
    return true;
  }

  void Copyback() {
    if (chains_.empty()) return;
    Chain& c = chains_[Pick()];
    const int size = static_cast<int>(c.shadow.size());
    if (size > kMaxBytes) return;
    const int off = Below(size + 300);
    const int len = Below(400);
    if (!RangeWritable(c.m, off, std::min(off + len, size))) {
      ++skipped_copyback_;
      return;
    }
    const Bytes src = RandomBytes(len);
    // The full result: old bytes, a zero gap if `off` is past the end, src.
    Bytes expect = c.shadow;
    expect.resize(std::max(expect.size(), static_cast<size_t>(off + len)), 0);
    std::copy(src.begin(), src.end(), expect.begin() + off);
    const size_t failures = Failures();
    if (mb_.copyback(c.m, off, len, src.data())) {
      c.shadow = std::move(expect);
      ++ok_[kCopyback];
      return;
    }
    // An extension failed: what was written stays, a prefix of the result.
    EXPECT_GT(Failures(), failures);
    const int have = m_length(c.m);
    ASSERT_GE(have, size);
    ASSERT_LE(have, static_cast<int>(expect.size()));
    expect.resize(static_cast<size_t>(have));
    c.shadow = std::move(expect);
    ++failed_;
  }

  void Cat() {
    if (chains_.size() < 2) return;
    const size_t i = Pick(), j = Pick();
    if (i == j) return;
    Chain& a = chains_[i];
    Chain& b = chains_[j];
    if (a.shadow.size() + b.shadow.size() > static_cast<size_t>(kMaxBytes) ||
        Count(a.m) + Count(b.m) > kMaxMbufs) {
      return;
    }
    const size_t allocs = pool_.mbufs.stats().allocs;
    mb_.cat(a.m, b.m);
    EXPECT_EQ(pool_.mbufs.stats().allocs, allocs) << "m_cat never allocates";
    // The caller's part: one packet header, and its length.
    for (Mbuf* x = a.m->m_next; x != nullptr; x = x->m_next) {
      x->m_flags &= static_cast<uint16_t>(~M_PKTHDR);
    }
    if ((a.m->m_flags & M_PKTHDR) != 0) {
      a.m->pkthdr().len += static_cast<int32_t>(b.shadow.size());
    }
    a.shadow.insert(a.shadow.end(), b.shadow.begin(), b.shadow.end());
    Remove(j);
    ++ok_[kCat];
  }

  void Freem() {
    if (chains_.empty()) return;
    const size_t i = Pick();
    mb_.freem(chains_[i].m);
    Remove(i);
    ++ok_[kFreem];
  }

  // Marks one mbuf read-only, as a driver's receive buffer might be, and
  // keeps a copy of its whole buffer: no operation may write any of it.
  void ReadOnly() {
    if (chains_.empty()) return;
    Mbuf* m = chains_[Pick()].m;
    for (int k = Below(Count(m)); k > 0; --k) m = m->m_next;
    m->m_flags |= M_RDONLY;
    uint8_t* start = m_bufstart(m);
    read_only_[m] = {start, Bytes(start, start + m_bufsize(m))};
    ++ok_[kReadOnly];
  }

  // Now and then the zones run nearly dry, so operations fail midway.
  void Limits() {
    if (!OneIn(3)) {
      pool_.mbufs.set_limit(kMbufs);
      pool_.clusters.set_limit(kClusters);
    } else {
      pool_.mbufs.set_limit(std::min(kMbufs, MbufsInUse() + static_cast<size_t>(Below(6))));
      pool_.clusters.set_limit(
          std::min(kClusters, ClustersInUse() + static_cast<size_t>(Below(3))));
    }
    ++ok_[kLimits];
  }

  // The invariants every live chain and the allocator must satisfy.
  void CheckAll() {
    std::fill(mbuf_seen_.begin(), mbuf_seen_.end(), 0);
    touched_.clear();
    size_t mbufs = 0;
    for (const Chain& c : chains_) {
      ASSERT_NE(c.m, nullptr);
      if ((c.m->m_flags & M_PKTHDR) != 0) {
        ASSERT_EQ(c.m->pkthdr().len, m_length(c.m));
      }
      size_t off = 0;
      for (Mbuf* m = c.m; m != nullptr; m = m->m_next) {
        ASSERT_TRUE(pool_.mbufs.is_live(m)) << "a freed mbuf in a live chain";
        ASSERT_EQ(Addr(m) % kMSize, 0u);
        uint8_t& seen = mbuf_seen_[pool_.mbufs.index_of(m)];
        ASSERT_EQ(seen, 0) << "an mbuf in two chains, or a loop";
        seen = 1;
        ++mbufs;
        ASSERT_GE(m->m_len, 0);
        ASSERT_EQ(m->m_nextpkt, nullptr);
        if (m != c.m) {
          ASSERT_EQ(m->m_flags & M_PKTHDR, 0) << "a packet header mid-chain";
        }
        uint8_t* start = m_bufstart(m);
        ASSERT_GE(m->m_data, start);
        ASSERT_LE(m->m_data + m->m_len, start + m_bufsize(m));
        if ((m->m_flags & M_EXT) != 0) {
          uint8_t* buf = m->ext().buf;
          ASSERT_TRUE(pool_.clusters.is_live(buf)) << "a freed cluster in a live chain";
          ASSERT_EQ(Addr(buf) % kMClBytes, 0u);
          ASSERT_EQ(m->ext().refcnt, pool_.refcnt_of(buf));
          ASSERT_EQ(m->ext().size, static_cast<uint32_t>(kMClBytes));
          const size_t ci = pool_.clusters.index_of(buf);
          if (cluster_refs_[ci]++ == 0) touched_.push_back(ci);
        }
        if ((m->m_flags & M_RDONLY) != 0) {
          const auto it = read_only_.find(m);
          ASSERT_NE(it, read_only_.end());
          const Bytes& saved = it->second.bytes;
          ASSERT_EQ(0, std::memcmp(it->second.start, saved.data(), saved.size()))
              << "read-only storage was written";
          still_read_only_[m] = std::move(it->second);
        }
        ASSERT_LE(off + static_cast<size_t>(m->m_len), c.shadow.size());
        ASSERT_TRUE(std::equal(m->m_data, m->m_data + m->m_len, c.shadow.begin() + off))
            << "content differs from the shadow";
        off += static_cast<size_t>(m->m_len);
      }
      ASSERT_EQ(off, c.shadow.size());
    }
    // Freed read-only mbufs are forgotten; their memory may be reused.
    read_only_.swap(still_read_only_);
    still_read_only_.clear();
    bool refs_ok = true;
    for (size_t ci : touched_) {
      if (pool_.refcnt[ci] != cluster_refs_[ci]) {
        ADD_FAILURE() << "cluster " << ci << " refcnt " << pool_.refcnt[ci] << " but "
                      << cluster_refs_[ci] << " mbufs reference it";
        refs_ok = false;
      }
      cluster_refs_[ci] = 0;
    }
    ASSERT_TRUE(refs_ok);
    // Nothing leaked: the zones hold exactly what the chains reference.
    ASSERT_EQ(MbufsInUse(), mbufs);
    ASSERT_EQ(ClustersInUse(), touched_.size());
    ASSERT_EQ(probe_.mbuf_allocs, pool_.mbufs.stats().allocs);
    ASSERT_EQ(probe_.mbuf_frees, pool_.mbufs.stats().frees);
    ASSERT_EQ(probe_.cluster_allocs, pool_.clusters.stats().allocs);
    ASSERT_EQ(probe_.cluster_frees, pool_.clusters.stats().frees);
  }

  void FreeAll() {
    for (const Chain& c : chains_) mb_.freem(c.m);
    chains_.clear();
    EXPECT_TRUE(pool_.idle());
    EXPECT_EQ(pool_.mbufs.stats().allocs, pool_.mbufs.stats().frees);
    EXPECT_EQ(pool_.clusters.stats().allocs, pool_.clusters.stats().frees);
    EXPECT_EQ(probe_.mbuf_frees, pool_.mbufs.stats().frees);
    EXPECT_EQ(probe_.cluster_frees, pool_.clusters.stats().frees);
  }

  // A run that never reached an operation, or never failed, proves little.
  void ExpectCoverage() {
    for (int op = 0; op < kOpCount; ++op) {
      if (op == kReadOnly) continue;
      EXPECT_GT(ok_[op], 20) << kOpNames[op] << " rarely succeeded";
    }
    EXPECT_GT(failed_, 20) << "allocation failures were not exercised";
    EXPECT_LT(skipped_copyback_, ok_[kCopyback]) << "copyback mostly skipped";
    EXPECT_GT(pool_.clusters.stats().failures, 0u);
    EXPECT_GT(pool_.mbufs.stats().failures, 0u);
  }

 private:
  Choose& choose_;
  Fill& fill_;
  MbufPool pool_;
  CountingProbe probe_;
  Mbufs<CountingProbe> mb_;
  std::vector<Chain> chains_;
  std::vector<uint8_t> mbuf_seen_;
  std::vector<uint32_t> cluster_refs_;
  std::vector<size_t> touched_;
  std::unordered_map<const Mbuf*, Saved> read_only_, still_read_only_;
  std::array<int, kOpCount> ok_{};
  int failed_ = 0;
  int skipped_copyback_ = 0;
  int step_ = 0;
};

}  // namespace simloop::net::bsd::model
