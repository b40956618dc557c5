#include "sim/stack/net/inet.h"

#include <algorithm>
#include <stdexcept>

namespace simloop::net {

uint64_t cksum_add(const uint8_t* p, int n, uint64_t sum) {
  // 32-bit words into a 64-bit accumulator: carries are folded at the end,
  // which RFC 1071 allows for any word size that is a multiple of 16 bits.
  while (n >= 8) {
    uint32_t a;
    uint32_t b;
    std::memcpy(&a, p, 4);
    std::memcpy(&b, p + 4, 4);
    sum += uint64_t{a} + b;
    p += 8;
    n -= 8;
  }
  if (n >= 4) {
    uint32_t a;
    std::memcpy(&a, p, 4);
    sum += a;
    p += 4;
    n -= 4;
  }
  if (n >= 2) {
    uint16_t a;
    std::memcpy(&a, p, 2);
    sum += a;
    p += 2;
    n -= 2;
  }
  if (n == 1) {
    // A lone last byte is the first byte of a word padded with zero.
    uint8_t pad[2] = {p[0], 0};
    uint16_t a;
    std::memcpy(&a, pad, 2);
    sum += a;
  }
  return sum;
}

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

uint64_t cksum_pseudo(uint32_t src, uint32_t dst, uint8_t proto, uint16_t len) {
  uint8_t ph[12];
  store_be32(ph, src);
  store_be32(ph + 4, dst);
  ph[8] = 0;
  ph[9] = proto;
  store_be16(ph + 10, len);
  return cksum_add(ph, sizeof ph);
}

}  // namespace simloop::net
