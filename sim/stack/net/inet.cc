#include "sim/stack/net/inet.h"

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
