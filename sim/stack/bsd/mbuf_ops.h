// The mbuf operations (get, gethdr, prepend, pullup, copym, dup, copydata,
// adj, cat, freem), over a pool and a probe.
//
// Semantics follow FreeBSD 6/7: allocations never sleep (nullptr on
// failure); functions that take a chain and fail free it, as the kernel's do;
// clusters are shared by m_copym and copied by m_dup. Probe reports name every
// allocation, free and byte copy, so the timing models can charge for them.
#pragma once

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "sim/stack/bsd/mbuf.h"
#include "sim/stack/net/probe.h"
#include "sim/stack/net/zone.h"

namespace simloop::net::bsd {

template <class P>
class Mbufs {
 public:
  static constexpr int kMaxProtoHdr = 40;  // max_protohdr: what m_pullup grabs at least

  Mbufs(MbufPool& pool, P& probe) : pool_(pool), probe_(probe) {}

  MbufPool& pool() { return pool_; }
  P& probe() { return probe_; }

  // m_get: a plain mbuf, data at the start of m_dat.
  Mbuf* get(uint16_t type = MT_DATA) {
    auto* m = static_cast<Mbuf*>(pool_.mbufs.alloc());
    if (m == nullptr) return nullptr;
    SIMLOOP_PROBE(alloc(Obj::mbuf, m));
    m->m_next = nullptr;
    m->m_nextpkt = nullptr;
    m->m_data = m->dat();
    m->m_len = 0;
    m->m_flags = 0;
    m->m_type = type;
    return m;
  }

  // m_gethdr: a packet header mbuf, data at the start of m_pktdat.
  Mbuf* gethdr(uint16_t type = MT_DATA) {
    Mbuf* m = get(type);
    if (m == nullptr) return nullptr;
    m->m_flags = M_PKTHDR;
    m->m_data = m->pktdat();
    m->pkthdr() = PktHdr{};
    return m;
  }

  // m_getcl: an mbuf with a fresh cluster; `flags` may hold M_PKTHDR.
  Mbuf* getcl(uint16_t type = MT_DATA, uint16_t flags = 0) {
    Mbuf* m = (flags & M_PKTHDR) != 0 ? gethdr(type) : get(type);
    if (m == nullptr) return nullptr;
    auto* c = static_cast<uint8_t*>(pool_.clusters.alloc());
    if (c == nullptr) {
      free(m);
      return nullptr;
    }
    SIMLOOP_PROBE(alloc(Obj::cluster, c));
    MExt& e = m->ext();
    e.buf = c;
    e.refcnt = pool_.refcnt_of(c);
    *e.refcnt = 1;
    e.size = kMClBytes;
    e.type = 0;
    m->m_data = c;
    m->m_flags |= M_EXT | (flags & ~M_PKTHDR);
    return m;
  }

  // m_free: frees one mbuf (and its cluster with the last reference);
  // returns the next mbuf of the chain.
  Mbuf* free(Mbuf* m) {
    Mbuf* n = m->m_next;
    if ((m->m_flags & M_EXT) != 0) {
      uint32_t* ref = m->ext().refcnt;
      if (--*ref == 0) {
        SIMLOOP_PROBE(free(Obj::cluster, m->ext().buf));
        pool_.clusters.free(m->ext().buf);
      }
    }
    SIMLOOP_PROBE(free(Obj::mbuf, m));
    pool_.mbufs.free(m);
    return n;
  }

  // m_freem: frees a whole chain (one packet).
  void freem(Mbuf* m) {
    while (m != nullptr) m = free(m);
  }

  // Frees a queue of packets linked by m_nextpkt.
  void freem_queue(Mbuf* m) {
    while (m != nullptr) {
      Mbuf* next = m->m_nextpkt;
      freem(m);
      m = next;
    }
  }

