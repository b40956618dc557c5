// The stack's hot path never calls the general heap: once warm, sending and
// receiving performs no operator new at all. Every global operator new in
// this program is replaced by a counting one (tests/counting_new.cc).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <vector>

#include "sim/stack/bsd/stack.h"
#include "tests/counting_new.h"

namespace simloop::net::bsd {
namespace {

constexpr uint16_t kRxPort = 5001;

// The counter itself must see what it claims to: make sure the
// replacement is the one in use.
TEST(StackNoHeap, CounterSeesOperatorNew) {
  const uint64_t before = g_news.load();
  auto* v = new std::vector<int>(100);
  auto* a = new (std::align_val_t{64}) char[128];
  auto* n = new (std::nothrow) int[3];
  // Keep the allocations observable so they cannot be elided.
  asm volatile("" : : "g"(v), "g"(a), "g"(n) : "memory");
  EXPECT_EQ(g_news.load() - before, 4u);  // the vector, its storage, and two arrays
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 64, 0u);
  delete v;
  ::operator delete[](a, std::align_val_t{64});
  delete[] n;
}

TEST(StackNoHeap, WarmStackSendsAndReceivesWithoutOperatorNew) {
  MbufPool pool;
  NullProbe probe;
  StackOptions opt;
  opt.useloopback = false;  // kHostAddr exercises em0's to-self loop too
  Stack<NullProbe> st(pool, probe, opt);
  const int rx = st.socket();
  const int tx = st.socket();
  ASSERT_EQ(st.bind(rx, 0, kRxPort), 0);
  std::vector<uint8_t> small(18, 0xa5);
  std::vector<uint8_t> large(1000, 0x3c);
  std::vector<uint8_t> rbuf(2048);

  // Every path: loopback, broadcast (loop copy and frame), to-self, wire.
  // Failures are tallied in plain integers so no gtest machinery runs
  // inside the counted window.
  uint64_t errors = 0;
  uint64_t received = 0;
  auto round = [&](const std::vector<uint8_t>& d, uint32_t dst, bool looped) {
    errors += st.sendto(tx, d.data(), static_cast<int>(d.size()), dst, kRxPort) != 0;
    st.netisr_run();
    int got = 0;
    if (looped) {
      errors += st.recvfrom(rx, rbuf.data(), static_cast<int>(rbuf.size()), &got) != 0;
      errors += got != static_cast<int>(d.size());
      ++received;
    }
    st.nic_txeof();
  };
  auto all_paths = [&](const std::vector<uint8_t>& d) {
    round(d, kLoopAddr, true);
    round(d, kBroadcastAddr, true);
    round(d, kHostAddr, true);
    round(d, kPeerAddr, false);
  };

  for (int i = 0; i < 300; ++i) all_paths(i % 10 == 0 ? large : small);
  ASSERT_EQ(errors, 0u);
  ASSERT_TRUE(pool.idle());

  const uint64_t news_before = g_news.load();
  for (int i = 0; i < 10000; ++i) round(small, kLoopAddr, true);
  all_paths(small);
  all_paths(large);  // the cluster path
  const uint64_t news = g_news.load() - news_before;

  EXPECT_EQ(news, 0u) << "operator new on the hot path";
  EXPECT_EQ(errors, 0u);
  EXPECT_EQ(received, 300u * 3 + 10000 + 3 + 3);
  EXPECT_EQ(st.counters().drops_total(), 0u);
  EXPECT_TRUE(pool.idle());
}

}  // namespace
}  // namespace simloop::net::bsd
