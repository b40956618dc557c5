// BSD-style mbufs: the memory layout, the pool of zones they come from, the
// predicates that need no allocator and the checksum over a chain.
//
// An mbuf is MSIZE (256) bytes: a 32-byte header, then either a packet header
// and MHLEN bytes of data, or MLEN bytes of data. External storage (a 2048-byte
// cluster) is described by `ext`, which always sits after the packet header
// area, as in FreeBSD 6, so that moving a packet header never moves `ext`.
// Mbufs come from a zone whose items are MSIZE-aligned and clusters are
// MCLBYTES-aligned, so `mtod(m) & 3` says the same thing it says in a kernel.
#pragma once

#include <cstddef>
#include <cstdint>

#include "sim/stack/net/zone.h"

namespace simloop::net::bsd {

inline constexpr int kMSize = 256;      // MSIZE
inline constexpr int kMClBytes = 2048;  // MCLBYTES

struct Mbuf;
struct Ifnet;

// m_flags
inline constexpr uint16_t M_EXT = 0x0001;     // has external storage (a cluster)
inline constexpr uint16_t M_PKTHDR = 0x0002;  // first mbuf of a packet: pkthdr valid
inline constexpr uint16_t M_EOR = 0x0004;     // end of record
inline constexpr uint16_t M_RDONLY = 0x0008;  // storage must not be written
inline constexpr uint16_t M_BCAST = 0x0200;   // link-level broadcast
inline constexpr uint16_t M_MCAST = 0x0400;   // link-level multicast
// Flags that describe the packet rather than the storage; they travel with
// the packet header when it is moved or duplicated.
inline constexpr uint16_t M_COPYFLAGS = M_PKTHDR | M_EOR | M_BCAST | M_MCAST;

// m_type
inline constexpr uint16_t MT_DATA = 1;
inline constexpr uint16_t MT_HEADER = 2;
inline constexpr uint16_t MT_SONAME = 3;

struct PktHdr {
  Ifnet* rcvif;  // interface the packet arrived on
  int32_t len;   // total packet length: the sum of m_len over the chain
  uint32_t csum_flags;
  uint32_t csum_data;
  uint32_t spare[3];
};
static_assert(sizeof(PktHdr) == 32);

struct MExt {
  uint8_t* buf;      // start of the cluster
  uint32_t* refcnt;  // shared reference count, owned by the cluster zone
  uint32_t size;     // MCLBYTES
  uint32_t type;
};

inline constexpr int kMHdrSize = 32;
inline constexpr int kMLen = kMSize - kMHdrSize;                         // MLEN = 224
inline constexpr int kMHLen = kMLen - static_cast<int>(sizeof(PktHdr));  // MHLEN = 192
inline constexpr int kMinClSize = kMHLen + 1;                            // MINCLSIZE
inline constexpr int kMCopyAll = 1000000000;                             // M_COPYALL

struct Mbuf {
  Mbuf* m_next;     // next mbuf of this packet
  Mbuf* m_nextpkt;  // next packet in a queue
  uint8_t* m_data;  // first byte of data
  int32_t m_len;    // bytes of data in this mbuf
  uint16_t m_flags;
  uint16_t m_type;

  union Body {
    struct Hdr {
      PktHdr pkthdr;
      union Tail {
        MExt ext;
        uint8_t pktdat[kMHLen];
      } tail;
    } mh;
    uint8_t dat[kMLen];
  } body;

  PktHdr& pkthdr() { return body.mh.pkthdr; }
  const PktHdr& pkthdr() const { return body.mh.pkthdr; }
  MExt& ext() { return body.mh.tail.ext; }
  const MExt& ext() const { return body.mh.tail.ext; }
  uint8_t* pktdat() { return body.mh.tail.pktdat; }
  uint8_t* dat() { return body.dat; }
  const uint8_t* dat() const { return body.dat; }
};
static_assert(sizeof(Mbuf) == kMSize, "an mbuf is MSIZE bytes");
static_assert(offsetof(Mbuf, body) == kMHdrSize);

template <class T = uint8_t>
inline T* mtod(const Mbuf* m) {
  return reinterpret_cast<T*>(m->m_data);
}

inline uintptr_t mtod_addr(const Mbuf* m) {
  return reinterpret_cast<uintptr_t>(m->m_data);
}

// M_WRITABLE: not marked read-only and, with a cluster, its only reference.
inline bool m_writable(const Mbuf* m) {
  if ((m->m_flags & M_RDONLY) != 0) return false;
  return (m->m_flags & M_EXT) == 0 || *m->ext().refcnt == 1;
}

// Start and size of the storage the data of `m` lives in.
inline uint8_t* m_bufstart(Mbuf* m) {
  if ((m->m_flags & M_EXT) != 0) return m->ext().buf;
  return (m->m_flags & M_PKTHDR) != 0 ? m->pktdat() : m->dat();
}
inline int m_bufsize(const Mbuf* m) {
  if ((m->m_flags & M_EXT) != 0) return static_cast<int>(m->ext().size);
  return (m->m_flags & M_PKTHDR) != 0 ? kMHLen : kMLen;
}

// M_LEADINGSPACE / M_TRAILINGSPACE: zero for storage that must not be written.
inline int m_leadingspace(Mbuf* m) {
  if (!m_writable(m)) return 0;
  return static_cast<int>(m->m_data - m_bufstart(m));
}
inline int m_trailingspace(Mbuf* m) {
  if (!m_writable(m)) return 0;
  return static_cast<int>(m_bufstart(m) + m_bufsize(m) - (m->m_data + m->m_len));
}

// M_ALIGN / MH_ALIGN (and the cluster case): place an object of `len` bytes
// at the end of a fresh buffer, aligned down to sizeof(long).
inline void m_align(Mbuf* m, int len) {
  m->m_data = m_bufstart(m) + ((m_bufsize(m) - len) & ~static_cast<int>(sizeof(long) - 1));
}

// m_length: the sum of m_len over the chain.
inline int m_length(const Mbuf* m) {
  int len = 0;
  for (; m != nullptr; m = m->m_next) len += m->m_len;
  return len;
}

// The two zones of the mbuf allocator, plus the clusters' reference counts.
struct MbufPool {
  static constexpr size_t kDefaultMbufs = 65536;
  static constexpr size_t kDefaultClusters = 32768;

  explicit MbufPool(size_t mbuf_capacity = kDefaultMbufs,
                    size_t cluster_capacity = kDefaultClusters);

  uint32_t* refcnt_of(const void* cluster) { return &refcnt[clusters.index_of(cluster)]; }
  bool idle() const { return mbufs.stats().in_use == 0 && clusters.stats().in_use == 0; }

  Zone mbufs;
  Zone clusters;
  support::ZeroPages<uint32_t> refcnt;
};

// in_cksum: the sum (net/inet.h, not yet folded) of `len` bytes of a chain
// from offset `off`, correct across mbufs of odd length. Throws
// std::invalid_argument if the chain is too short.
uint64_t cksum_chain(const Mbuf* m, int off, int len, uint64_t sum = 0);

}  // namespace simloop::net::bsd
