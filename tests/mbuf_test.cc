// Unit tests of the mbuf layer: zones, the mbuf macros and every operation of
// Mbufs<P>, checked against FreeBSD 6/7 semantics (mbuf(9)).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <stdexcept>
#include <vector>

#include "sim/stack/bsd/mbuf_ops.h"

namespace simloop::net::bsd {
namespace {

using Bytes = std::vector<uint8_t>;

uintptr_t Addr(const void* p) {
  return reinterpret_cast<uintptr_t>(p);
}

Bytes Contents(const Mbuf* m) {
  Bytes out;
  for (; m != nullptr; m = m->m_next) out.insert(out.end(), m->m_data, m->m_data + m->m_len);
  return out;
}

int Count(const Mbuf* m) {
  int n = 0;
  for (; m != nullptr; m = m->m_next) ++n;
  return n;
}

// Bytes with no short period, so a copy from the wrong offset shows.
Bytes Pattern(int n, uint32_t seed) {
  Bytes b(static_cast<size_t>(n));
  for (auto& x : b) {
    seed = seed * 1103515245u + 12345u;
    x = static_cast<uint8_t>(seed >> 16);
  }
  return b;
}

Bytes Slice(const Bytes& b, int off, int len) {
  return Bytes(b.begin() + off, b.begin() + off + len);
}

// Every test checks its chains with this: a packet header's length is the
// sum of m_len, and every mbuf's data lies inside its buffer.
void ExpectSane(Mbuf* m) {
  ASSERT_NE(m, nullptr);
  if ((m->m_flags & M_PKTHDR) != 0) {
    EXPECT_EQ(m->pkthdr().len, m_length(m));
  }
  for (Mbuf* n = m; n != nullptr; n = n->m_next) {
    EXPECT_GE(n->m_len, 0);
    EXPECT_GE(n->m_data, m_bufstart(n));
    EXPECT_LE(n->m_data + n->m_len, m_bufstart(n) + m_bufsize(n));
    if (n != m) {
      EXPECT_EQ(n->m_flags & M_PKTHDR, 0) << "packet header in mid-chain";
    }
  }
}

// The kinds of buffer a test chain is built from.
enum class Buf { hdr, plain, cluster, hdr_cluster };

struct Seg {
  Buf buf;
  int off;  // where the data starts in the buffer
  int len;
};

class MbufTest : public ::testing::Test {
 protected:
  static constexpr size_t kMbufs = 64;
  static constexpr size_t kClusters = 16;

  MbufTest() : pool_(kMbufs, kClusters), mb_(pool_, probe_) {}

  // Every test must give back what it took, and the probe must have seen
  // every allocation and free the zones counted.
  void TearDown() override {
    EXPECT_TRUE(pool_.idle()) << "mbufs " << pool_.mbufs.stats().in_use << ", clusters "
                              << pool_.clusters.stats().in_use << " still in use";
    EXPECT_EQ(pool_.mbufs.stats().allocs, pool_.mbufs.stats().frees);
    EXPECT_EQ(pool_.clusters.stats().allocs, pool_.clusters.stats().frees);
    EXPECT_EQ(probe_.mbuf_allocs, pool_.mbufs.stats().allocs);
    EXPECT_EQ(probe_.mbuf_frees, pool_.mbufs.stats().frees);
    EXPECT_EQ(probe_.cluster_allocs, pool_.clusters.stats().allocs);
    EXPECT_EQ(probe_.cluster_frees, pool_.clusters.stats().frees);
  }

  Mbuf* Alloc(Buf b) {
    switch (b) {
      case Buf::hdr:
        return mb_.gethdr();
      case Buf::plain:
        return mb_.get();
      case Buf::cluster:
        return mb_.getcl();
      case Buf::hdr_cluster:
        return mb_.getcl(MT_DATA, M_PKTHDR);
    }
    return nullptr;
  }

  // A chain laid out as `segs` says, filled with fresh pattern bytes; a
  // packet header chain gets the right pkthdr.len.
  Mbuf* Build(std::initializer_list<Seg> segs) {
    Mbuf* top = nullptr;
    Mbuf** p = &top;
    for (const Seg& s : segs) {
      Mbuf* m = Alloc(s.buf);
      if (m == nullptr) throw std::runtime_error("Build: allocation failed");
      m->m_data = m_bufstart(m) + s.off;
      m->m_len = s.len;
      const Bytes b = Pattern(s.len, ++seed_);
      if (s.len > 0) std::memcpy(m->m_data, b.data(), b.size());
      *p = m;
      p = &m->m_next;
    }
    if ((top->m_flags & M_PKTHDR) != 0) top->pkthdr().len = m_length(top);
    return top;
  }

  // Holds every free mbuf slot the pool has, dirtied, then frees them, so
  // later allocations get recycled memory full of 0xAA.
  void DirtyFreeMbufs() {
    std::vector<Mbuf*> all;
    while (Mbuf* m = mb_.get()) {
      std::memset(m->dat(), 0xAA, kMLen);
      all.push_back(m);
    }
    for (Mbuf* m : all) mb_.free(m);
  }

  size_t MbufsInUse() const { return pool_.mbufs.stats().in_use; }
  size_t ClustersInUse() const { return pool_.clusters.stats().in_use; }
  size_t MbufFailures() const { return pool_.mbufs.stats().failures; }

  MbufPool pool_;
  CountingProbe probe_;
  Mbufs<CountingProbe> mb_;
  uint32_t seed_ = 0;
};

// One suite name per operation, all sharing the fixture above.
using MbufAlloc = MbufTest;
using MbufMacros = MbufTest;
using MbufPkthdr = MbufTest;
using MbufCopym = MbufTest;
using MbufDup = MbufTest;
using MbufPullup = MbufTest;
using MbufCopyup = MbufTest;
using MbufPrepend = MbufTest;
using MbufAdj = MbufTest;
using MbufCopydata = MbufTest;
using MbufCopyback = MbufTest;
using MbufCat = MbufTest;
using MbufUiotombuf = MbufTest;

// ---------------------------------------------------------------- zones

TEST(MbufZone, ItemsAreAlignedToTheirSize) {
  for (size_t size : {size_t{8}, size_t{256}, size_t{2048}, size_t{4096}}) {
    Zone z("t", size, 32);
    std::vector<void*> items;
    for (int i = 0; i < 32; ++i) {
      void* p = z.alloc();
      ASSERT_NE(p, nullptr);
      EXPECT_EQ(Addr(p) % size, 0u) << "item size " << size;
      EXPECT_TRUE(z.owns(p));
      EXPECT_TRUE(z.is_live(p));
      items.push_back(p);
    }
    // Capacity is a hard limit: nothing is carved past the arena.
    EXPECT_EQ(z.alloc(), nullptr);
    for (void* p : items) z.free(p);
  }
}

TEST(MbufZone, CountsAllocationsFreesAndFailures) {
  Zone z("t", 256, 8);
  EXPECT_EQ(z.stats().limit, 8u);
  z.set_limit(3);
  void* a = z.alloc();
  void* b = z.alloc();
  void* c = z.alloc();
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(z.alloc(), nullptr);
  EXPECT_EQ(z.stats().in_use, 3u);
  EXPECT_EQ(z.stats().allocs, 3u);
  EXPECT_EQ(z.stats().failures, 1u);
  EXPECT_EQ(z.stats().frees, 0u);
  EXPECT_EQ(z.stats().allocated, 3u);

  z.free(b);
  EXPECT_EQ(z.stats().in_use, 2u);
  EXPECT_EQ(z.stats().frees, 1u);
  // A freed item is reused before the arena grows.
  void* d = z.alloc();
  EXPECT_EQ(d, b);
  EXPECT_EQ(z.stats().allocated, 3u);
  EXPECT_EQ(z.stats().allocs, 4u);

  z.set_limit(8);
  std::vector<void*> more;
  for (int i = 0; i < 5; ++i) more.push_back(z.alloc());
  for (void* p : more) {
    EXPECT_NE(p, nullptr);
  }
  EXPECT_EQ(z.stats().in_use, 8u);
  EXPECT_EQ(z.stats().allocated, 8u);
  EXPECT_EQ(z.alloc(), nullptr);
  EXPECT_EQ(z.stats().failures, 2u);

  z.free(a);
  z.free(c);
  z.free(d);
  for (void* p : more) z.free(p);
  EXPECT_EQ(z.stats().in_use, 0u);
  EXPECT_EQ(z.stats().allocs, z.stats().frees);
  EXPECT_EQ(z.stats().allocs, 9u);
}

TEST(MbufZone, LimitBelowInUseRefusesUntilEnoughAreFreed) {
  Zone z("t", 256, 4);
  void* a = z.alloc();
  void* b = z.alloc();
  z.set_limit(1);
  EXPECT_EQ(z.alloc(), nullptr);
  z.free(a);
  EXPECT_EQ(z.alloc(), nullptr) << "still one in use, limit one";
  z.free(b);
  void* c = z.alloc();
  EXPECT_NE(c, nullptr);
  EXPECT_EQ(z.stats().failures, 2u);
  z.free(c);
}

TEST(MbufZone, LimitAboveCapacityThrows) {
  Zone z("t", 256, 4);
  EXPECT_THROW(z.set_limit(5), std::invalid_argument);
  EXPECT_EQ(z.stats().limit, 4u);
  EXPECT_NO_THROW(z.set_limit(4));
  EXPECT_NO_THROW(z.set_limit(0));
  EXPECT_EQ(z.alloc(), nullptr);
}

TEST(MbufZone, RejectsBadGeometry) {
  EXPECT_THROW(Zone("t", 0, 4), std::invalid_argument);
  EXPECT_THROW(Zone("t", 24, 4), std::invalid_argument);
  EXPECT_THROW(Zone("t", 8192, 4), std::invalid_argument);
  EXPECT_THROW(Zone("t", 256, 0), std::invalid_argument);
}

TEST(MbufZone, DoubleFreeThrowsAndLeavesTheZoneIntact) {
  Zone z("t", 256, 4);
  void* p = z.alloc();
  void* q = z.alloc();
  z.free(p);
  EXPECT_THROW(z.free(p), std::logic_error);
  EXPECT_EQ(z.stats().frees, 1u);
  EXPECT_EQ(z.stats().in_use, 1u);
  EXPECT_FALSE(z.is_live(p));
  // Had the second free been pushed on the free list, the same item would
  // now come out twice.
  void* a = z.alloc();
  void* b = z.alloc();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(a, b);
  EXPECT_NE(a, q);
  EXPECT_NE(b, q);
  z.free(a);
  z.free(b);
  z.free(q);
  EXPECT_EQ(z.stats().in_use, 0u);
}

TEST(MbufZone, ForeignPointersThrow) {
  Zone z("t", 256, 4);
  Zone other("u", 256, 4);
  void* p = z.alloc();
  void* o = other.alloc();
  int local = 0;
  EXPECT_THROW(z.free(&local), std::logic_error);
  EXPECT_THROW(z.free(nullptr), std::logic_error);
  EXPECT_THROW(z.free(o), std::logic_error);
  EXPECT_THROW(z.free(static_cast<uint8_t*>(p) + 8), std::logic_error);
  EXPECT_THROW(z.free(static_cast<uint8_t*>(p) + 4 * 256), std::logic_error);
  EXPECT_FALSE(z.is_live(&local));
  EXPECT_FALSE(z.is_live(o));
  EXPECT_TRUE(z.is_live(p));
  EXPECT_EQ(z.stats().frees, 0u);
  EXPECT_EQ(z.stats().in_use, 1u);
  z.free(p);
  other.free(o);
}

TEST(MbufZone, IsLiveFollowsAllocAndFree) {
  Zone z("t", 256, 4);
  void* p = z.alloc();
  EXPECT_TRUE(z.is_live(p));
  z.free(p);
  EXPECT_FALSE(z.is_live(p));
  EXPECT_TRUE(z.owns(p));
  void* q = z.alloc();
  EXPECT_TRUE(z.is_live(q));
  z.free(q);
}

TEST(MbufZone, PoolGivesMsizeAlignedMbufsAndMclbytesAlignedClusters) {
  MbufPool pool(64, 16);
  NullProbe probe;
  Mbufs<NullProbe> mb(pool, probe);
  std::vector<Mbuf*> ms;
  for (int i = 0; i < 16; ++i) {
    Mbuf* m = mb.getcl(MT_DATA, i % 2 == 0 ? M_PKTHDR : 0);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(Addr(m) % kMSize, 0u);
    EXPECT_EQ(Addr(m->ext().buf) % kMClBytes, 0u);
    EXPECT_TRUE(pool.mbufs.is_live(m));
    EXPECT_TRUE(pool.clusters.is_live(m->ext().buf));
    EXPECT_EQ(m->ext().refcnt, pool.refcnt_of(m->ext().buf));
    ms.push_back(m);
  }
  for (Mbuf* m : ms) mb.free(m);
  EXPECT_TRUE(pool.idle());
}

// ---------------------------------------------------------------- allocation

TEST_F(MbufAlloc, GetGivesAnEmptyPlainMbuf) {
  Mbuf* m = mb_.get(MT_HEADER);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(Addr(m) % kMSize, 0u);
  EXPECT_EQ(m->m_type, MT_HEADER);
  EXPECT_EQ(m->m_flags, 0);
  EXPECT_EQ(m->m_len, 0);
  EXPECT_EQ(m->m_next, nullptr);
  EXPECT_EQ(m->m_nextpkt, nullptr);
  EXPECT_EQ(m->m_data, m->dat());
  EXPECT_EQ(Addr(m->m_data) - Addr(m), static_cast<uintptr_t>(kMHdrSize));
  EXPECT_EQ(m_bufsize(m), kMLen);
  EXPECT_TRUE(m_writable(m));
  EXPECT_EQ(m_leadingspace(m), 0);
  EXPECT_EQ(m_trailingspace(m), kMLen);
  EXPECT_EQ(MbufsInUse(), 1u);
  EXPECT_EQ(probe_.mbuf_allocs, 1u);
  mb_.free(m);
}

TEST_F(MbufAlloc, GethdrGivesAPacketHeader) {
  // Recycled memory must not leak an old header into the new one.
  Mbuf* old = mb_.gethdr();
  old->pkthdr().len = 77;
  old->pkthdr().csum_flags = 5;
  mb_.free(old);
  Mbuf* m = mb_.gethdr();
  ASSERT_EQ(m, old);
  EXPECT_EQ(m->m_flags, M_PKTHDR);
  EXPECT_EQ(m->m_data, m->pktdat());
  EXPECT_EQ(Addr(m->m_data) - Addr(m), static_cast<uintptr_t>(kMHdrSize + sizeof(PktHdr)));
  EXPECT_EQ(m->pkthdr().len, 0);
  EXPECT_EQ(m->pkthdr().rcvif, nullptr);
  EXPECT_EQ(m->pkthdr().csum_flags, 0u);
  EXPECT_EQ(m_bufsize(m), kMHLen);
  EXPECT_EQ(m_trailingspace(m), kMHLen);
  EXPECT_EQ(m->m_nextpkt, nullptr);
  mb_.free(m);
}

TEST_F(MbufAlloc, GetclAttachesAFreshCluster) {
  Mbuf* m = mb_.getcl(MT_DATA, M_EOR);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->m_flags, M_EXT | M_EOR);
  EXPECT_EQ(m->m_data, m->ext().buf);
  EXPECT_EQ(Addr(m->ext().buf) % kMClBytes, 0u);
  EXPECT_EQ(m->ext().size, static_cast<uint32_t>(kMClBytes));
  EXPECT_EQ(*m->ext().refcnt, 1u);
  EXPECT_EQ(m_bufsize(m), kMClBytes);
  EXPECT_TRUE(m_writable(m));
  EXPECT_EQ(m_trailingspace(m), kMClBytes);

