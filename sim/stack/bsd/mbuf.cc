#include "sim/stack/bsd/mbuf.h"

#include <algorithm>
#include <stdexcept>

#include "sim/stack/net/inet.h"

namespace simloop::net::bsd {

MbufPool::MbufPool(size_t mbuf_capacity, size_t cluster_capacity)
    : mbufs("mbuf", kMSize, mbuf_capacity),
      clusters("mbuf_cluster", kMClBytes, cluster_capacity),
      refcnt(cluster_capacity) {}

uint64_t cksum_chain(const Mbuf* m, int off, int len, uint64_t sum) {
  while (m != nullptr && off >= m->m_len) {
    off -= m->m_len;
    m = m->m_next;
  }
  bool odd = false;  // does the next byte start in the middle of a word?
  for (; len > 0; m = m->m_next, off = 0) {
    if (m == nullptr) throw std::invalid_argument("in_cksum: chain shorter than the length");
    const int n = std::min(m->m_len - off, len);
    if (n <= 0) continue;
    uint16_t part = cksum_fold(cksum_add(m->m_data + off, n));
    // Bytes that start at an odd position belong to the other half of each
    // word: swapping the folded sum moves them there.
    if (odd) part = static_cast<uint16_t>((part << 8) | (part >> 8));
    sum += part;
    if ((n & 1) != 0) odd = !odd;
    len -= n;
  }
  return sum;
}

}  // namespace simloop::net::bsd
