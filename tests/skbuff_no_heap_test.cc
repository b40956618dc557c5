// The sk_buff layer never calls the general heap once its pool exists:
// allocating, cloning, copying, expanding, charging, queueing and freeing
// perform no operator new at all. Every global operator new in this program
// is replaced by a counting one (tests/counting_new.cc).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <vector>

#include "sim/stack/linux/skbuff.h"
#include "sim/stack/linux/sock.h"
#include "tests/counting_new.h"

namespace simloop::lnx {
namespace {

TEST(SkbNoHeap, CounterSeesOperatorNew) {
  const uint64_t before = g_news.load();
  auto* v = new std::vector<int>(100);
  asm volatile("" : : "g"(v) : "memory");
  EXPECT_EQ(g_news.load() - before, 2u);  // the vector and its storage
  delete v;
}

TEST(SkbNoHeap, WarmPoolRunsEveryOperationWithoutOperatorNew) {
  SkbPool pool;
  Sock tx, rx;
  uint8_t payload[1400] = {};
  // Failures are tallied in plain integers so no gtest machinery runs
  // inside the counted window.
  uint64_t errors = 0;
  auto round = [&](unsigned len) {
    int err = 0;
    SkBuff* skb = sock_alloc_send_skb(pool, tx, 16 + 28 + len, true, &err);
    if (skb == nullptr) {
      ++errors;
      return;
    }
    skb_reserve(skb, 16 + 28);
    skb_put_data(skb, payload, len);
    skb_push(skb, 28);
    SkBuff* clone = pool.skb_clone(skb);
    SkBuff* copy = pool.skb_copy(skb);
    SkBuff* pcopy = pool.pskb_copy(skb);
    errors += clone == nullptr || copy == nullptr || pcopy == nullptr;
    errors += pool.skb_cow_head(clone, 64) != 0;
    skb_get(copy);
    SkBuff* own = pool.skb_share_check(copy);
    errors += own == nullptr;
    pool.consume_skb(copy);
    pool.consume_skb(own);
    pool.consume_skb(clone);
    skb_orphan(skb);
    skb_pull(skb, 28);
    if (sk_rmem_enqueue(rx, skb) != 0) {
      pool.kfree_skb_reason(skb, SkbDropReason::kSocketRcvbuff);
      ++errors;
    }
    if (sk_rmem_enqueue(rx, pcopy) != 0) {
      pool.kfree_skb_reason(pcopy, SkbDropReason::kSocketRcvbuff);
      ++errors;
    }
    while (SkBuff* got = sk_rmem_dequeue(rx)) pool.consume_skb(got);
  };

  for (int i = 0; i < 200; ++i) round(i % 10 == 0 ? 1400 : 18);
  ASSERT_EQ(errors, 0u);
  ASSERT_TRUE(pool.idle());

  const uint64_t news_before = g_news.load();
  for (int i = 0; i < 10000; ++i) round(i % 10 == 0 ? 1400 : 18);
  const uint64_t news = g_news.load() - news_before;

  EXPECT_EQ(news, 0u) << "operator new on the hot path";
  EXPECT_EQ(errors, 0u);
  EXPECT_TRUE(pool.idle());
  EXPECT_EQ(sk_wmem_alloc_get(tx), 0);
  EXPECT_EQ(sk_rmem_alloc_get(rx), 0);
  EXPECT_EQ(pool.stats().dropped, 0u);
}

}  // namespace
}  // namespace simloop::lnx
