// The Internet checksum against published vectors and across mbuf splits.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "sim/stack/bsd/mbuf_ops.h"
#include "sim/stack/net/inet.h"

namespace simloop::net::bsd {
namespace {

uint16_t to_network(uint16_t machine) {
  uint8_t b[2];
  std::memcpy(b, &machine, 2);
  return load_be16(b);
}

TEST(Checksum, Rfc1071Example) {
  // RFC 1071 section 3: 00 01 f2 03 f4 f5 f6 f7 sums to ddf2 (before complement).
  const uint8_t data[] = {0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7};
  EXPECT_EQ(to_network(cksum_fold(cksum_add(data, sizeof data))), 0xddf2);
}

TEST(Checksum, KnownIpv4Header) {
  // 192.168.0.1 -> 192.168.0.199, the commonly cited example: checksum b861.
  uint8_t hdr[] = {0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
                   0x00, 0x00, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7};
  const uint16_t ck = cksum_finish(cksum_add(hdr, sizeof hdr));
  EXPECT_EQ(to_network(ck), 0xb861);
  std::memcpy(hdr + 10, &ck, 2);
  EXPECT_EQ(cksum_finish(cksum_add(hdr, sizeof hdr)), 0);
}

TEST(Checksum, OddLengthPadsWithZero) {
  const uint8_t a[] = {0x12, 0x34, 0x56};
  const uint8_t b[] = {0x12, 0x34, 0x56, 0x00};
  EXPECT_EQ(cksum_fold(cksum_add(a, 3)), cksum_fold(cksum_add(b, 4)));
}

// The same bytes give the same sum however a chain splits them, including
// splits at odd offsets.
TEST(Checksum, ChainSplitsDoNotMatter) {
  MbufPool pool(64, 8);
  NullProbe probe;
  Mbufs<NullProbe> mb(pool, probe);
  std::vector<uint8_t> data(301);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 31 + 7);
  const uint16_t flat = cksum_fold(cksum_add(data.data(), static_cast<int>(data.size())));
  for (int split1 : {1, 2, 3, 17, 100}) {
    for (int split2 : {1, 5, 64}) {
      Mbuf* a = mb.gethdr();
      Mbuf* b = mb.get();
      Mbuf* c = mb.getcl();  // the rest (up to 299 bytes) needs more than MLEN
      a->m_next = b;
      b->m_next = c;
      a->m_len = split1;
      b->m_len = split2;
      c->m_len = static_cast<int>(data.size()) - split1 - split2;
      std::memcpy(a->m_data, data.data(), split1);
      std::memcpy(b->m_data, data.data() + split1, split2);
      std::memcpy(c->m_data, data.data() + split1 + split2, c->m_len);
      EXPECT_EQ(cksum_fold(cksum_chain(a, 0, static_cast<int>(data.size()))), flat)
          << split1 << "/" << split2;
      // An offset inside the chain equals the flat sum of the tail.
      EXPECT_EQ(cksum_fold(cksum_chain(a, 3, 200)), cksum_fold(cksum_add(data.data() + 3, 200)));
      mb.freem(a);
    }
  }
  EXPECT_TRUE(pool.idle());
}

}  // namespace
}  // namespace simloop::net::bsd