  Mbuf* h = mb_.getcl(MT_DATA, M_PKTHDR);
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->m_flags, M_EXT | M_PKTHDR);
  EXPECT_EQ(h->m_data, h->ext().buf);
  EXPECT_EQ(h->pkthdr().len, 0);
  EXPECT_NE(h->ext().buf, m->ext().buf);
  EXPECT_EQ(ClustersInUse(), 2u);
  EXPECT_EQ(probe_.cluster_allocs, 2u);
  mb_.free(m);
  mb_.free(h);
}

TEST_F(MbufAlloc, GetclWithoutClusterGivesBackTheMbuf) {
  pool_.clusters.set_limit(0);
  EXPECT_EQ(mb_.getcl(MT_DATA, M_PKTHDR), nullptr);
  EXPECT_EQ(MbufsInUse(), 0u);
  EXPECT_EQ(pool_.mbufs.stats().allocs, 1u);
  EXPECT_EQ(pool_.mbufs.stats().frees, 1u);
  EXPECT_EQ(pool_.clusters.stats().failures, 1u);
}

TEST_F(MbufAlloc, AllocationsFailAtTheZoneLimit) {
  pool_.mbufs.set_limit(0);
  EXPECT_EQ(mb_.get(), nullptr);
  EXPECT_EQ(mb_.gethdr(), nullptr);
  EXPECT_EQ(mb_.getcl(), nullptr);
  EXPECT_EQ(MbufFailures(), 3u);
  EXPECT_EQ(pool_.clusters.stats().allocs, 0u) << "no cluster without an mbuf";
  EXPECT_EQ(probe_.mbuf_allocs, 0u);
}

TEST_F(MbufAlloc, FreeReturnsTheNextMbufAndDropsOneClusterReference) {
  Mbuf* m = Build({{Buf::hdr_cluster, 0, 100}, {Buf::plain, 0, 10}});
  Mbuf* copy = mb_.copym(m, 0, kMCopyAll);
  ASSERT_NE(copy, nullptr);
  uint8_t* cl = m->ext().buf;
  EXPECT_EQ(*m->ext().refcnt, 2u);
  Mbuf* second = m->m_next;
  EXPECT_EQ(mb_.free(m), second);
  // The copy still holds the cluster.
  EXPECT_TRUE(pool_.clusters.is_live(cl));
  EXPECT_EQ(*copy->ext().refcnt, 1u);
  EXPECT_EQ(ClustersInUse(), 1u);
  EXPECT_EQ(mb_.free(second), nullptr);
  mb_.freem(copy);
  EXPECT_FALSE(pool_.clusters.is_live(cl));
  EXPECT_EQ(probe_.cluster_frees, 1u);
}

TEST_F(MbufAlloc, FreemOfNothingIsANoOp) {
  mb_.freem(nullptr);
  mb_.freem_queue(nullptr);
  EXPECT_EQ(pool_.mbufs.stats().frees, 0u);
}

TEST_F(MbufAlloc, FreemQueueFreesEveryPacket) {
  Mbuf* a = Build({{Buf::hdr, 0, 10}, {Buf::cluster, 0, 300}});
  Mbuf* b = Build({{Buf::hdr_cluster, 0, 10}});
  Mbuf* c = Build({{Buf::hdr, 0, 1}, {Buf::plain, 0, 1}, {Buf::plain, 0, 1}});
  a->m_nextpkt = b;
  b->m_nextpkt = c;
  EXPECT_EQ(MbufsInUse(), 6u);
  mb_.freem_queue(a);
  EXPECT_EQ(MbufsInUse(), 0u);
  EXPECT_EQ(ClustersInUse(), 0u);
}

// ---------------------------------------------------------------- macros

TEST_F(MbufMacros, WritableNeedsTheOnlyReferenceAndNoReadOnlyFlag) {
  Mbuf* m = Build({{Buf::hdr, 0, 10}});
  EXPECT_TRUE(m_writable(m));
  m->m_flags |= M_RDONLY;
  EXPECT_FALSE(m_writable(m));
  EXPECT_EQ(m_trailingspace(m), 0);
  mb_.free(m);

  Mbuf* c = Build({{Buf::hdr_cluster, 0, 10}});
  EXPECT_TRUE(m_writable(c));
  ++*c->ext().refcnt;
  EXPECT_FALSE(m_writable(c));
  --*c->ext().refcnt;
  EXPECT_TRUE(m_writable(c));
  c->m_flags |= M_RDONLY;
  EXPECT_FALSE(m_writable(c));
  mb_.free(c);
}

TEST_F(MbufMacros, LeadingAndTrailingSpace) {
  Mbuf* h = Build({{Buf::hdr, 20, 30}});
  EXPECT_EQ(m_leadingspace(h), 20);
  EXPECT_EQ(m_trailingspace(h), kMHLen - 50);
  Mbuf* p = Build({{Buf::plain, 7, 100}});
  EXPECT_EQ(m_leadingspace(p), 7);
  EXPECT_EQ(m_trailingspace(p), kMLen - 107);
  Mbuf* c = Build({{Buf::cluster, 56, 1000}});
  EXPECT_EQ(m_leadingspace(c), 56);
  EXPECT_EQ(m_trailingspace(c), kMClBytes - 1056);
  // Space that must not be written is no space at all.
  h->m_flags |= M_RDONLY;
  EXPECT_EQ(m_leadingspace(h), 0);
  EXPECT_EQ(m_trailingspace(h), 0);
  Mbuf* cc = mb_.copym(c, 0, kMCopyAll);
  ASSERT_NE(cc, nullptr);
  EXPECT_EQ(m_leadingspace(c), 0);
  EXPECT_EQ(m_trailingspace(c), 0);
  EXPECT_EQ(m_leadingspace(cc), 0);
  EXPECT_EQ(m_trailingspace(cc), 0);
  mb_.free(cc);
  EXPECT_EQ(m_leadingspace(c), 56);
  mb_.free(h);
  mb_.free(p);
  mb_.free(c);
}