  // M_MOVE_PKTHDR: `to` takes the packet header; `from` loses it.
  static void move_pkthdr(Mbuf* to, Mbuf* from) {
    to->m_flags = static_cast<uint16_t>((from->m_flags & M_COPYFLAGS) | (to->m_flags & M_EXT));
    if ((to->m_flags & M_EXT) == 0) to->m_data = to->pktdat();
    to->pkthdr() = from->pkthdr();
    from->m_flags &= static_cast<uint16_t>(~M_PKTHDR);
  }

  // M_DUP_PKTHDR: `to` gets a copy of the packet header of `from`.
  static void dup_pkthdr(Mbuf* to, const Mbuf* from) {
    to->m_flags = static_cast<uint16_t>((from->m_flags & M_COPYFLAGS) | (to->m_flags & M_EXT));
    if ((to->m_flags & M_EXT) == 0) to->m_data = to->pktdat();
    to->pkthdr() = from->pkthdr();
  }

  // m_copym: a copy of `len` bytes from offset `off` (kMCopyAll: to the end).
  // Clusters are shared (reference count + 1, same data offset, so neither
  // side is writable while both exist); internal data is copied to the start
  // of the new mbuf. Returns nullptr if an allocation fails (`m` untouched).
  Mbuf* copym(Mbuf* m, int off, int len) {
    if (off < 0 || len < 0) throw std::invalid_argument("m_copym: negative offset or length");
    const int off0 = off;
    bool copyhdr = off == 0 && (m->m_flags & M_PKTHDR) != 0;
    while (off > 0) {
      if (m == nullptr) throw std::invalid_argument("m_copym: offset beyond the chain");
      if (off < m->m_len) break;
      off -= m->m_len;
      m = m->m_next;
    }
    Mbuf* top = nullptr;
    Mbuf** np = &top;
    while (len > 0) {
      if (m == nullptr) {
        if (len != kMCopyAll) {
          freem(top);  // the partial copy, and its cluster references
          throw std::invalid_argument("m_copym: length beyond the chain");
        }
        break;
      }
      Mbuf* n = copyhdr ? gethdr(m->m_type) : get(m->m_type);
      if (n == nullptr) {
        freem(top);
        return nullptr;
      }
      *np = n;
      if (copyhdr) {
        dup_pkthdr(n, m);
        n->pkthdr().len = len == kMCopyAll ? n->pkthdr().len - off0 : len;
        copyhdr = false;
      }
      n->m_len = std::min(len, m->m_len - off);
      if ((m->m_flags & M_EXT) != 0) {
        n->m_data = m->m_data + off;
        n->ext() = m->ext();
        n->m_flags |= M_EXT;
        ++*m->ext().refcnt;
      } else {
        SIMLOOP_PROBE(copy(CopyKind::loop_copy, m->m_data + off, n->m_data, n->m_len));
        std::memcpy(n->m_data, m->m_data + off, n->m_len);
      }
      if (len != kMCopyAll) len -= n->m_len;
      off = 0;
      m = m->m_next;
      np = &n->m_next;
    }
    return top;
  }

  // m_dup: a deep, writable copy of a packet, packed from offset 0 of each
  // buffer (clusters where at least MINCLSIZE bytes remain). Alignment of the
  // original is not kept. Returns nullptr if an allocation fails.
  Mbuf* dup(const Mbuf* m) {
    if ((m->m_flags & M_PKTHDR) == 0) throw std::invalid_argument("m_dup: not a packet header");
    int remain = m->pkthdr().len;
    int moff = 0;
    Mbuf* top = nullptr;
    Mbuf** p = &top;
    while (remain > 0 || top == nullptr) {
      const bool first = top == nullptr;
      Mbuf* n;
      int nsize;
      if (remain >= kMinClSize) {
        n = getcl(m->m_type, first ? M_PKTHDR : 0);
        nsize = kMClBytes;
      } else {
        n = first ? gethdr(m->m_type) : get(m->m_type);
        nsize = first ? kMHLen : kMLen;
      }
      if (n == nullptr) {
        freem(top);
        return nullptr;
      }
      if (first) dup_pkthdr(n, m);
      *p = n;
      p = &n->m_next;
      while (n->m_len < nsize && m != nullptr) {
        const int chunk = std::min(nsize - n->m_len, m->m_len - moff);
        SIMLOOP_PROBE(copy(CopyKind::dup, m->m_data + moff, n->m_data + n->m_len, chunk));
        std::memcpy(n->m_data + n->m_len, m->m_data + moff, chunk);
        moff += chunk;
        n->m_len += chunk;
        remain -= chunk;
        if (moff == m->m_len) {
          m = m->m_next;
          moff = 0;
        }
      }
    }
    return top;
  }

