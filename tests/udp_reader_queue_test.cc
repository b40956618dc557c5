// The reader's side of a UDP socket (sim/stack/linux/sock.h): datagrams
// taken off the reader's own queue, refilled a whole receive queue at a
// time, and their memory given back in bulk, as net/ipv4/udp.c does.
#include <gtest/gtest.h>

#include <cerrno>
#include <vector>

#include "sim/stack/linux/skbuff.h"
#include "sim/stack/linux/sock.h"

namespace simloop::lnx {
namespace {

// The stack's udp_recvmsg: the dequeue, then the release when it is due.
SkBuff* take(Sock& sk, bool* released) {
  SkBuff* skb = udp_dequeue(sk, released);
  if (*released) udp_rmem_release(sk);
  return skb;
}

// udp_recvmsg's dequeue: the reader's own queue, refilled a whole receive
// queue at a time; the memory of what it took given back only when that
// queue runs dry or a quarter of sk_rcvbuf is owed, and meanwhile still
// counted against the buffer.
TEST(SockMem, TheReaderGivesABurstsMemoryBackInBulk) {
  SkbPool pool;
  Sock sk;  // sk_rcvbuf 212992: a quarter is 53248
  std::vector<SkBuff*> in;
  for (int i = 0; i < 5; ++i) in.push_back(pool.alloc_skb(77));  // truesize 896 each
  for (int i = 0; i < 4; ++i) ASSERT_EQ(sk_rmem_enqueue(sk, in[i]), 0);
  bool released = true;
  EXPECT_EQ(take(sk, &released), in[0]);
  EXPECT_FALSE(released);
  EXPECT_EQ(skb_queue_len(&sk.reader_queue), 3u) << "the whole receive queue spliced";
  EXPECT_TRUE(skb_queue_empty(&sk.sk_receive_queue));
  EXPECT_EQ(sk_rmem_alloc_get(sk), 4 * 896) << "not given back yet";
  EXPECT_EQ(sk.forward_deficit, 896);
  // A datagram arriving mid-burst waits on the receive queue.
  ASSERT_EQ(sk_rmem_enqueue(sk, in[4]), 0);
  EXPECT_EQ(skb_queue_len(&sk.sk_receive_queue), 1u);
  EXPECT_EQ(take(sk, &released), in[1]);
  EXPECT_FALSE(released);
  EXPECT_EQ(take(sk, &released), in[2]);
  EXPECT_FALSE(released);
  // The reader's queue runs dry: four datagrams' memory back at once, and
  // the receive queue spliced so that the next read takes no lock.
  EXPECT_EQ(take(sk, &released), in[3]);
  EXPECT_TRUE(released);
  EXPECT_EQ(sk_rmem_alloc_get(sk), 896);
  EXPECT_EQ(sk.forward_deficit, 0);
  EXPECT_EQ(skb_queue_len(&sk.reader_queue), 1u);
  EXPECT_TRUE(skb_queue_empty(&sk.sk_receive_queue));
  EXPECT_EQ(take(sk, &released), in[4]);
  EXPECT_TRUE(released) << "one datagram at a time: every read releases";
  EXPECT_EQ(sk_rmem_alloc_get(sk), 0);
  EXPECT_EQ(take(sk, &released), nullptr);
  EXPECT_FALSE(released);
  for (SkBuff* skb : in) pool.consume_skb(skb);
  EXPECT_TRUE(pool.idle());
}

TEST(SockMem, AQuarterOfTheBufferOwedIsGivenBackMidBurst) {
  SkbPool pool;
  Sock sk;
  sk.sk_rcvbuf = 8 * 896;  // a quarter: two datagrams
  std::vector<SkBuff*> in;
  for (int i = 0; i < 8; ++i) {
    in.push_back(pool.alloc_skb(77));
    ASSERT_EQ(sk_rmem_enqueue(sk, in.back()), 0);
  }
  SkBuff* late = pool.alloc_skb(77);
  EXPECT_EQ(sk_rmem_enqueue(sk, late), -ENOMEM) << "full";
  pool.kfree_skb(late);
  bool released = false;
  EXPECT_EQ(take(sk, &released), in[0]);
  EXPECT_FALSE(released);
  // Taken but not given back: still in the way of a new datagram.
  late = pool.alloc_skb(77);
  EXPECT_EQ(sk_rmem_enqueue(sk, late), -ENOMEM);
  pool.kfree_skb(late);
  EXPECT_EQ(take(sk, &released), in[1]);
  EXPECT_TRUE(released) << "1792 owed, not below the quarter";
  EXPECT_EQ(sk_rmem_alloc_get(sk), 6 * 896);
  // The rest purged: both queues, and what is owed.
  EXPECT_EQ(take(sk, &released), in[2]);
  pool.consume_skb(in[0]);
  pool.consume_skb(in[1]);
  pool.consume_skb(in[2]);
  sk_rmem_purge(pool, sk);
  EXPECT_EQ(sk_rmem_alloc_get(sk), 0);
  EXPECT_EQ(sk.forward_deficit, 0);
  EXPECT_TRUE(skb_queue_empty(&sk.reader_queue));
  EXPECT_TRUE(pool.idle());
}

}  // namespace
}  // namespace simloop::lnx