TEST_F(MbufMacros, AlignPutsAnObjectAtTheEndAlignedDownToLong) {
  constexpr int kAlign = static_cast<int>(sizeof(long));
  for (Buf b : {Buf::plain, Buf::hdr, Buf::cluster}) {
    Mbuf* m = Alloc(b);
    for (int len : {1, 10, 14, 28, 40, m_bufsize(m) - 1, m_bufsize(m)}) {
      m_align(m, len);
      const int lead = static_cast<int>(m->m_data - m_bufstart(m));
      EXPECT_EQ(lead % kAlign, 0) << len;
      EXPECT_LE(lead + len, m_bufsize(m)) << len;
      EXPECT_GT(lead + len + kAlign, m_bufsize(m)) << "not at the end, len " << len;
      EXPECT_EQ(Addr(m->m_data) % kAlign, 0u);
    }
    mb_.free(m);
  }
  Mbuf* m = mb_.get();
  m_align(m, 28);
  EXPECT_EQ(m->m_data, m->dat() + ((kMLen - 28) & ~(kAlign - 1)));
  mb_.free(m);
}

TEST_F(MbufMacros, LengthSumsTheChain) {
  EXPECT_EQ(m_length(nullptr), 0);
  Mbuf* m = Build({{Buf::hdr, 0, 10}, {Buf::plain, 0, 0}, {Buf::cluster, 0, 1500}});
  EXPECT_EQ(m_length(m), 1510);
  EXPECT_EQ(m_length(m->m_next), 1500);
  mb_.freem(m);
}

TEST_F(MbufMacros, MtodIsTheDataPointer) {
  Mbuf* m = Build({{Buf::cluster, 6, 20}});
  EXPECT_EQ(mtod(m), m->ext().buf + 6);
  EXPECT_EQ(mtod_addr(m) % 4, 2u);
  EXPECT_EQ(reinterpret_cast<uint8_t*>(mtod<uint32_t>(m)), m->m_data);
  mb_.free(m);
}

// ---------------------------------------------------------------- packet headers

TEST_F(MbufPkthdr, MoveTransfersTheHeaderAndPacketFlags) {
  Mbuf* from = Build({{Buf::hdr, 10, 20}});
  from->m_flags |= M_BCAST | M_EOR;
  from->pkthdr().csum_flags = 0x33;
  from->pkthdr().len = 1234;
  uint8_t* data = from->m_data;
  Mbuf* to = mb_.get();
  to->m_flags |= M_RDONLY;
  Mbufs<CountingProbe>::move_pkthdr(to, from);
  EXPECT_EQ(to->m_flags, M_PKTHDR | M_BCAST | M_EOR) << "storage flags are not the packet's";
  EXPECT_EQ(to->m_data, to->pktdat());
  EXPECT_EQ(to->pkthdr().len, 1234);
  EXPECT_EQ(to->pkthdr().csum_flags, 0x33u);
  EXPECT_EQ(from->m_flags & M_PKTHDR, 0);
  EXPECT_EQ(from->m_data, data) << "the source keeps its data";
  EXPECT_EQ(from->m_len, 20);
  // Without a packet header the whole m_dat is the buffer.
  EXPECT_EQ(m_bufstart(from), from->dat());
  mb_.free(to);
  mb_.free(from);
}

TEST_F(MbufPkthdr, MoveIntoAClusterMbufKeepsItsData) {
  Mbuf* from = Build({{Buf::hdr, 0, 5}});
  from->pkthdr().len = 42;
  Mbuf* to = Build({{Buf::cluster, 100, 50}});
  const Bytes before = Contents(to);
  uint8_t* data = to->m_data;
  uint8_t* buf = to->ext().buf;
  Mbufs<CountingProbe>::move_pkthdr(to, from);
  EXPECT_EQ(to->m_flags, M_PKTHDR | M_EXT);
  EXPECT_EQ(to->m_data, data);
  EXPECT_EQ(to->ext().buf, buf) << "the header must not overlay ext";
  EXPECT_EQ(*to->ext().refcnt, 1u);
  EXPECT_EQ(to->pkthdr().len, 42);
  EXPECT_EQ(Contents(to), before);
  mb_.free(to);
  mb_.free(from);
}

TEST_F(MbufPkthdr, DupCopiesTheHeaderAndLeavesTheSource) {
  Mbuf* from = Build({{Buf::hdr, 0, 5}});
  from->m_flags |= M_MCAST;
  from->pkthdr().csum_data = 99;
  Mbuf* to = mb_.getcl();
  uint8_t* data = to->m_data;
  Mbufs<CountingProbe>::dup_pkthdr(to, from);
  EXPECT_EQ(to->m_flags, M_PKTHDR | M_MCAST | M_EXT);
  EXPECT_EQ(to->m_data, data);
  EXPECT_EQ(to->pkthdr().csum_data, 99u);
  EXPECT_EQ(to->pkthdr().len, 5);
  EXPECT_EQ(from->m_flags, M_PKTHDR | M_MCAST);
  EXPECT_EQ(from->pkthdr().csum_data, 99u);
  mb_.free(to);
  mb_.free(from);
}

// ---------------------------------------------------------------- m_copym

TEST_F(MbufCopym, SharesClustersAtTheSameOffset) {
  const Bytes payload = Pattern(1000, 1);
  Mbuf* m = mb_.uiotombuf(payload.data(), 1000, 56);
  ASSERT_NE(m, nullptr);
  m->m_flags |= M_BCAST;
  const size_t mbufs = MbufsInUse();
  Mbuf* n = mb_.copym(m, 0, kMCopyAll);
  ASSERT_NE(n, nullptr);
  ExpectSane(n);
  EXPECT_NE(n, m);
  EXPECT_EQ(n->m_flags, M_PKTHDR | M_EXT | M_BCAST);
  EXPECT_EQ(n->ext().buf, m->ext().buf);
  EXPECT_EQ(n->m_data, m->m_data) << "m_copym keeps the cluster's data offset";
  EXPECT_EQ(*m->ext().refcnt, 2u);
  EXPECT_EQ(n->pkthdr().len, 1000);
  EXPECT_EQ(Contents(n), payload);
  EXPECT_EQ(MbufsInUse(), mbufs + 1);
  EXPECT_EQ(ClustersInUse(), 1u);
  EXPECT_EQ(probe_.copies[static_cast<size_t>(CopyKind::loop_copy)], 0u) << "nothing copied";
  // Shared storage: neither side may be written.
  EXPECT_FALSE(m_writable(m));
  EXPECT_FALSE(m_writable(n));
  EXPECT_EQ(m_leadingspace(m), 0);
  EXPECT_EQ(m_trailingspace(n), 0);
  // Freeing one side gives the other back its storage.
  mb_.freem(n);
  EXPECT_EQ(*m->ext().refcnt, 1u);
  EXPECT_TRUE(m_writable(m));
  EXPECT_EQ(m_leadingspace(m), 56);
  EXPECT_EQ(ClustersInUse(), 1u);
  mb_.freem(m);
  EXPECT_EQ(ClustersInUse(), 0u);
}

TEST_F(MbufCopym, FreeingTheOriginalMakesTheCopyWritable) {
  Mbuf* m = Build({{Buf::hdr_cluster, 40, 500}});
  Mbuf* n = mb_.copym(m, 0, kMCopyAll);
  ASSERT_NE(n, nullptr);
  const Bytes content = Contents(m);
  EXPECT_FALSE(m_writable(n));
  mb_.freem(m);
  EXPECT_TRUE(m_writable(n));
  EXPECT_EQ(m_leadingspace(n), 40);
  EXPECT_EQ(Contents(n), content);
  mb_.freem(n);
}

TEST_F(MbufCopym, CopiesInternalDataToTheStartOfTheNewMbuf) {
  Mbuf* m = Build({{Buf::hdr, 56, 100}, {Buf::plain, 30, 150}});
  const Bytes content = Contents(m);
  Mbuf* n = mb_.copym(m, 0, kMCopyAll);
  ASSERT_NE(n, nullptr);
  ExpectSane(n);
  EXPECT_EQ(Count(n), 2);
  EXPECT_EQ(n->m_data, n->pktdat()) << "internal data goes to the start";
  EXPECT_EQ(n->m_next->m_data, n->m_next->dat());
  EXPECT_EQ(n->m_flags & M_EXT, 0);
  EXPECT_EQ(Contents(n), content);
  EXPECT_TRUE(m_writable(m));
  EXPECT_TRUE(m_writable(n));
  EXPECT_EQ(probe_.copied_bytes[static_cast<size_t>(CopyKind::loop_copy)], 250u);
  EXPECT_EQ(probe_.copies[static_cast<size_t>(CopyKind::loop_copy)], 2u);
  // Independent storage: writing one does not change the other.
  n->m_data[0] ^= 0xff;
  EXPECT_EQ(Contents(m), content);
  mb_.freem(n);
  mb_.freem(m);
}

TEST_F(MbufCopym, CopiesARangeAcrossMbufs) {
  Mbuf* m = Build({{Buf::hdr, 0, 100}, {Buf::cluster, 8, 1000}, {Buf::plain, 4, 50}});
  const Bytes content = Contents(m);
  Mbuf* n = mb_.copym(m, 150, 960);
  ASSERT_NE(n, nullptr);
  ExpectSane(n);
  EXPECT_EQ(n->m_flags & M_PKTHDR, 0) << "no header when the copy starts past 0";
  EXPECT_EQ(Contents(n), Slice(content, 150, 960));
  ASSERT_EQ(Count(n), 2);
  EXPECT_EQ(n->m_data, m->m_next->m_data + 50);
  EXPECT_EQ(n->m_len, 950);
  EXPECT_EQ(n->m_next->m_data, n->m_next->dat());
  EXPECT_EQ(n->m_next->m_len, 10);
  EXPECT_EQ(*m->m_next->ext().refcnt, 2u);
  mb_.freem(n);
  EXPECT_EQ(*m->m_next->ext().refcnt, 1u);
  EXPECT_EQ(Contents(m), content);
  mb_.freem(m);
}

TEST_F(MbufCopym, PrefixGetsTheHeaderWithItsLength) {
  Mbuf* m = Build({{Buf::hdr, 0, 20}, {Buf::cluster, 0, 300}});
  m->pkthdr().csum_flags = 7;
  Mbuf* n = mb_.copym(m, 0, 30);
  ASSERT_NE(n, nullptr);
  ExpectSane(n);
  EXPECT_TRUE((n->m_flags & M_PKTHDR) != 0);
  EXPECT_EQ(n->pkthdr().len, 30);
  EXPECT_EQ(n->pkthdr().csum_flags, 7u);
  EXPECT_EQ(Contents(n), Slice(Contents(m), 0, 30));
  EXPECT_EQ(m->pkthdr().len, 320);
  mb_.freem(n);
  mb_.freem(m);
}