  // m_pullup: make the first `len` bytes contiguous in the first mbuf. A
  // first mbuf that already holds them is returned as is; otherwise data is
  // gathered into the first mbuf if it is a writable internal one with room,
  // else into a new header mbuf. On failure the chain is freed: nullptr.
  Mbuf* pullup(Mbuf* m, int len) {
    if (m->m_len >= len) return m;
    Mbuf* n;
    if ((m->m_flags & (M_EXT | M_RDONLY)) == 0 && m->m_data + len <= m->dat() + kMLen &&
        m->m_next != nullptr) {
      n = m;
      m = m->m_next;
      len -= n->m_len;
    } else {
      if (len > kMHLen) {
        freem(m);
        return nullptr;
      }
      n = get(m->m_type);
      if (n == nullptr) {
        freem(m);
        return nullptr;
      }
      if ((m->m_flags & M_PKTHDR) != 0) move_pkthdr(n, m);
    }
    return gather(n, m, len);
  }

  // m_copyup: like m_pullup, but always into a new mbuf whose data starts
  // `dstoff` bytes into its buffer (to choose the alignment).
  Mbuf* copyup(Mbuf* m, int len, int dstoff) {
    if (len > kMHLen - dstoff || dstoff < 0) {
      freem(m);
      return nullptr;
    }
    Mbuf* n = get(m->m_type);
    if (n == nullptr) {
      freem(m);
      return nullptr;
    }
    if ((m->m_flags & M_PKTHDR) != 0) move_pkthdr(n, m);
    n->m_data += dstoff;
    return gather(n, m, len);
  }

  // m_prepend: allocate a new mbuf in front for `len` bytes (the slow path of
  // M_PREPEND): a header mbuf (MHLEN) for a packet, else a plain one (MLEN).
  // On failure, or if `len` does not fit, the chain is freed: nullptr.
  Mbuf* prepend_new(Mbuf* m, int len) {
    if (len > ((m->m_flags & M_PKTHDR) != 0 ? kMHLen : kMLen)) {
      freem(m);
      return nullptr;
    }
    Mbuf* mn = (m->m_flags & M_PKTHDR) != 0 ? gethdr(m->m_type) : get(m->m_type);
    if (mn == nullptr) {
      freem(m);
      return nullptr;
    }
    if ((m->m_flags & M_PKTHDR) != 0) move_pkthdr(mn, m);
    mn->m_next = m;
    if (len < m_bufsize(mn)) m_align(mn, len);
    mn->m_len = len;
    return mn;
  }

  // M_PREPEND: `len` more bytes in front, in the leading space if there is
  // enough (never in shared storage), else in a new mbuf. Updates pkthdr.len.
  Mbuf* prepend(Mbuf* m, int len) {
    if (m_leadingspace(m) >= len) {
      m->m_data -= len;
      m->m_len += len;
    } else {
      m = prepend_new(m, len);
    }
    if (m != nullptr && (m->m_flags & M_PKTHDR) != 0) m->pkthdr().len += len;
    return m;
  }

