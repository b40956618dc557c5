#include <gtest/gtest.h>

#include "net/mbuf_ops.h"

namespace simloop::net {
namespace {

TEST(Mbuf, Smoke) {
  MbufPool pool(64, 8);
  NullProbe probe;
  Mbufs<NullProbe> mb(pool, probe);
  Mbuf* m = mb.getcl(MT_DATA, M_PKTHDR);
  ASSERT_NE(m, nullptr);
  EXPECT_TRUE(m_writable(m));
  mb.freem(m);
  EXPECT_TRUE(pool.idle());
}

}  // namespace
}  // namespace simloop::net