TEST_F(MbufCopym, CopyAllFromAnOffsetStopsAtTheEnd) {
  Mbuf* m = Build({{Buf::hdr, 0, 20}, {Buf::plain, 0, 30}, {Buf::cluster, 0, 300}});
  Mbuf* n = mb_.copym(m, 20, kMCopyAll);
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(Count(n), 2) << "the first mbuf, wholly skipped, is not copied";
  EXPECT_EQ(Contents(n), Slice(Contents(m), 20, 330));
  mb_.freem(n);
  mb_.freem(m);
}

TEST_F(MbufCopym, RejectsRangesOutsideTheChain) {
  Mbuf* m = Build({{Buf::hdr, 0, 20}, {Buf::plain, 0, 30}});
  EXPECT_THROW(mb_.copym(m, -1, 5), std::invalid_argument);
  EXPECT_THROW(mb_.copym(m, 0, -5), std::invalid_argument);
  EXPECT_THROW(mb_.copym(m, 51, 1), std::invalid_argument);
  EXPECT_THROW(mb_.copym(m, 40, 11), std::invalid_argument);
  EXPECT_EQ(MbufsInUse(), 2u) << "a rejected copy leaves nothing allocated";
  EXPECT_EQ(mb_.copym(m, 10, 0), nullptr);
  mb_.freem(m);
}

TEST_F(MbufCopym, AllocationFailureLeavesTheOriginalIntact) {
  Mbuf* m = Build({{Buf::hdr_cluster, 0, 100}, {Buf::cluster, 0, 100}, {Buf::plain, 0, 100}});
  const Bytes content = Contents(m);
  pool_.mbufs.set_limit(MbufsInUse() + 2);
  EXPECT_EQ(mb_.copym(m, 0, kMCopyAll), nullptr);
  EXPECT_EQ(MbufFailures(), 1u);
  EXPECT_EQ(MbufsInUse(), 3u) << "the partial copy is freed";
  EXPECT_EQ(*m->ext().refcnt, 1u) << "its cluster references with it";
  EXPECT_EQ(*m->m_next->ext().refcnt, 1u);
  EXPECT_TRUE(m_writable(m));
  EXPECT_EQ(Contents(m), content);
  ExpectSane(m);
  mb_.freem(m);
}

// ---------------------------------------------------------------- m_dup

TEST_F(MbufDup, DeepCopyPackedFromOffsetZero) {
  const Bytes payload = Pattern(3000, 2);
  Mbuf* m = mb_.uiotombuf(payload.data(), 3000, 56);
  ASSERT_NE(m, nullptr);
  m->m_flags |= M_MCAST;
  m->pkthdr().csum_flags = 3;
  Mbuf* n = mb_.dup(m);
  ASSERT_NE(n, nullptr);
  ExpectSane(n);
  EXPECT_EQ(Contents(n), payload);
  EXPECT_EQ(n->pkthdr().len, 3000);
  EXPECT_EQ(n->pkthdr().csum_flags, 3u);
  EXPECT_EQ(n->m_flags & (M_PKTHDR | M_MCAST), M_PKTHDR | M_MCAST);
  ASSERT_EQ(Count(n), 2);
  EXPECT_EQ(n->m_len, kMClBytes);
  EXPECT_EQ(n->m_next->m_len, 3000 - kMClBytes);
  for (Mbuf* x = n; x != nullptr; x = x->m_next) {
    EXPECT_TRUE((x->m_flags & M_EXT) != 0);
    EXPECT_EQ(x->m_data, m_bufstart(x)) << "packed from offset 0";
    EXPECT_TRUE(m_writable(x));
    EXPECT_EQ(*x->ext().refcnt, 1u);
    for (Mbuf* y = m; y != nullptr; y = y->m_next) {
      EXPECT_NE(x->ext().buf, y->ext().buf);
    }
  }
  EXPECT_TRUE(m_writable(m));
  EXPECT_EQ(probe_.copied_bytes[static_cast<size_t>(CopyKind::dup)], 3000u);
  mb_.freem(n);
  EXPECT_EQ(Contents(m), payload);
  mb_.freem(m);
}

TEST_F(MbufDup, PacksSmallMbufsTogether) {
  // 10 x 20 bytes: at least MINCLSIZE, so one cluster.
  Mbuf* m = Build({{Buf::hdr, 3, 20},
                   {Buf::plain, 1, 20},
                   {Buf::plain, 2, 20},
                   {Buf::plain, 3, 20},
                   {Buf::plain, 4, 20},
                   {Buf::plain, 5, 20},
                   {Buf::plain, 6, 20},
                   {Buf::plain, 7, 20},
                   {Buf::plain, 8, 20},
                   {Buf::plain, 9, 20}});
  Mbuf* n = mb_.dup(m);
  ASSERT_NE(n, nullptr);
  ExpectSane(n);
  EXPECT_EQ(Count(n), 1);
  EXPECT_TRUE((n->m_flags & M_EXT) != 0);
  EXPECT_EQ(Contents(n), Contents(m));
  mb_.freem(n);
  mb_.adj(m, -100);
  // 100 bytes: a single header mbuf.
  n = mb_.dup(m);
  ASSERT_NE(n, nullptr);
  ExpectSane(n);
  EXPECT_EQ(Count(n), 1);
  EXPECT_EQ(n->m_flags & M_EXT, 0);
  EXPECT_EQ(n->m_data, n->pktdat());
  EXPECT_EQ(Contents(n), Contents(m));
  mb_.freem(n);
  mb_.freem(m);
}

TEST_F(MbufDup, TailShorterThanMinclsizeGoesInAPlainMbuf) {
  Mbuf* m = Build({{Buf::hdr_cluster, 10, 1500}, {Buf::cluster, 0, 600}});
  Mbuf* n = mb_.dup(m);
  ASSERT_NE(n, nullptr);
  ExpectSane(n);
  ASSERT_EQ(Count(n), 2);
  EXPECT_EQ(n->m_len, kMClBytes);
  EXPECT_EQ(n->m_next->m_flags & M_EXT, 0);
  EXPECT_EQ(n->m_next->m_len, 2100 - kMClBytes);
  EXPECT_EQ(n->m_next->m_data, n->m_next->dat());
  EXPECT_EQ(Contents(n), Contents(m));
  mb_.freem(n);
  mb_.freem(m);
}

TEST_F(MbufDup, CopiesSharedClustersToo) {
  Mbuf* m = Build({{Buf::hdr_cluster, 10, 500}});
  Mbuf* c = mb_.copym(m, 0, kMCopyAll);
  ASSERT_NE(c, nullptr);
  Mbuf* d = mb_.dup(c);
  ASSERT_NE(d, nullptr);
  EXPECT_TRUE(m_writable(d));
  EXPECT_NE(d->ext().buf, m->ext().buf);
  EXPECT_EQ(*m->ext().refcnt, 2u) << "dup takes no reference";
  EXPECT_EQ(Contents(d), Contents(m));
  mb_.freem(c);
  mb_.freem(d);
  mb_.freem(m);
}

TEST_F(MbufDup, EmptyPacketGivesAnEmptyHeaderMbuf) {
  Mbuf* m = Build({{Buf::hdr, 10, 0}});
  Mbuf* n = mb_.dup(m);
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(Count(n), 1);
  EXPECT_EQ(n->m_len, 0);
  EXPECT_TRUE((n->m_flags & M_PKTHDR) != 0);
  EXPECT_EQ(n->pkthdr().len, 0);
  mb_.freem(n);
  mb_.freem(m);
}

TEST_F(MbufDup, NeedsAPacketHeader) {
  Mbuf* m = Build({{Buf::plain, 0, 10}});
  EXPECT_THROW(mb_.dup(m), std::invalid_argument);
  mb_.freem(m);
}

TEST_F(MbufDup, AllocationFailureLeavesTheOriginalIntact) {
  Mbuf* m = Build({{Buf::hdr_cluster, 10, 2000}, {Buf::cluster, 0, 2000}});
  const Bytes content = Contents(m);
  pool_.clusters.set_limit(ClustersInUse() + 1);
  EXPECT_EQ(mb_.dup(m), nullptr);
  EXPECT_EQ(pool_.clusters.stats().failures, 1u);
  EXPECT_EQ(MbufsInUse(), 2u);
  EXPECT_EQ(ClustersInUse(), 2u);
  EXPECT_EQ(Contents(m), content);
  EXPECT_TRUE(m_writable(m));
  mb_.freem(m);
}

// The shallow copy keeps the alignment but shares the frame; the deep copy
// owns its storage but puts the IP header 2 bytes off a 4-byte boundary.
TEST_F(MbufDup, ShallowCopyKeepsAlignmentDeepCopyLosesIt) {
  for (int len : {100, 1000}) {
    const Bytes payload = Pattern(len, 3);
    Mbuf* m = mb_.uiotombuf(payload.data(), len, 56);
    ASSERT_NE(m, nullptr);
    m = mb_.prepend(m, 28);
    m = mb_.prepend(m, 14);
    ASSERT_NE(m, nullptr);
    ASSERT_EQ(mtod_addr(m) % 4, 2u);
    const bool cluster = (m->m_flags & M_EXT) != 0;
    EXPECT_EQ(cluster, len + 56 >= kMinClSize);
    Mbuf* shallow = mb_.copym(m, 0, kMCopyAll);
    Mbuf* deep = mb_.dup(m);
    ASSERT_NE(shallow, nullptr);
    ASSERT_NE(deep, nullptr);
    // Internal data is copied to the start of the new mbuf, so only a
    // shared cluster keeps the alignment.
    EXPECT_EQ((mtod_addr(shallow) + 14) % 4, cluster ? 0u : 2u) << len;
    EXPECT_EQ((mtod_addr(deep) + 14) % 4, 2u) << len;
    EXPECT_EQ(m_writable(shallow), !cluster) << "only a cluster is shared";
    EXPECT_TRUE(m_writable(deep));
    mb_.freem(shallow);
    mb_.freem(deep);
    mb_.freem(m);
  }
}

// ---------------------------------------------------------------- m_pullup

TEST_F(MbufPullup, ContiguousDataIsReturnedAsIs) {
  Mbuf* m = Build({{Buf::hdr, 0, 40}, {Buf::plain, 0, 40}});
  const size_t allocs = pool_.mbufs.stats().allocs;
  EXPECT_EQ(mb_.pullup(m, 40), m);
  EXPECT_EQ(m->m_len, 40);
  EXPECT_EQ(pool_.mbufs.stats().allocs, allocs);
  EXPECT_EQ(probe_.copies[static_cast<size_t>(CopyKind::pullup)], 0u);
  mb_.freem(m);
}