  // m_adj: trim `req` bytes from the head (req > 0) or the tail (req < 0).
  // Head trims leave empty mbufs in place; tail trims free the mbufs past
  // the new end. Only mbuf headers change, never shared storage.
  void adj(Mbuf* mp, int req) {
    if (mp == nullptr) return;
    int len = req;
    if (len >= 0) {
      Mbuf* m = mp;
      while (m != nullptr && len > 0) {
        if (m->m_len <= len) {
          len -= m->m_len;
          m->m_len = 0;
          m = m->m_next;
        } else {
          m->m_len -= len;
          m->m_data += len;
          len = 0;
        }
      }
      if ((mp->m_flags & M_PKTHDR) != 0) mp->pkthdr().len -= req - len;
      return;
    }
    len = -len;
    int count = m_length(mp) - len;
    if (count < 0) count = 0;
    if ((mp->m_flags & M_PKTHDR) != 0) mp->pkthdr().len = count;
    for (Mbuf* m = mp; m != nullptr; m = m->m_next) {
      if (m->m_len >= count) {
        m->m_len = count;
        if (m->m_next != nullptr) {
          freem(m->m_next);
          m->m_next = nullptr;
        }
        return;
      }
      count -= m->m_len;
    }
  }

  // m_copydata: copy `len` bytes from offset `off` of the chain to `dst`.
  void copydata(const Mbuf* m, int off, int len, void* dst, CopyKind kind = CopyKind::other) {
    if (off < 0 || len < 0) throw std::invalid_argument("m_copydata: negative offset or length");
    while (off > 0) {
      if (m == nullptr) throw std::invalid_argument("m_copydata: offset beyond the chain");
      if (off < m->m_len) break;
      off -= m->m_len;
      m = m->m_next;
    }
    auto* out = static_cast<uint8_t*>(dst);
    while (len > 0) {
      if (m == nullptr) throw std::invalid_argument("m_copydata: length beyond the chain");
      const int count = std::min(m->m_len - off, len);
      SIMLOOP_PROBE(copy(kind, m->m_data + off, out, count));
      std::memcpy(out, m->m_data + off, count);
      len -= count;
      out += count;
      off = 0;
      m = m->m_next;
    }
  }

  // m_copyback: write `len` bytes from `src` at offset `off`, extending the
  // chain (zero-filled) as needed. Writing into storage that is not writable
  // is a logic error. Returns false if an extension could not be allocated.
  bool copyback(Mbuf* m0, int off, int len, const void* src) {
    if (off < 0 || len < 0) throw std::invalid_argument("m_copyback: negative offset or length");
    const auto* in = static_cast<const uint8_t*>(src);
    Mbuf* m = m0;
    int before = 0;  // bytes of the chain in front of `m`
    while (off > m->m_len) {
      off -= m->m_len;
      before += m->m_len;
      if (m->m_next == nullptr && !extend(m, off)) {
        grow_pkthdr_len(m0, before);  // keep the zero fill already appended
        return false;
      }
      m = m->m_next;
    }
    while (len > 0) {
      if (off == m->m_len) {
        if (m->m_next != nullptr) {
          before += m->m_len;
          off = 0;
          m = m->m_next;
          continue;
        }
        // At the end of the chain: grow into trailing space or a new mbuf.
        const int room = m_trailingspace(m);
        if (room > 0) {
          m->m_len += std::min(room, len);
        } else {
          Mbuf* n = get(m->m_type);
          if (n == nullptr) {
            grow_pkthdr_len(m0, before + off);  // keep what was written
            return false;
          }
          n->m_len = std::min(kMLen, len);
          m->m_next = n;
          before += m->m_len;
          off = 0;
          m = n;
        }
      }
      const int count = std::min(m->m_len - off, len);
      if (!m_writable(m)) throw std::logic_error("m_copyback: write into read-only storage");
      SIMLOOP_PROBE(copy(CopyKind::other, in, m->m_data + off, count));
      std::memcpy(m->m_data + off, in, count);
      in += count;
      len -= count;
      off += count;
    }
    grow_pkthdr_len(m0, before + off);
    return true;
  }