TEST_F(MbufPullup, GathersIntoAWritableFirstMbuf) {
  Mbuf* m = Build({{Buf::hdr, 0, 14}, {Buf::cluster, 0, 1000}});
  const Bytes content = Contents(m);
  uint8_t* second_data = m->m_next->m_data;
  const size_t allocs = pool_.mbufs.stats().allocs;
  Mbuf* r = mb_.pullup(m, 28);
  ASSERT_EQ(r, m);
  ExpectSane(r);
  // At least max_protohdr bytes are gathered, to spare later pullups.
  EXPECT_EQ(r->m_len, 14 + Mbufs<CountingProbe>::kMaxProtoHdr);
  EXPECT_EQ(r->m_next->m_data, second_data + 40);
  EXPECT_EQ(r->m_next->m_len, 960);
  EXPECT_EQ(Contents(r), content);
  EXPECT_EQ(pool_.mbufs.stats().allocs, allocs);
  EXPECT_EQ(probe_.copied_bytes[static_cast<size_t>(CopyKind::pullup)], 40u);
  mb_.freem(r);
}

TEST_F(MbufPullup, DoesNotShiftDataToMakeRoom) {
  // 150 + 20 bytes into m_pktdat leave 22 after the data: not enough for 60.
  Mbuf* m = Build({{Buf::hdr, 150, 20}, {Buf::plain, 0, 100}});
  const Bytes content = Contents(m);
  Mbuf* r = mb_.pullup(m, 60);
  ASSERT_NE(r, nullptr);
  EXPECT_NE(r, m);
  EXPECT_EQ(r->m_data, r->pktdat());
  EXPECT_GE(r->m_len, 60);
  EXPECT_EQ(Contents(r), content);
  ExpectSane(r);
  mb_.freem(r);
}

TEST_F(MbufPullup, FreesMbufsItEmpties) {
  Mbuf* m =
      Build({{Buf::hdr, 0, 10}, {Buf::plain, 0, 5}, {Buf::cluster, 0, 0}, {Buf::plain, 0, 100}});
  const Bytes content = Contents(m);
  Mbuf* r = mb_.pullup(m, 50);
  ASSERT_EQ(r, m);
  ExpectSane(r);
  EXPECT_GE(r->m_len, 50);
  EXPECT_EQ(Count(r), 2);
  EXPECT_EQ(MbufsInUse(), 2u);
  EXPECT_EQ(ClustersInUse(), 0u);
  EXPECT_EQ(Contents(r), content);
  mb_.freem(r);
}

TEST_F(MbufPullup, UsesANewHeaderMbufWhenTheFirstHasACluster) {
  Mbuf* m = Build({{Buf::hdr_cluster, 0, 10}, {Buf::plain, 0, 100}});
  const Bytes content = Contents(m);
  Mbuf* r = mb_.pullup(m, 50);
  ASSERT_NE(r, nullptr);
  ExpectSane(r);
  EXPECT_NE(r, m);
  EXPECT_EQ(r->m_flags & (M_PKTHDR | M_EXT), M_PKTHDR);
  EXPECT_EQ(r->m_data, r->pktdat());
  EXPECT_GE(r->m_len, 50);
  EXPECT_EQ(r->pkthdr().len, 110);
  EXPECT_EQ(Contents(r), content);
  EXPECT_EQ(ClustersInUse(), 0u) << "the emptied cluster mbuf is freed";
  EXPECT_EQ(Count(r), 2);
  mb_.freem(r);
}

TEST_F(MbufPullup, NeverGathersIntoReadOnlyStorage) {
  Mbuf* m = Build({{Buf::hdr, 0, 10}, {Buf::plain, 0, 100}});
  m->m_flags |= M_RDONLY;
  const Bytes content = Contents(m);
  const size_t allocs = pool_.mbufs.stats().allocs;
  Mbuf* r = mb_.pullup(m, 30);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(pool_.mbufs.stats().allocs, allocs + 1) << "a new mbuf, not the read-only one";
  EXPECT_TRUE(m_writable(r));
  EXPECT_EQ(r->m_flags & (M_PKTHDR | M_RDONLY), M_PKTHDR);
  EXPECT_GE(r->m_len, 30);
  EXPECT_EQ(Contents(r), content);
  ExpectSane(r);
  mb_.freem(r);
}

TEST_F(MbufPullup, OnASharedClusterLeavesTheOtherCopyAlone) {
  Mbuf* m = Build({{Buf::hdr_cluster, 0, 20}, {Buf::plain, 0, 100}});
  const Bytes content = Contents(m);
  Mbuf* c = mb_.copym(m, 0, kMCopyAll);
  ASSERT_NE(c, nullptr);
  c = mb_.pullup(c, 50);
  ASSERT_NE(c, nullptr);
  ExpectSane(c);
  EXPECT_EQ(Contents(c), content);
  EXPECT_EQ(Contents(m), content);
  EXPECT_EQ(m->m_len, 20);
  EXPECT_EQ(*m->ext().refcnt, 1u) << "the copy's emptied cluster mbuf dropped its reference";
  EXPECT_TRUE(m_writable(m));
  mb_.freem(c);
  mb_.freem(m);
}

TEST_F(MbufPullup, WithoutAHeaderCanFillAllOfMdat) {
  Mbuf* m = Build({{Buf::plain, 0, 10}, {Buf::plain, 0, 220}});
  const Bytes content = Contents(m);
  Mbuf* r = mb_.pullup(m, 200);
  ASSERT_EQ(r, m);
  EXPECT_GE(r->m_len, 200);
  EXPECT_EQ(Contents(r), content);
  ExpectSane(r);
  mb_.freem(r);
}

TEST_F(MbufPullup, MoreThanMhlenFailsAndFreesTheChain) {
  Mbuf* m = Build({{Buf::hdr_cluster, 0, 100}, {Buf::cluster, 0, 500}});
  EXPECT_EQ(mb_.pullup(m, kMHLen + 1), nullptr);
  EXPECT_TRUE(pool_.idle());
}

TEST_F(MbufPullup, ShortChainFailsAndFreesIt) {
  Mbuf* m = Build({{Buf::hdr, 0, 10}, {Buf::plain, 0, 20}});
  EXPECT_EQ(mb_.pullup(m, 50), nullptr);
  EXPECT_TRUE(pool_.idle());
  Mbuf* c = Build({{Buf::hdr_cluster, 0, 10}, {Buf::plain, 0, 20}});
  EXPECT_EQ(mb_.pullup(c, 50), nullptr);
  EXPECT_TRUE(pool_.idle());
}

TEST_F(MbufPullup, AllocationFailureFreesTheChain) {
  Mbuf* m = Build({{Buf::hdr_cluster, 0, 10}, {Buf::plain, 0, 100}});
  pool_.mbufs.set_limit(MbufsInUse());
  EXPECT_EQ(mb_.pullup(m, 50), nullptr);
  EXPECT_EQ(MbufFailures(), 1u);
  EXPECT_TRUE(pool_.idle());
}

// ---------------------------------------------------------------- m_copyup

TEST_F(MbufCopyup, AlwaysUsesANewMbufAtTheChosenOffset) {
  Mbuf* m = Build({{Buf::hdr, 0, 100}, {Buf::plain, 0, 50}});
  const Bytes content = Contents(m);
  Mbuf* r = mb_.copyup(m, 20, 2);
  ASSERT_NE(r, nullptr);
  ExpectSane(r);
  EXPECT_NE(r, m) << "even though the first mbuf held the bytes";
  EXPECT_EQ(r->m_data, r->pktdat() + 2);
  EXPECT_EQ(r->m_flags & M_PKTHDR, M_PKTHDR);
  EXPECT_EQ(m->m_flags & M_PKTHDR, 0);
  EXPECT_GE(r->m_len, 20);
  EXPECT_EQ(r->pkthdr().len, 150);
  EXPECT_EQ(Contents(r), content);
  EXPECT_EQ(probe_.copied_bytes[static_cast<size_t>(CopyKind::pullup)],
            static_cast<uint64_t>(r->m_len));
  mb_.freem(r);
}

TEST_F(MbufCopyup, WithoutAHeaderStartsInMdat) {
  Mbuf* m = Build({{Buf::plain, 0, 30}, {Buf::plain, 0, 30}});
  const Bytes content = Contents(m);
  Mbuf* r = mb_.copyup(m, 50, 4);
  ASSERT_NE(r, nullptr);
  ExpectSane(r);
  EXPECT_EQ(r->m_data, r->dat() + 4);
  EXPECT_EQ(r->m_flags & M_PKTHDR, 0);
  EXPECT_EQ(Count(r), 1);
  EXPECT_EQ(Contents(r), content);
  mb_.freem(r);
}

TEST_F(MbufCopyup, FromASharedClusterCopiesOut) {
  Mbuf* m = Build({{Buf::hdr_cluster, 2, 300}});
  const Bytes content = Contents(m);
  Mbuf* c = mb_.copym(m, 0, kMCopyAll);
  ASSERT_NE(c, nullptr);
  c = mb_.copyup(c, 100, 0);
  ASSERT_NE(c, nullptr);
  ExpectSane(c);
  EXPECT_EQ(mtod_addr(c) % 4, 0u);
  EXPECT_TRUE(m_writable(c));
  EXPECT_EQ(Contents(c), content);
  EXPECT_EQ(Contents(m), content);
  mb_.freem(c);
  mb_.freem(m);
}

TEST_F(MbufCopyup, BadArgumentsFailAndFreeTheChain) {
  Mbuf* m = Build({{Buf::hdr, 0, 100}});
  EXPECT_EQ(mb_.copyup(m, kMHLen - 9, 10), nullptr);
  EXPECT_TRUE(pool_.idle());
  m = Build({{Buf::hdr, 0, 100}});
  EXPECT_EQ(mb_.copyup(m, 10, -1), nullptr);
  EXPECT_TRUE(pool_.idle());
  m = Build({{Buf::hdr, 0, 10}, {Buf::plain, 0, 10}});
  EXPECT_EQ(mb_.copyup(m, 30, 0), nullptr) << "only 20 bytes";
  EXPECT_TRUE(pool_.idle());
}

TEST_F(MbufCopyup, AllocationFailureFreesTheChain) {
  Mbuf* m = Build({{Buf::hdr, 0, 100}, {Buf::cluster, 0, 100}});
  pool_.mbufs.set_limit(MbufsInUse());
  EXPECT_EQ(mb_.copyup(m, 20, 0), nullptr);
  EXPECT_EQ(MbufFailures(), 1u);
  EXPECT_TRUE(pool_.idle());
}

// ---------------------------------------------------------------- M_PREPEND / m_prepend

TEST_F(MbufPrepend, UsesLeadingSpaceInPlace) {
  const Bytes payload = Pattern(100, 4);
  Mbuf* m = mb_.uiotombuf(payload.data(), 100, 56);
  ASSERT_NE(m, nullptr);
  uint8_t* data = m->m_data;
  const size_t allocs = pool_.mbufs.stats().allocs;
  Mbuf* r = mb_.prepend(m, 28);
  ASSERT_EQ(r, m);
  EXPECT_EQ(r->m_data, data - 28);
  EXPECT_EQ(r->m_len, 128);
  EXPECT_EQ(r->pkthdr().len, 128);
  EXPECT_EQ(pool_.mbufs.stats().allocs, allocs);
  EXPECT_EQ(Bytes(r->m_data + 28, r->m_data + 128), payload);
  ExpectSane(r);
  mb_.freem(r);
}