  // m_cat: append chain `n` to chain `m` (packet header lengths untouched).
  // Small internal mbufs are copied into trailing space; others are linked.
  void cat(Mbuf* m, Mbuf* n) {
    while (m->m_next != nullptr) m = m->m_next;
    while (n != nullptr) {
      if ((m->m_flags & M_EXT) != 0 || m_trailingspace(m) < n->m_len) {
        m->m_next = n;
        return;
      }
      SIMLOOP_PROBE(copy(CopyKind::other, n->m_data, m->m_data + m->m_len, n->m_len));
      std::memcpy(m->m_data + m->m_len, n->m_data, n->m_len);
      m->m_len += n->m_len;
      n = free(n);
    }
  }

  // m_uiotombuf: a packet holding `len` bytes of `src`, its data placed
  // `align` bytes into the first buffer so headers can be prepended in place.
  // The first buffer is a cluster when len + align >= MINCLSIZE.
  Mbuf* uiotombuf(const void* src, int len, int align) {
    if (align >= kMHLen || len < 0 || align < 0) return nullptr;
    const auto* in = static_cast<const uint8_t*>(src);
    Mbuf* top = len + align >= kMinClSize ? getcl(MT_DATA, M_PKTHDR) : gethdr(MT_DATA);
    if (top == nullptr) return nullptr;
    top->m_data += align;
    Mbuf* m = top;
    int done = 0;
    for (;;) {
      const int count = std::min(m_trailingspace(m), len - done);
      if (count > 0) {
        SIMLOOP_PROBE(copy(CopyKind::uiomove, in + done, m->m_data, count));
        std::memcpy(m->m_data, in + done, count);
      }
      m->m_len = count;
      done += count;
      if (done == len) break;
      Mbuf* n = len - done >= kMinClSize ? getcl(MT_DATA, 0) : get(MT_DATA);
      if (n == nullptr) {
        freem(top);
        return nullptr;
      }
      m->m_next = n;
      m = n;
    }
    top->pkthdr().len = len;
    return top;
  }

 private:
  // As m_copyback does on every exit, even a failed one: pkthdr.len covers
  // the chain up to `end`, the last byte added.
  static void grow_pkthdr_len(Mbuf* m0, int end) {
    if ((m0->m_flags & M_PKTHDR) != 0 && m0->pkthdr().len < end) m0->pkthdr().len = end;
  }

  // Appends a zero-filled mbuf of `len` bytes (at most MLEN) after `m`.
  bool extend(Mbuf* m, int len) {
    Mbuf* n = get(m->m_type);
    if (n == nullptr) return false;
    n->m_len = std::min(kMLen, len);
    std::memset(n->m_data, 0, n->m_len);
    m->m_next = n;
    return true;
  }

  // Moves `len` bytes (at least max_protohdr when available) from the front
  // of chain `m` to the end of `n`, and links the rest of `m` after `n`.
  Mbuf* gather(Mbuf* n, Mbuf* m, int len) {
    int space = static_cast<int>(n->dat() + kMLen - (n->m_data + n->m_len));
    do {
      const int count = std::min({std::max(len, kMaxProtoHdr), space, m->m_len});
      SIMLOOP_PROBE(copy(CopyKind::pullup, m->m_data, n->m_data + n->m_len, count));
      std::memcpy(n->m_data + n->m_len, m->m_data, count);
      len -= count;
      m->m_len -= count;
      n->m_len += count;
      space -= count;
      if (m->m_len != 0)
        m->m_data += count;
      else
        m = free(m);
    } while (len > 0 && m != nullptr);
    if (len > 0) {
      free(n);
      freem(m);
      return nullptr;
    }
    n->m_next = m;
    return n;
  }

  MbufPool& pool_;
  P& probe_;
};

}  // namespace simloop::net::bsd