TEST_F(MbufPrepend, AllocatesAHeaderMbufWhenThereIsNoRoom) {
  const Bytes payload = Pattern(100, 5);
  Mbuf* m = mb_.uiotombuf(payload.data(), 100, 0);
  ASSERT_NE(m, nullptr);
  m->m_flags |= M_BCAST;
  Mbuf* r = mb_.prepend(m, 28);
  ASSERT_NE(r, nullptr);
  ExpectSane(r);
  EXPECT_NE(r, m);
  EXPECT_EQ(r->m_next, m);
  EXPECT_EQ(r->m_flags, M_PKTHDR | M_BCAST);
  EXPECT_EQ(m->m_flags & M_PKTHDR, 0);
  EXPECT_EQ(r->m_len, 28);
  // MH_ALIGN: at the end of m_pktdat, aligned down to a long.
  EXPECT_EQ(r->m_data, r->pktdat() + ((kMHLen - 28) & ~static_cast<int>(sizeof(long) - 1)));
  EXPECT_EQ(r->pkthdr().len, 128);
  EXPECT_EQ(Bytes(m->m_data, m->m_data + 100), payload);
  // The next prepend fits in front of the first one.
  Mbuf* r2 = mb_.prepend(r, 14);
  EXPECT_EQ(r2, r);
  EXPECT_EQ(r2->pkthdr().len, 142);
  ExpectSane(r2);
  mb_.freem(r2);
}

TEST_F(MbufPrepend, NeverWritesIntoASharedCluster) {
  const Bytes payload = Pattern(1000, 6);
  Mbuf* m = mb_.uiotombuf(payload.data(), 1000, 56);
  ASSERT_NE(m, nullptr);
  Mbuf* c = mb_.copym(m, 0, kMCopyAll);
  ASSERT_NE(c, nullptr);
  uint8_t* data = c->m_data;
  Mbuf* r = mb_.prepend(c, 28);
  ASSERT_NE(r, nullptr);
  ExpectSane(r);
  EXPECT_NE(r, c);
  EXPECT_EQ(c->m_data, data);
  EXPECT_EQ(r->m_flags & M_EXT, 0);
  EXPECT_EQ(r->pkthdr().len, 1028);
  EXPECT_EQ(m->m_data, data);
  EXPECT_EQ(Contents(m), payload);
  mb_.freem(r);
  // With the copy gone the leading space is usable again.
  Mbuf* r2 = mb_.prepend(m, 28);
  EXPECT_EQ(r2, m);
  EXPECT_EQ(r2->m_data, data - 28);
  mb_.freem(r2);
}

TEST_F(MbufPrepend, NeverWritesIntoReadOnlyStorage) {
  Mbuf* m = Build({{Buf::hdr, 60, 20}});
  m->m_flags |= M_RDONLY;
  uint8_t* data = m->m_data;
  Mbuf* r = mb_.prepend(m, 14);
  ASSERT_NE(r, nullptr);
  EXPECT_NE(r, m);
  EXPECT_EQ(m->m_data, data);
  EXPECT_EQ(r->pkthdr().len, 34);
  ExpectSane(r);
  mb_.freem(r);
}

TEST_F(MbufPrepend, WithoutAHeaderUsesAPlainMbuf) {
  Mbuf* m = Build({{Buf::plain, 0, 50}});
  Mbuf* r = mb_.prepend(m, 30);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->m_next, m);
  EXPECT_EQ(r->m_flags, 0);
  EXPECT_EQ(r->m_data, r->dat() + ((kMLen - 30) & ~static_cast<int>(sizeof(long) - 1)));
  EXPECT_EQ(m_length(r), 80);
  mb_.freem(r);
  // m_prepend with MGET: up to MLEN bytes, more than a header mbuf holds.
  m = Build({{Buf::plain, 0, 50}});
  r = mb_.prepend(m, kMHLen + 8);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->m_len, kMHLen + 8);
  EXPECT_EQ(m_length(r), kMHLen + 58);
  ExpectSane(r);
  mb_.freem(r);
}

TEST_F(MbufPrepend, TooLongFailsAndFreesTheChain) {
  Mbuf* m = Build({{Buf::hdr, 0, 50}});
  EXPECT_EQ(mb_.prepend(m, kMHLen + 1), nullptr);
  EXPECT_TRUE(pool_.idle());
  m = Build({{Buf::plain, 0, 50}});
  EXPECT_EQ(mb_.prepend(m, kMLen + 1), nullptr);
  EXPECT_TRUE(pool_.idle());
}

TEST_F(MbufPrepend, AllocationFailureFreesTheChain) {
  Mbuf* m = Build({{Buf::hdr, 0, 50}, {Buf::cluster, 0, 500}});
  pool_.mbufs.set_limit(MbufsInUse());
  EXPECT_EQ(mb_.prepend(m, 14), nullptr);
  EXPECT_EQ(MbufFailures(), 1u);
  EXPECT_TRUE(pool_.idle());
}

TEST_F(MbufPrepend, PrependNewMovesTheHeaderButNotItsLength) {
  Mbuf* m = Build({{Buf::hdr, 100, 50}});
  Mbuf* r = mb_.prepend_new(m, 20);
  ASSERT_NE(r, nullptr);
  EXPECT_NE(r, m) << "m_prepend always allocates";
  EXPECT_EQ(r->m_next, m);
  EXPECT_EQ(r->m_len, 20);
  EXPECT_EQ(r->m_data, r->pktdat() + ((kMHLen - 20) & ~static_cast<int>(sizeof(long) - 1)));
  EXPECT_EQ(r->pkthdr().len, 50) << "M_PREPEND, not m_prepend, adds the length";
  EXPECT_EQ(m->m_flags & M_PKTHDR, 0);
  mb_.freem(r);
}

TEST_F(MbufPrepend, PrependNewOfAFullBufferStartsAtItsStart) {
  Mbuf* m = Build({{Buf::hdr, 0, 10}});
  Mbuf* r = mb_.prepend_new(m, kMHLen);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->m_data, r->pktdat());
  EXPECT_EQ(r->m_len, kMHLen);
  mb_.freem(r);
  m = Build({{Buf::plain, 0, 10}});
  r = mb_.prepend_new(m, kMLen);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->m_data, r->dat());
  EXPECT_EQ(r->m_len, kMLen);
  mb_.freem(r);
}

TEST_F(MbufPrepend, PrependNewLongerThanABufferFailsAndFreesTheChain) {
  Mbuf* m = Build({{Buf::hdr, 0, 10}});
  EXPECT_EQ(mb_.prepend_new(m, kMHLen + 1), nullptr);
  EXPECT_TRUE(pool_.idle());
  m = Build({{Buf::plain, 0, 10}});
  EXPECT_EQ(mb_.prepend_new(m, kMLen + 1), nullptr);
  EXPECT_TRUE(pool_.idle());
}

TEST_F(MbufPrepend, PrependNewAllocationFailureFreesTheChain) {
  Mbuf* m = Build({{Buf::hdr_cluster, 0, 10}});
  pool_.mbufs.set_limit(MbufsInUse());
  EXPECT_EQ(mb_.prepend_new(m, 10), nullptr);
  EXPECT_TRUE(pool_.idle());
}

// ---------------------------------------------------------------- m_adj

TEST_F(MbufAdj, HeadTrimWithinTheFirstMbuf) {
  Mbuf* m = Build({{Buf::hdr, 0, 100}, {Buf::plain, 0, 50}});
  const Bytes content = Contents(m);
  uint8_t* data = m->m_data;
  mb_.adj(m, 14);
  EXPECT_EQ(m->m_data, data + 14);
  EXPECT_EQ(m->m_len, 86);
  EXPECT_EQ(m->pkthdr().len, 136);
  EXPECT_EQ(Contents(m), Slice(content, 14, 136));
  ExpectSane(m);
  mb_.freem(m);
}

TEST_F(MbufAdj, HeadTrimAcrossMbufsLeavesEmptyOnes) {
  Mbuf* m = Build({{Buf::hdr, 0, 100}, {Buf::cluster, 0, 200}, {Buf::plain, 0, 150}});
  const Bytes content = Contents(m);
  mb_.adj(m, 250);
  EXPECT_EQ(Count(m), 3);
  EXPECT_EQ(m->m_len, 0);
  EXPECT_EQ(m->m_next->m_len, 50);
  EXPECT_EQ(m->m_next->m_data, m->m_next->ext().buf + 150);
  EXPECT_EQ(m->pkthdr().len, 200);
  EXPECT_EQ(Contents(m), Slice(content, 250, 200));
  ExpectSane(m);
  mb_.freem(m);
}

TEST_F(MbufAdj, HeadTrimPastTheEndEmptiesThePacket) {
  Mbuf* m = Build({{Buf::hdr, 0, 100}, {Buf::plain, 0, 50}});
  mb_.adj(m, 1000);
  EXPECT_EQ(m_length(m), 0);
  EXPECT_EQ(m->pkthdr().len, 0);
  EXPECT_EQ(Count(m), 2);
  mb_.freem(m);
}

TEST_F(MbufAdj, TailTrimFreesMbufsPastTheEnd) {
  Mbuf* m = Build({{Buf::hdr, 0, 100}, {Buf::plain, 0, 200}, {Buf::cluster, 0, 300}});
  const Bytes content = Contents(m);
  mb_.adj(m, -350);
  EXPECT_EQ(m->pkthdr().len, 250);
  EXPECT_EQ(Contents(m), Slice(content, 0, 250));
  EXPECT_EQ(Count(m), 2);
  EXPECT_EQ(MbufsInUse(), 2u);
  EXPECT_EQ(ClustersInUse(), 0u);
  ExpectSane(m);
  mb_.freem(m);
}

TEST_F(MbufAdj, TailTrimWithinTheLastMbuf) {
  Mbuf* m = Build({{Buf::hdr, 0, 100}, {Buf::cluster, 10, 300}});
  const Bytes content = Contents(m);
  mb_.adj(m, -100);
  EXPECT_EQ(Count(m), 2);
  EXPECT_EQ(m->m_next->m_len, 200);
  EXPECT_EQ(m->m_next->m_data, m->m_next->ext().buf + 10);
  EXPECT_EQ(m->pkthdr().len, 300);
  EXPECT_EQ(Contents(m), Slice(content, 0, 300));
  mb_.freem(m);
}

TEST_F(MbufAdj, TailTrimPastTheStartEmptiesThePacket) {
  Mbuf* m = Build({{Buf::hdr, 0, 100}, {Buf::cluster, 0, 300}});
  mb_.adj(m, -1000);
  EXPECT_EQ(m->m_len, 0);
  EXPECT_EQ(m->pkthdr().len, 0);
  EXPECT_EQ(Count(m), 1);
  EXPECT_EQ(ClustersInUse(), 0u);
  mb_.freem(m);
}

TEST_F(MbufAdj, ChangesOnlyHeadersNotSharedStorage) {
  Mbuf* m = Build({{Buf::hdr_cluster, 0, 500}, {Buf::cluster, 0, 500}});
  const Bytes content = Contents(m);
  Mbuf* c = mb_.copym(m, 0, kMCopyAll);
  ASSERT_NE(c, nullptr);
  mb_.adj(c, 100);
  mb_.adj(c, -600);
  EXPECT_EQ(Contents(c), Slice(content, 100, 300));
  EXPECT_EQ(c->pkthdr().len, 300);
  EXPECT_EQ(Contents(m), content);
  EXPECT_EQ(m->pkthdr().len, 1000);
  EXPECT_EQ(*m->m_next->ext().refcnt, 1u) << "the trimmed copy let go of the second cluster";
  ExpectSane(c);
  mb_.freem(c);
  mb_.freem(m);
}

TEST_F(MbufAdj, WorksWithoutAPacketHeader) {
  Mbuf* m = Build({{Buf::plain, 0, 100}, {Buf::plain, 0, 100}});
  const Bytes content = Contents(m);
  mb_.adj(m, 30);
  mb_.adj(m, -120);
  EXPECT_EQ(Contents(m), Slice(content, 30, 50));
  EXPECT_EQ(Count(m), 1);
  mb_.adj(nullptr, 5);
  mb_.adj(m, 0);
  EXPECT_EQ(Contents(m), Slice(content, 30, 50));
  mb_.freem(m);
}

// ---------------------------------------------------------------- m_copydata

TEST_F(MbufCopydata, CopiesAnyRangeAcrossMbufs) {
  Mbuf* m =
      Build({{Buf::hdr, 5, 50}, {Buf::plain, 0, 0}, {Buf::cluster, 100, 700}, {Buf::plain, 9, 60}});
  const Bytes content = Contents(m);
  const int total = static_cast<int>(content.size());
  for (int off : {0, 1, 49, 50, 51, 749, 750, 800, total}) {
    for (int len : {0, 1, 10, 100, 1000}) {
      if (off + len > total) continue;
      Bytes out(static_cast<size_t>(len) + 1, 0xEE);
      mb_.copydata(m, off, len, out.data());
      EXPECT_EQ(Bytes(out.begin(), out.begin() + len), Slice(content, off, len));
      EXPECT_EQ(out[static_cast<size_t>(len)], 0xEE) << "wrote past the end";
    }
  }
  mb_.freem(m);
}

TEST_F(MbufCopydata, ReportsTheCopyKind) {
  Mbuf* m = Build({{Buf::hdr, 0, 50}, {Buf::plain, 0, 50}});
  Bytes out(100);
  mb_.copydata(m, 10, 80, out.data(), CopyKind::uiomove);
  EXPECT_EQ(probe_.copied_bytes[static_cast<size_t>(CopyKind::uiomove)], 80u);
  EXPECT_EQ(probe_.copies[static_cast<size_t>(CopyKind::uiomove)], 2u);
  mb_.freem(m);
}

TEST_F(MbufCopydata, RejectsRangesOutsideTheChain) {
  Mbuf* m = Build({{Buf::hdr, 0, 50}, {Buf::plain, 0, 50}});
  Bytes out(200);
  EXPECT_THROW(mb_.copydata(m, 0, 101, out.data()), std::invalid_argument);
  EXPECT_THROW(mb_.copydata(m, 101, 0, out.data()), std::invalid_argument);
  EXPECT_THROW(mb_.copydata(m, -1, 1, out.data()), std::invalid_argument);
  EXPECT_THROW(mb_.copydata(m, 0, -1, out.data()), std::invalid_argument);
  EXPECT_NO_THROW(mb_.copydata(m, 100, 0, out.data()));
  mb_.freem(m);
}

// ---------------------------------------------------------------- m_copyback

TEST_F(MbufCopyback, OverwritesInPlaceAcrossMbufs) {
  Mbuf* m = Build({{Buf::hdr, 10, 50}, {Buf::cluster, 100, 300}, {Buf::plain, 0, 40}});
  Bytes expect = Contents(m);
  const Bytes src = Pattern(100, 7);
  const size_t allocs = pool_.mbufs.stats().allocs;
  ASSERT_TRUE(mb_.copyback(m, 30, 100, src.data()));
  std::copy(src.begin(), src.end(), expect.begin() + 30);
  EXPECT_EQ(Contents(m), expect);
  EXPECT_EQ(m->pkthdr().len, 390);
  EXPECT_EQ(Count(m), 3);
  EXPECT_EQ(pool_.mbufs.stats().allocs, allocs);
  mb_.freem(m);
}

TEST_F(MbufCopyback, GrowsIntoTrailingSpace) {
  Mbuf* m = Build({{Buf::hdr, 0, 10}});
  Bytes expect = Contents(m);
  const Bytes src = Pattern(50, 8);
  ASSERT_TRUE(mb_.copyback(m, 10, 50, src.data()));
  expect.insert(expect.end(), src.begin(), src.end());
  EXPECT_EQ(Count(m), 1);
  EXPECT_EQ(m->m_len, 60);
  EXPECT_EQ(m->pkthdr().len, 60);
  EXPECT_EQ(Contents(m), expect);
  mb_.freem(m);
}

TEST_F(MbufCopyback, AppendsMbufsPastAFullBuffer) {
  Mbuf* m = Build({{Buf::hdr_cluster, 0, 2040}});
  Bytes expect = Contents(m);
  const Bytes src = Pattern(300, 9);
  ASSERT_TRUE(mb_.copyback(m, 2000, 300, src.data()));
  expect.resize(2000);
  expect.insert(expect.end(), src.begin(), src.end());
  EXPECT_EQ(Contents(m), expect);
  EXPECT_EQ(m->pkthdr().len, 2300);
  EXPECT_EQ(m->m_len, kMClBytes) << "the cluster's trailing space is used first";
  ExpectSane(m);
  mb_.freem(m);
}

TEST_F(MbufCopyback, ZeroFillsAGapPastTheEnd) {
  DirtyFreeMbufs();
  Mbuf* m = Build({{Buf::hdr, 0, 10}});
  Bytes expect = Contents(m);
  const Bytes src = Pattern(20, 10);
  ASSERT_TRUE(mb_.copyback(m, 600, 20, src.data()));
  expect.resize(600, 0);
  expect.insert(expect.end(), src.begin(), src.end());
  EXPECT_EQ(Contents(m), expect);
  EXPECT_EQ(m->pkthdr().len, 620);
  ExpectSane(m);
  // A zero-length write past the end still extends the chain.
  ASSERT_TRUE(mb_.copyback(m, 700, 0, src.data()));
  expect.resize(700, 0);
  EXPECT_EQ(Contents(m), expect);
  EXPECT_EQ(m->pkthdr().len, 700);
  mb_.freem(m);
}

TEST_F(MbufCopyback, ExtendingASharedChainLeavesTheOtherCopyAlone) {
  const Bytes payload = Pattern(300, 11);
  Mbuf* m = mb_.uiotombuf(payload.data(), 300, 56);
  ASSERT_NE(m, nullptr);
  Mbuf* c = mb_.copym(m, 0, kMCopyAll);
  ASSERT_NE(c, nullptr);
  const Bytes src = Pattern(50, 12);
  ASSERT_TRUE(mb_.copyback(c, 300, 50, src.data()));
  EXPECT_EQ(Count(c), 2) << "no trailing space in a shared cluster";
  EXPECT_EQ(c->pkthdr().len, 350);
  EXPECT_EQ(m->m_len, 300);
  EXPECT_EQ(Contents(m), payload);
  Bytes expect = payload;
  expect.insert(expect.end(), src.begin(), src.end());
  EXPECT_EQ(Contents(c), expect);
  mb_.freem(c);
  mb_.freem(m);
}

TEST_F(MbufCopyback, WritingReadOnlyStorageThrows) {
  Mbuf* m = Build({{Buf::hdr_cluster, 0, 300}});
  Mbuf* c = mb_.copym(m, 0, kMCopyAll);
  ASSERT_NE(c, nullptr);
  const Bytes content = Contents(m);
  const Bytes src = Pattern(5, 13);
  EXPECT_THROW(mb_.copyback(c, 10, 5, src.data()), std::logic_error);
  EXPECT_EQ(Contents(m), content);
  mb_.freem(c);
  Mbuf* r = Build({{Buf::hdr, 0, 30}});
  r->m_flags |= M_RDONLY;
  EXPECT_THROW(mb_.copyback(r, 0, 5, src.data()), std::logic_error);
  mb_.freem(r);
  mb_.freem(m);
}

TEST_F(MbufCopyback, RejectsNegativeArguments) {
  Mbuf* m = Build({{Buf::hdr, 0, 30}});
  const Bytes src(10);
  EXPECT_THROW(mb_.copyback(m, -1, 5, src.data()), std::invalid_argument);
  EXPECT_THROW(mb_.copyback(m, 0, -5, src.data()), std::invalid_argument);
  mb_.freem(m);
}

TEST_F(MbufCopyback, WithoutAPacketHeaderOnlyTheChainGrows) {
  Mbuf* m = Build({{Buf::plain, 0, 10}});
  const Bytes src = Pattern(500, 14);
  ASSERT_TRUE(mb_.copyback(m, 10, 500, src.data()));
  EXPECT_EQ(m->m_flags & M_PKTHDR, 0);
  EXPECT_EQ(m_length(m), 510);
  const Bytes content = Contents(m);
  EXPECT_EQ(Bytes(content.begin() + 10, content.end()), src);
  mb_.freem(m);
}

// A failed extension keeps what was appended, and pkthdr.len must still
// describe the chain, as m_copyback's exit path does in the kernel.
TEST_F(MbufCopyback, AllocationFailureWhileWritingKeepsTheLengthTrue) {
  Mbuf* m = Build({{Buf::hdr, 0, 10}});
  Bytes expect = Contents(m);
  const Bytes src = Pattern(600, 15);
  expect.insert(expect.end(), src.begin(), src.end());
  pool_.mbufs.set_limit(MbufsInUse() + 1);
  EXPECT_FALSE(mb_.copyback(m, 10, 600, src.data()));
  EXPECT_EQ(MbufFailures(), 1u);
  const int len = m_length(m);
  EXPECT_GT(len, 10);
  EXPECT_EQ(m->pkthdr().len, len);
  EXPECT_EQ(Contents(m), Slice(expect, 0, len));
  ExpectSane(m);
  mb_.freem(m);
}

TEST_F(MbufCopyback, AllocationFailureWhileZeroFillingKeepsTheLengthTrue) {
  Mbuf* m = Build({{Buf::hdr, 0, 10}});
  Bytes expect = Contents(m);
  const Bytes src = Pattern(10, 16);
  pool_.mbufs.set_limit(MbufsInUse() + 2);
  EXPECT_FALSE(mb_.copyback(m, 1000, 10, src.data()));
  const int len = m_length(m);
  EXPECT_EQ(len, 10 + 2 * kMLen);
  EXPECT_EQ(m->pkthdr().len, len);
  expect.resize(static_cast<size_t>(len), 0);
  EXPECT_EQ(Contents(m), expect);
  ExpectSane(m);
  mb_.freem(m);
}

// ---------------------------------------------------------------- m_cat

TEST_F(MbufCat, CopiesSmallMbufsIntoTrailingSpace) {
  Mbuf* a = Build({{Buf::hdr, 0, 10}});
  Mbuf* b = Build({{Buf::hdr, 0, 20}, {Buf::plain, 0, 30}});
  Bytes expect = Contents(a);
  const Bytes tail = Contents(b);
  expect.insert(expect.end(), tail.begin(), tail.end());
  mb_.cat(a, b);
  EXPECT_EQ(Count(a), 1);
  EXPECT_EQ(a->m_len, 60);
  EXPECT_EQ(MbufsInUse(), 1u);
  EXPECT_EQ(Contents(a), expect);
  EXPECT_EQ(a->pkthdr().len, 10) << "m_cat leaves the header to the caller";
  a->pkthdr().len = m_length(a);
  ExpectSane(a);
  mb_.freem(a);
}

TEST_F(MbufCat, LinksAfterACluster) {
  Mbuf* a = Build({{Buf::hdr_cluster, 0, 10}});
  Mbuf* b = Build({{Buf::plain, 0, 5}});
  mb_.cat(a, b);
  EXPECT_EQ(a->m_next, b);
  EXPECT_EQ(a->m_len, 10);
  mb_.freem(a);
}

TEST_F(MbufCat, LinksWhenThereIsNoRoom) {
  Mbuf* a = Build({{Buf::hdr, 0, 180}});
  Mbuf* b = Build({{Buf::plain, 0, 20}});
  mb_.cat(a, b);
  EXPECT_EQ(a->m_next, b);
  EXPECT_EQ(a->m_len, 180);
  mb_.freem(a);
}

TEST_F(MbufCat, LinksAfterReadOnlyStorage) {
  Mbuf* a = Build({{Buf::hdr, 0, 10}});
  a->m_flags |= M_RDONLY;
  Mbuf* b = Build({{Buf::plain, 0, 5}});
  mb_.cat(a, b);
  EXPECT_EQ(a->m_next, b);
  EXPECT_EQ(a->m_len, 10);
  mb_.freem(a);
}

TEST_F(MbufCat, CopiesWhileThereIsRoomThenLinks) {
  Mbuf* a = Build({{Buf::hdr, 0, 5}, {Buf::plain, 0, 10}});
  Mbuf* b = Build(
      {{Buf::plain, 0, 20}, {Buf::cluster, 0, 30}, {Buf::cluster, 0, 500}, {Buf::plain, 0, 5}});
  Bytes expect = Contents(a);
  const Bytes tail = Contents(b);
  expect.insert(expect.end(), tail.begin(), tail.end());
  Mbuf* big = b->m_next->m_next;
  mb_.cat(a, b);
  EXPECT_EQ(Contents(a), expect);
  ASSERT_EQ(Count(a), 4);
  EXPECT_EQ(a->m_next->m_len, 60);
  EXPECT_EQ(a->m_next->m_next, big);
  EXPECT_EQ(ClustersInUse(), 1u) << "the small cluster was copied and freed";
  mb_.freem(a);
}

// ---------------------------------------------------------------- m_uiotombuf

TEST_F(MbufUiotombuf, SmallPayloadGoesInAHeaderMbufAfterMaxHdr) {
  const Bytes payload = Pattern(100, 17);
  Mbuf* m = mb_.uiotombuf(payload.data(), 100, 56);
  ASSERT_NE(m, nullptr);
  ExpectSane(m);
  EXPECT_EQ(Count(m), 1);
  EXPECT_EQ(m->m_flags, M_PKTHDR);
  EXPECT_EQ(m->m_data, m->pktdat() + 56);
  EXPECT_EQ(m->pkthdr().len, 100);
  EXPECT_EQ(Contents(m), payload);
  EXPECT_EQ(probe_.copied_bytes[static_cast<size_t>(CopyKind::uiomove)], 100u);
  mb_.freem(m);
}

TEST_F(MbufUiotombuf, LargePayloadGoesInAClusterAfterMaxHdr) {
  const Bytes payload = Pattern(1400, 18);
  Mbuf* m = mb_.uiotombuf(payload.data(), 1400, 56);
  ASSERT_NE(m, nullptr);
  ExpectSane(m);
  EXPECT_EQ(Count(m), 1);
  EXPECT_EQ(m->m_flags, M_PKTHDR | M_EXT);
  EXPECT_EQ(m->m_data, m->ext().buf + 56);
  EXPECT_EQ(Contents(m), payload);
  mb_.freem(m);
}

TEST_F(MbufUiotombuf, ClusterFromMinclsize) {
  for (int len : {kMHLen - 56, kMinClSize - 56}) {
    const Bytes payload = Pattern(len, 19);
    Mbuf* m = mb_.uiotombuf(payload.data(), len, 56);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ((m->m_flags & M_EXT) != 0, len + 56 >= kMinClSize) << len;
    EXPECT_EQ(Count(m), 1);
    EXPECT_EQ(Contents(m), payload);
    mb_.freem(m);
  }
}

TEST_F(MbufUiotombuf, LongPayloadMakesAChain) {
  const Bytes payload = Pattern(5000, 20);
  Mbuf* m = mb_.uiotombuf(payload.data(), 5000, 56);
  ASSERT_NE(m, nullptr);
  ExpectSane(m);
  EXPECT_EQ(Contents(m), payload);
  EXPECT_EQ(m->pkthdr().len, 5000);
  ASSERT_EQ(Count(m), 3);
  EXPECT_EQ(m->m_len, kMClBytes - 56);
  EXPECT_EQ(m->m_next->m_len, kMClBytes);
  for (Mbuf* x = m; x != nullptr; x = x->m_next) {
    EXPECT_TRUE((x->m_flags & M_EXT) != 0);
    EXPECT_EQ(Addr(x) % kMSize, 0u);
    EXPECT_EQ(Addr(x->ext().buf) % kMClBytes, 0u);
    if (x != m) {
      EXPECT_EQ(x->m_data, x->ext().buf);
    }
  }
  mb_.freem(m);
  // A short tail goes in a plain mbuf.
  const Bytes p2 = Pattern(kMClBytes - 56 + 10, 21);
  m = mb_.uiotombuf(p2.data(), static_cast<int>(p2.size()), 56);
  ASSERT_NE(m, nullptr);
  ASSERT_EQ(Count(m), 2);
  EXPECT_EQ(m->m_next->m_flags & M_EXT, 0);
  EXPECT_EQ(m->m_next->m_len, 10);
  EXPECT_EQ(Contents(m), p2);
  mb_.freem(m);
}

TEST_F(MbufUiotombuf, EmptyPayloadGivesAnEmptyPacket) {
  Mbuf* m = mb_.uiotombuf(nullptr, 0, 56);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(Count(m), 1);
  EXPECT_EQ(m->m_len, 0);
  EXPECT_EQ(m->pkthdr().len, 0);
  EXPECT_EQ(m->m_data, m->pktdat() + 56);
  mb_.freem(m);
}

// sosend_dgram reserves max_hdr so the UDP/IP and Ethernet headers are
// prepended in place: the IP header lands 4-byte aligned, the Ethernet
// header at 2 mod 4, for a header mbuf and for a cluster alike.
TEST_F(MbufUiotombuf, HeadersPrependInPlaceWithTheIpHeaderAligned) {
  for (int len : {0, 1, 18, 100, 136, 137, 1000, 1472, kMClBytes - 56, kMClBytes - 55, 5000}) {
    const Bytes payload = Pattern(len, 22);
    Mbuf* m = mb_.uiotombuf(payload.data(), len, 56);
    ASSERT_NE(m, nullptr) << len;
    EXPECT_EQ((m->m_flags & M_EXT) != 0, len + 56 >= kMinClSize) << len;
    EXPECT_EQ(Addr(m) % kMSize, 0u);
    const size_t allocs = pool_.mbufs.stats().allocs;
    Mbuf* r = mb_.prepend(m, 28);
    ASSERT_EQ(r, m) << len;
    r = mb_.prepend(r, 14);
    ASSERT_EQ(r, m) << len;
    EXPECT_EQ(pool_.mbufs.stats().allocs, allocs) << "headers went in place, len " << len;
    EXPECT_EQ(mtod_addr(r) % 4, 2u) << "Ethernet header, len " << len;
    EXPECT_EQ((mtod_addr(r) + 14) % 4, 0u) << "IP header, len " << len;
    EXPECT_EQ(r->pkthdr().len, len + 42);
    EXPECT_EQ(m_leadingspace(r), 56 - 42);
    ExpectSane(r);
    const Bytes content = Contents(r);
    EXPECT_EQ(Bytes(content.begin() + 42, content.end()), payload);
    mb_.freem(r);
  }
}

TEST_F(MbufUiotombuf, RejectsBadAlignmentAndLength) {
  const Bytes payload(10);
  EXPECT_EQ(mb_.uiotombuf(payload.data(), 10, kMHLen), nullptr);
  EXPECT_EQ(mb_.uiotombuf(payload.data(), 10, -1), nullptr);
  EXPECT_EQ(mb_.uiotombuf(payload.data(), -1, 0), nullptr);
  EXPECT_EQ(pool_.mbufs.stats().allocs, 0u);
  Mbuf* m = mb_.uiotombuf(payload.data(), 10, kMHLen - 1);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(Contents(m), payload);
  mb_.freem(m);
}

TEST_F(MbufUiotombuf, AllocationFailureFreesWhatWasBuilt) {
  const Bytes payload = Pattern(5000, 23);
  pool_.clusters.set_limit(2);
  EXPECT_EQ(mb_.uiotombuf(payload.data(), 5000, 56), nullptr);
  EXPECT_EQ(pool_.clusters.stats().failures, 1u);
  EXPECT_TRUE(pool_.idle());
  pool_.clusters.set_limit(kClusters);
  pool_.mbufs.set_limit(1);
  EXPECT_EQ(mb_.uiotombuf(payload.data(), 5000, 56), nullptr);
  EXPECT_TRUE(pool_.idle());
  Mbuf* m = mb_.uiotombuf(payload.data(), 10, 56);
  ASSERT_NE(m, nullptr) << "one mbuf is enough";
  mb_.freem(m);
  pool_.mbufs.set_limit(0);
  EXPECT_EQ(mb_.uiotombuf(payload.data(), 10, 56), nullptr);
  EXPECT_TRUE(pool_.idle());
}

}  // namespace
}  // namespace simloop::net::bsd
