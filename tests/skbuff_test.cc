// Unit tests of the Linux sk_buff layer and socket memory accounting:
// sizes and truesize, the window operations, clones and copies, cow,
// references and frees, misuse, queues, and sk_sndbuf / sk_rcvbuf.
#include "sim/stack/linux/skbuff.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/stack/linux/sock.h"

namespace simloop::lnx {
namespace {

using Bytes = std::vector<uint8_t>;

uintptr_t Addr(const void* p) {
  return reinterpret_cast<uintptr_t>(p);
}

// Bytes with no short period, so a copy from the wrong offset shows.
Bytes Pattern(unsigned n, uint32_t seed) {
  Bytes b(n);
  for (auto& x : b) {
    seed = seed * 1103515245u + 12345u;
    x = static_cast<uint8_t>(seed >> 16);
  }
  return b;
}

Bytes Data(const SkBuff* skb) {
  return Bytes(skb->data, skb->data + skb->len);
}

// A pool small enough that tests can fill its caches.
SkbPoolConfig Small() {
  SkbPoolConfig c;
  c.skbs = 16;
  c.small_heads = 8;
  c.kmalloc = {8, 8, 8, 8, 4, 2, 2, 2, 2};
  return c;
}

// The message a call throws with.
template <class F>
std::string Thrown(F&& f) {
  try {
    f();
  } catch (const std::logic_error& e) {
    return e.what();
  }
  return "(nothing thrown)";
}

// ---- Sizes ----

TEST(SkbSizes, ConstantsAreLinuxs) {
  EXPECT_EQ(sizeof(SkbSharedInfo), 320u);
  EXPECT_LE(sizeof(SkBuff), 256u);
  EXPECT_EQ(kSkbSmallHeadCacheSize, 640u);
  EXPECT_EQ(kSkbSmallHeadHeadroom, 320u);
  EXPECT_EQ(skb_truesize(256), 832u);     // _SK_MEM_OVERHEAD
  EXPECT_EQ(kSysctlWmemDefault, 212992);  // SK_WMEM_MAX
  EXPECT_EQ(kSockMinSndbuf, 4608);
  EXPECT_EQ(kSockMinRcvbuf, 2304);
  EXPECT_EQ(kSkbMaxAlloc, 131072u - 320u);
}

struct SizeCase {
  unsigned size, alloc;
};

// A kernel built without tunnels has 576-byte small heads
// (/proc/slabinfo's skbuff_small_head): 256 usable bytes, truesize 832, so
// that a receive buffer holds more small skbs than with 640.
TEST(SkbSizes, SmallHeadsOfAnotherKernelConfig) {
  SkbPoolConfig config;
  config.small_head_size = 576;
  SkbPool pool(config);
  EXPECT_EQ(pool.head_alloc_size(77), 576u);
  EXPECT_EQ(pool.head_alloc_size(256), 576u);
  EXPECT_EQ(pool.head_alloc_size(257), 1024u);
  SkBuff* skb = pool.alloc_skb(77);
  ASSERT_NE(skb, nullptr);
  EXPECT_EQ(skb_end_offset(skb), 256u);
  EXPECT_EQ(skb->truesize, 832u);
  EXPECT_EQ(pool.head_cache(576)->stats().in_use, 1u);
  pool.kfree_skb(skb);
  config.small_head_size = 100;  // smaller than any head with its shared info
  EXPECT_THROW(SkbPool{config}, std::invalid_argument);
}

// alloc_skb(size): SKB_HEAD_ALIGN(size) rounded to the small-head cache or a
// power of two; all of it usable; truesize = allocation + 256.
TEST(SkbSizes, AllocRoundsLikeKmallocReserve) {
  SkbPool pool;
  const SizeCase cases[] = {
      {0, 640},     {1, 640},     {77, 640},     {320, 640},      {321, 1024},
      {704, 1024},  {705, 2048},  {1500, 2048},  {1728, 2048},    {1729, 4096},
      {3776, 4096}, {3777, 8192}, {9000, 16384}, {65535, 131072}, {kSkbMaxAlloc, 131072}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.size);
    EXPECT_EQ(pool.head_alloc_size(c.size), c.alloc);
    SkBuff* skb = pool.alloc_skb(c.size);
    ASSERT_NE(skb, nullptr);
    EXPECT_EQ(skb_end_offset(skb), c.alloc - 320);
    EXPECT_EQ(skb_tailroom(skb), c.alloc - 320);
    EXPECT_GE(skb_tailroom(skb), c.size);
    EXPECT_EQ(skb->truesize, c.alloc + 256);
    EXPECT_EQ(skb->truesize, skb_truesize(skb_end_offset(skb)));
    EXPECT_EQ(pool.head_cache(c.alloc)->stats().in_use, 1u);
    // Heads and shared info on cache lines; power-of-two heads up to a page
    // aligned to their size, as kmalloc's are.
    EXPECT_EQ(Addr(skb->head) % 64, 0u);
    EXPECT_EQ(Addr(skb_shinfo(skb)) % 64, 0u);
    if (c.alloc != 640 && c.alloc <= 4096) {
      EXPECT_EQ(Addr(skb->head) % c.alloc, 0u);
    }
    pool.consume_skb(skb);
  }
  EXPECT_EQ(pool.head_alloc_size(kSkbMaxAlloc + 1), 0u);
  EXPECT_EQ(pool.alloc_skb(kSkbMaxAlloc + 1), nullptr);
  EXPECT_EQ(pool.stats().alloc_failures, 1u);
  EXPECT_TRUE(pool.idle());
}

TEST(SkbSizes, WithoutTheSmallHeadCacheKmalloc512Serves) {
  SkbPoolConfig c;
  c.small_heads = 0;
  SkbPool pool(c);
  EXPECT_EQ(pool.small_head_cache(), nullptr);
  SkBuff* skb = pool.alloc_skb(77);
  ASSERT_NE(skb, nullptr);
  EXPECT_EQ(skb_end_offset(skb), 192u);
  EXPECT_EQ(skb->truesize, 768u);
  EXPECT_EQ(pool.kmalloc_cache(0).stats().in_use, 1u);
  EXPECT_EQ(pool.alloc_skb(193)->truesize, 1280u);  // 256 + 320 > 512: kmalloc-1024
  EXPECT_EQ(pool.heads_in_use(), 2u);
}

TEST(SkbAlloc, AFreshSkbIsEmptyAndUnshared) {
  SkbPool pool;
  SkBuff* skb = pool.alloc_skb(100);
  ASSERT_NE(skb, nullptr);
  EXPECT_EQ(skb->len, 0u);
  EXPECT_EQ(skb->data_len, 0u);
  EXPECT_EQ(skb->data, skb->head);
  EXPECT_EQ(skb_headroom(skb), 0u);
  EXPECT_EQ(skb->users, 1u);
  EXPECT_EQ(skb_shinfo(skb)->dataref, 1u);
  EXPECT_EQ(skb_shinfo(skb)->nr_frags, 0);
  EXPECT_FALSE(skb_cloned(skb));
  EXPECT_FALSE(skb_shared(skb));
  EXPECT_FALSE(skb_mac_header_was_set(skb));
  EXPECT_FALSE(skb_transport_header_was_set(skb));
  EXPECT_EQ(skb->sk, nullptr);
  EXPECT_EQ(skb->destructor, nullptr);
  EXPECT_EQ(pool.skbuff_cache().stats().in_use, 1u);
  EXPECT_EQ(pool.skbuff_cache().object_size(), 256u);
  pool.kfree_skb(skb);
  EXPECT_TRUE(pool.idle());
}

// ---- The window ----

TEST(SkbWindow, ReservePutPushPullTrim) {
  SkbPool pool;
  SkBuff* skb = pool.alloc_skb(200);
  const unsigned end = skb_end_offset(skb);
  skb_reserve(skb, 64);
  EXPECT_EQ(skb_headroom(skb), 64u);
  EXPECT_EQ(skb_tailroom(skb), end - 64);
  EXPECT_EQ(skb->len, 0u);

  const Bytes payload = Pattern(100, 1);
  uint8_t* p = skb_put_data(skb, payload.data(), 100);
  EXPECT_EQ(p, skb->head + 64);
  EXPECT_EQ(skb->len, 100u);
  EXPECT_EQ(skb_tail_pointer(skb), skb->head + 164);
  EXPECT_EQ(skb_tailroom(skb), end - 164);

  const Bytes hdr = Pattern(28, 2);
  p = skb_push(skb, 28);
  EXPECT_EQ(p, skb->head + 36);
  EXPECT_EQ(p, skb->data);
  std::memcpy(p, hdr.data(), hdr.size());
  EXPECT_EQ(skb->len, 128u);
  EXPECT_EQ(skb_headroom(skb), 36u);

  Bytes want = hdr;
  want.insert(want.end(), payload.begin(), payload.end());
  EXPECT_EQ(Data(skb), want);

  p = skb_pull(skb, 8);
  EXPECT_EQ(p, skb->head + 44);
  EXPECT_EQ(skb->len, 120u);
  EXPECT_EQ(Data(skb), Bytes(want.begin() + 8, want.end()));
  EXPECT_EQ(skb_pull(skb, 121), nullptr) << "more than it holds";
  EXPECT_EQ(skb->len, 120u);
  SkBuff* whole = pool.skb_clone(skb);
  EXPECT_EQ(skb_pull(whole, 120), skb_tail_pointer(skb)) << "all of it";
  EXPECT_EQ(whole->len, 0u);
  pool.consume_skb(whole);
  EXPECT_TRUE(pskb_may_pull(skb, 120));
  EXPECT_FALSE(pskb_may_pull(skb, 121));

  skb_trim(skb, 200);  // longer: nothing to do
  EXPECT_EQ(skb->len, 120u);
  EXPECT_EQ(pskb_trim(skb, 50), 0);
  EXPECT_EQ(skb->len, 50u);
  EXPECT_EQ(skb_tail_pointer(skb), skb->data + 50);

  Bytes out(10);
  EXPECT_EQ(skb_copy_bits(skb, 40, out.data(), 10), 0);
  EXPECT_EQ(out, Bytes(want.begin() + 48, want.begin() + 58));
  EXPECT_EQ(skb_copy_bits(skb, 41, out.data(), 10), -EFAULT);
  EXPECT_EQ(skb_copy_bits(skb, -1, out.data(), 1), -EFAULT);
  pool.consume_skb(skb);
}

TEST(SkbWindow, PastEitherEndIsABugAndChangesNothing) {
  SkbPool pool;
  SkBuff* skb = pool.alloc_skb(100);
  skb_reserve(skb, 16);
  skb_put(skb, 10);
  const unsigned tailroom = skb_tailroom(skb);
  EXPECT_NE(Thrown([&] { skb_put(skb, tailroom + 1); }).find("skb_over_panic"), std::string::npos);
  EXPECT_NE(Thrown([&] { skb_push(skb, 17); }).find("skb_under_panic"), std::string::npos);
  EXPECT_THROW(skb_reserve(skb, static_cast<int>(tailroom) + 1), std::logic_error);
  EXPECT_THROW(skb_reserve(skb, -17), std::logic_error);
  EXPECT_EQ(skb->len, 10u);
  EXPECT_EQ(skb_headroom(skb), 16u);
  EXPECT_EQ(skb_tailroom(skb), tailroom);
  skb_put(skb, tailroom);  // exactly to the end is fine
  skb_push(skb, 16);
  EXPECT_EQ(skb_tailroom(skb), 0u);
  EXPECT_EQ(skb_headroom(skb), 0u);
  pool.consume_skb(skb);
}

TEST(SkbWindow, HeaderMarksAreOffsetsFromHead) {
  SkbPool pool;
  SkBuff* skb = pool.alloc_skb(100);
  skb_reserve(skb, 64);
  skb_put(skb, 8);
  skb_reset_transport_header(skb);
  skb_push(skb, 20);
  skb_reset_network_header(skb);
  EXPECT_EQ(skb->network_header, 44u);
  EXPECT_EQ(skb->transport_header, 64u);
  EXPECT_EQ(skb_network_header(skb), skb->data);
  EXPECT_EQ(skb_transport_offset(skb), 20);
  EXPECT_EQ(skb_network_offset(skb), 0);
  EXPECT_EQ(skb_network_header_len(skb), 20u);
  skb_set_mac_header(skb, -14);
  EXPECT_EQ(skb->mac_header, 30u);
  EXPECT_TRUE(skb_mac_header_was_set(skb));
  pool.consume_skb(skb);
}

// ---- Clones and copies ----

TEST(SkbClone, SharesTheHeadAndCountsIt) {
  SkbPool pool;
  SkBuff* skb = pool.alloc_skb(300);
  skb_reserve(skb, 32);
  const Bytes b = Pattern(200, 3);
  skb_put_data(skb, b.data(), 200);
  skb->protocol = 0x0008;
  skb->cb[5] = 0x77;
  SkBuff* c = pool.skb_clone(skb);
  ASSERT_NE(c, nullptr);
  EXPECT_NE(c, skb);
  EXPECT_EQ(c->head, skb->head);
  EXPECT_EQ(c->data, skb->data);
  EXPECT_EQ(skb_tail_pointer(c), skb_tail_pointer(skb));
  EXPECT_EQ(skb_end_pointer(c), skb_end_pointer(skb));
  EXPECT_EQ(c->len, 200u);
  EXPECT_EQ(c->truesize, skb->truesize);
  EXPECT_EQ(c->protocol, 0x0008);
  EXPECT_EQ(c->cb[5], 0x77);
  EXPECT_EQ(skb_shinfo(skb)->dataref, 2u);
  EXPECT_TRUE(skb_cloned(skb));
  EXPECT_TRUE(skb_cloned(c));
  EXPECT_FALSE(skb_shared(skb)) << "a clone is another sk_buff, not another reference";
  EXPECT_EQ(c->users, 1u);
  EXPECT_EQ(pool.heads_in_use(), 1u);
  EXPECT_EQ(pool.skbuff_cache().stats().in_use, 2u);

  // The bytes are one memory: a write through one is seen by the other.
  c->data[0] ^= 0xff;
  EXPECT_EQ(skb->data[0], static_cast<uint8_t>(b[0] ^ 0xff));
  // The windows are each their own.
  skb_pull(c, 50);
  EXPECT_EQ(skb->len, 200u);

  pool.consume_skb(skb);
  EXPECT_EQ(skb_shinfo(c)->dataref, 1u);
  EXPECT_FALSE(skb_cloned(c)) << "the other clone is gone";
  EXPECT_EQ(c->cloned, 1u) << "the flag stays; skb_cloned reads dataref";
  EXPECT_EQ(pool.heads_in_use(), 1u);
  pool.consume_skb(c);
  EXPECT_TRUE(pool.idle());
  EXPECT_EQ(pool.stats().clones, 1u);
}

TEST(SkbCopy, IsPrivateWithTheSameHeadroomAndHeadSize) {
  SkbPool pool;
  SkBuff* skb = pool.alloc_skb(1000);
  skb_reserve(skb, 40);
  const Bytes b = Pattern(300, 4);
  skb_put_data(skb, b.data(), 300);
  std::memset(skb->head, 0xAB, 40);  // the headroom's bytes travel too
  skb_reset_network_header(skb);
  skb->mark = 9;
  SkBuff* n = pool.skb_copy(skb);
  ASSERT_NE(n, nullptr);
  EXPECT_NE(n->head, skb->head);
  EXPECT_EQ(skb_headroom(n), 40u);
  EXPECT_EQ(skb_end_offset(n), skb_end_offset(skb));
  EXPECT_EQ(n->truesize, skb->truesize);
  EXPECT_EQ(Data(n), b);
  EXPECT_EQ(Bytes(n->head, n->head + 40), Bytes(40, 0xAB));
  EXPECT_EQ(n->network_header, skb->network_header);
  EXPECT_EQ(n->mark, 9u);
  EXPECT_FALSE(skb_cloned(n));
  EXPECT_FALSE(skb_cloned(skb));
  EXPECT_EQ(skb_shinfo(skb)->dataref, 1u);
  n->data[0] ^= 1;
  EXPECT_EQ(skb->data[0], b[0]);
  EXPECT_EQ(pool.stats().bytes_copied, 340u);
  pool.consume_skb(skb);
  pool.consume_skb(n);
  EXPECT_TRUE(pool.idle());
}

TEST(SkbCopy, PskbCopySizesTheHeadToHeadroomPlusData) {
  SkbPool pool;
  SkBuff* skb = pool.alloc_skb(1500);  // kmalloc-2048
  skb_reserve(skb, 64);
  const Bytes b = Pattern(100, 5);
  skb_put_data(skb, b.data(), 100);
  SkBuff* n = pool.pskb_copy(skb);
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(skb_headroom(n), 64u);
  EXPECT_EQ(Data(n), b);
  EXPECT_EQ(skb_end_offset(n), 320u) << "164 bytes fit the small-head cache";
  EXPECT_EQ(n->truesize, 896u);
  EXPECT_EQ(skb->truesize, 2304u);
  EXPECT_EQ(pool.stats().bytes_copied, 100u) << "only the data";
  pool.consume_skb(skb);
  pool.consume_skb(n);
  EXPECT_TRUE(pool.idle());
}

// ---- Writable heads ----

TEST(SkbCow, NothingToDoKeepsTheHead) {
  SkbPool pool;
  SkBuff* skb = pool.alloc_skb(100);
  skb_reserve(skb, 64);
  uint8_t* head = skb->head;
  EXPECT_EQ(pool.skb_cow_head(skb, 64), 0);
  EXPECT_EQ(skb->head, head);
  EXPECT_EQ(pool.skb_unclone(skb), 0);
  EXPECT_EQ(skb->head, head);
  EXPECT_EQ(pool.stats().head_expands, 0u);
  pool.consume_skb(skb);
}

TEST(SkbCow, ShortHeadroomGrowsByWholePads) {
  SkbPool pool;
  SkBuff* skb = pool.alloc_skb(100);  // small head: end 320
  skb_reserve(skb, 10);
  const Bytes b = Pattern(50, 6);
  skb_put_data(skb, b.data(), 50);
  skb_reset_network_header(skb);
  // 14 more bytes wanted: ALIGN(14, NET_SKB_PAD) = 64 more; 320 + 64 -> kmalloc-1024.
  ASSERT_EQ(pool.skb_cow_head(skb, 24), 0);
  EXPECT_EQ(skb_headroom(skb), 74u);
  EXPECT_EQ(skb_end_offset(skb), 704u);
  EXPECT_EQ(Data(skb), b);
  EXPECT_EQ(skb->network_header, 74u) << "the marks follow the data";
  EXPECT_EQ(skb->truesize, 896u + (704 - 320)) << "an unowned skb pays for its new head";
  EXPECT_EQ(pool.small_head_cache()->stats().in_use, 0u);
  EXPECT_EQ(pool.kmalloc_cache(1).stats().in_use, 1u);
  pool.consume_skb(skb);
  EXPECT_TRUE(pool.idle());
}

TEST(SkbCow, ACloneGetsAPrivateHeadAndTheOtherKeepsTheOld) {
  SkbPool pool;
  SkBuff* skb = pool.alloc_skb(400);
  skb_reserve(skb, 128);
  const Bytes b = Pattern(200, 7);
  skb_put_data(skb, b.data(), 200);
  SkBuff* c = pool.skb_clone(skb);
  uint8_t* old = skb->head;
  ASSERT_EQ(pool.skb_cow_head(c, 40), 0);
  EXPECT_NE(c->head, old);
  EXPECT_EQ(skb->head, old);
  EXPECT_EQ(skb_headroom(c), 128u) << "enough headroom: only unshared";
  EXPECT_FALSE(skb_cloned(c));
  EXPECT_EQ(c->cloned, 0u);
  EXPECT_FALSE(skb_cloned(skb));
  EXPECT_EQ(skb_shinfo(skb)->dataref, 1u);
  EXPECT_EQ(skb_shinfo(c)->dataref, 1u);
  c->data[0] ^= 0xff;  // now private
  EXPECT_EQ(skb->data[0], b[0]);
  EXPECT_EQ(Data(skb), b);
  EXPECT_EQ(pool.heads_in_use(), 2u);
  pool.consume_skb(skb);
  pool.consume_skb(c);
  EXPECT_TRUE(pool.idle());
}

TEST(SkbCow, UncloneAfterTheOtherCloneIsGoneDoesNothing) {
  SkbPool pool;
  SkBuff* skb = pool.alloc_skb(100);
  SkBuff* c = pool.skb_clone(skb);
  pool.consume_skb(c);
  uint8_t* head = skb->head;
  EXPECT_EQ(pool.skb_unclone(skb), 0);
  EXPECT_EQ(skb->head, head);
  // skb_cow_head needing room still expands; the old head is released through dataref.
  EXPECT_EQ(pool.skb_cow_head(skb, 10), 0);
  EXPECT_NE(skb->head, head);
  pool.consume_skb(skb);
  EXPECT_TRUE(pool.idle());
}

TEST(SkbCow, ASharedSkbCannotBeExpanded) {
  SkbPool pool;
  SkBuff* skb = pool.alloc_skb(100);
  skb_get(skb);
  EXPECT_NE(Thrown([&] { pool.skb_cow_head(skb, 10); }).find("sk_buff is shared"),
            std::string::npos);
  EXPECT_EQ(pool.skb_cow_head(skb, 0), 0) << "no expansion needed: fine";
  EXPECT_THROW(pool.pskb_expand_head(skb, 0, 0), std::logic_error);
  pool.kfree_skb(skb);
  EXPECT_THROW(pool.pskb_expand_head(skb, -1, 0), std::logic_error);
  EXPECT_EQ(pool.pskb_expand_head(skb, 0, 1000), 0);
  EXPECT_GE(skb_tailroom(skb), 1000u);
  pool.kfree_skb(skb);
  EXPECT_TRUE(pool.idle());
}

TEST(SkbCow, OutOfMemoryLeavesTheSkbAsItWas) {
  SkbPool pool(Small());
  SkBuff* skb = pool.alloc_skb(100);
  skb_reserve(skb, 8);
  skb_put(skb, 20);
  pool.kmalloc_cache(1).set_limit(0);
  uint8_t* head = skb->head;
  const uint32_t truesize = skb->truesize;
  EXPECT_EQ(pool.skb_cow_head(skb, 50), -ENOMEM);
  EXPECT_EQ(skb->head, head);
  EXPECT_EQ(skb_headroom(skb), 8u);
  EXPECT_EQ(skb->len, 20u);
  EXPECT_EQ(skb->truesize, truesize);
  EXPECT_EQ(pool.stats().alloc_failures, 1u);
  pool.consume_skb(skb);
  EXPECT_TRUE(pool.idle());
}

// ---- References and frees ----

TEST(SkbFree, OnlyTheLastReferenceFreesAndIsCounted) {
  SkbPool pool;
  SkBuff* skb = pool.alloc_skb(100);
  EXPECT_EQ(skb_get(skb), skb);
  EXPECT_TRUE(skb_shared(skb));
  pool.kfree_skb_reason(skb, SkbDropReason::kUdpCsum);
  EXPECT_EQ(pool.stats().dropped, 0u) << "a reference dropped is not a packet dropped";
  EXPECT_EQ(skb->users, 1u);
  pool.kfree_skb_reason(skb, SkbDropReason::kNoSocket);
  EXPECT_EQ(pool.stats().dropped, 1u);
  EXPECT_EQ(pool.stats().drops[static_cast<size_t>(SkbDropReason::kNoSocket)], 1u);
  EXPECT_EQ(pool.stats().drops[static_cast<size_t>(SkbDropReason::kUdpCsum)], 0u);

  SkBuff* c = pool.alloc_skb(100);
  pool.consume_skb(c);
  EXPECT_EQ(pool.stats().consumed, 1u);
  EXPECT_EQ(pool.stats().dropped, 1u);
  SkBuff* d = pool.alloc_skb(100);
  pool.kfree_skb_reason(d, SkbDropReason::kConsumed);  // SKB_CONSUMED is a consume
  EXPECT_EQ(pool.stats().consumed, 2u);
  pool.kfree_skb(nullptr);
  pool.consume_skb(nullptr);
  EXPECT_TRUE(pool.idle());
  EXPECT_STREQ(skb_drop_reason_name(SkbDropReason::kSocketRcvbuff), "SOCKET_RCVBUFF");
}

TEST(SkbFree, ShareCheckGivesAPrivateReference) {
  SkbPool pool;
  SkBuff* skb = pool.alloc_skb(100);
  EXPECT_EQ(pool.skb_share_check(skb), skb);
  skb_get(skb);
  SkBuff* mine = pool.skb_share_check(skb);
  ASSERT_NE(mine, nullptr);
  EXPECT_NE(mine, skb);
  EXPECT_EQ(skb->users, 1u);
  EXPECT_EQ(mine->head, skb->head);
  EXPECT_EQ(pool.stats().consumed, 0u);
  pool.consume_skb(mine);
  pool.consume_skb(skb);
  EXPECT_TRUE(pool.idle());
}

TEST(SkbFree, DoubleFreeAndForeignPointersAreNamed) {
  SkbPool pool;
  SkBuff* skb = pool.alloc_skb(100);
  pool.kfree_skb(skb);
  EXPECT_NE(Thrown([&] { pool.kfree_skb(skb); }).find("kfree_skb: use of a freed sk_buff"),
            std::string::npos);
  EXPECT_NE(Thrown([&] { pool.consume_skb(skb); }).find("consume_skb"), std::string::npos);
  EXPECT_THROW(pool.skb_clone(skb), std::logic_error);
  EXPECT_THROW(pool.skb_copy(skb), std::logic_error);
  SkBuff fake{};
  fake.users = 1;
  EXPECT_NE(Thrown([&] { pool.kfree_skb(&fake); }).find("not an sk_buff of this pool"),
            std::string::npos);
  EXPECT_TRUE(pool.idle());
}

TEST(SkbFree, AQueuedSkbCannotBeFreed) {
  SkbPool pool;
  SkBuffHead q;
  SkBuff* skb = pool.alloc_skb(100);
  skb_queue_tail(&q, skb);
  EXPECT_THROW(pool.kfree_skb(skb), std::logic_error);
  EXPECT_THROW(skb_queue_tail(&q, skb), std::logic_error) << "on two queues";
  EXPECT_EQ(skb_dequeue(&q), skb);
  pool.kfree_skb(skb);
  EXPECT_TRUE(pool.idle());
}

#if defined(SIMLOOP_LNX_ASAN)
// Under ASan a freed sk_buff is poisoned: the first touch is reported.
TEST(SkbFreeDeathTest, UseAfterFreeIsReportedByAsan) {
  SkbPool pool;
  SkBuff* skb = pool.alloc_skb(100);
  uint8_t* head = skb->head;
  pool.consume_skb(skb);
  EXPECT_DEATH(skb_put(skb, 1), "use-after-poison");
  EXPECT_DEATH(head[0] = 1, "use-after-poison");
}
#else
// Without ASan the freed sk_buff's users == 0 is caught.
TEST(SkbFree, UseAfterFreeIsCaught) {
  SkbPool pool;
  SkBuff* skb = pool.alloc_skb(100);
  pool.consume_skb(skb);
  EXPECT_NE(Thrown([&] { skb_put(skb, 1); }).find("use of a freed sk_buff"), std::string::npos);
  EXPECT_THROW(skb_get(skb), std::logic_error);
  EXPECT_THROW(skb_push(skb, 0), std::logic_error);
}
#endif

// ---- Allocation failures ----

TEST(SkbLimits, EveryAllocatingOperationFailsCleanly) {
  SkbPool pool(Small());
  SkBuff* skb = pool.alloc_skb(100);
  skb_put(skb, 50);
  pool.skbuff_cache().set_limit(1);
  EXPECT_EQ(pool.alloc_skb(100), nullptr);
  EXPECT_EQ(pool.skb_clone(skb), nullptr);
  EXPECT_EQ(pool.skb_copy(skb), nullptr);
  EXPECT_EQ(pool.pskb_copy(skb), nullptr);
  pool.skbuff_cache().set_limit(16);
  pool.small_head_cache()->set_limit(1);
  EXPECT_EQ(pool.alloc_skb(100), nullptr);
  EXPECT_EQ(pool.skb_copy(skb), nullptr);
  EXPECT_EQ(pool.pskb_copy(skb), nullptr);
  EXPECT_EQ(pool.skbuff_cache().stats().in_use, 1u) << "the sk_buff of a failed copy is freed";
  EXPECT_EQ(pool.heads_in_use(), 1u);
  EXPECT_EQ(pool.stats().alloc_failures, 7u);
  SkBuff* big = pool.alloc_skb(1000);  // another cache: fine
  ASSERT_NE(big, nullptr);
  pool.consume_skb(big);
  pool.consume_skb(skb);
  EXPECT_TRUE(pool.idle());
}

TEST(KmemCache, CatchesBadFreesAndKeepsAlignment) {
  KmemCache c("test-640", 640, 4);
  void* a = c.alloc();
  void* b = c.alloc();
  EXPECT_EQ(Addr(b) - Addr(a), 640u);
  EXPECT_EQ(Addr(a) % 64, 0u);
  EXPECT_THROW(c.free(static_cast<uint8_t*>(a) + 64), std::logic_error);
  int local = 0;
  EXPECT_THROW(c.free(&local), std::logic_error);
  c.free(a);
  EXPECT_NE(Thrown([&] { c.free(a); }).find("kmem_cache test-640: double free"), std::string::npos);
  EXPECT_EQ(c.alloc(), a) << "the free list is last in, first out, like SLUB's";
  c.set_limit(2);
  EXPECT_EQ(c.alloc(), nullptr);
  EXPECT_EQ(c.stats().failures, 1u);
  EXPECT_EQ(c.stats().peak, 2u);
  EXPECT_THROW(c.set_limit(5), std::invalid_argument);
  EXPECT_THROW(KmemCache("bad", 100, 4), std::invalid_argument);
  c.free(a);
  c.free(b);
  EXPECT_EQ(c.stats().in_use, 0u);
}

// ---- Queues ----

TEST(SkbQueue, FirstInFirstOutWithUnlink) {
  SkbPool pool;
  SkBuffHead q;
  skb_queue_head_init(&q);
  EXPECT_TRUE(skb_queue_empty(&q));
  SkBuff* a = pool.alloc_skb(10);
  SkBuff* b = pool.alloc_skb(10);
  SkBuff* c = pool.alloc_skb(10);
  skb_queue_tail(&q, b);
  skb_queue_tail(&q, c);
  skb_queue_head(&q, a);
  EXPECT_EQ(skb_queue_len(&q), 3u);
  EXPECT_EQ(skb_peek(&q), a);
  EXPECT_EQ(skb_peek_tail(&q), c);
  skb_unlink(b, &q);
  EXPECT_EQ(a->next, c);
  EXPECT_EQ(c->prev, a);
  EXPECT_EQ(skb_dequeue(&q), a);
  EXPECT_EQ(skb_dequeue(&q), c);
  EXPECT_EQ(skb_dequeue(&q), nullptr);
  EXPECT_EQ(skb_queue_len(&q), 0u);
  skb_queue_tail(&q, a);
  skb_queue_tail(&q, b);
  skb_queue_tail(&q, c);
  pool.skb_queue_purge(&q);
  EXPECT_TRUE(skb_queue_empty(&q));
  EXPECT_EQ(pool.stats().drops[static_cast<size_t>(SkbDropReason::kQueuePurge)], 3u);
  EXPECT_TRUE(pool.idle());
}

// ---- Socket memory ----

struct CountingSock : Sock {
  int write_space = 0;
  int data_ready = 0;
  CountingSock() {
    sk_write_space = [](Sock* s) { ++static_cast<CountingSock*>(s)->write_space; };
    sk_data_ready = [](Sock* s) { ++static_cast<CountingSock*>(s)->data_ready; };
  }
};

TEST(SockMem, BufferSizesAreDoubledAndClamped) {
  Sock sk;
  EXPECT_EQ(sk.sk_sndbuf, 212992);
  EXPECT_EQ(sk.sk_rcvbuf, 212992);
  sock_set_sndbuf(sk, 10000);
  EXPECT_EQ(sk.sk_sndbuf, 20000);
  sock_set_sndbuf(sk, 1);
  EXPECT_EQ(sk.sk_sndbuf, kSockMinSndbuf);
  sock_set_rcvbuf(sk, 1 << 30);
  EXPECT_EQ(sk.sk_rcvbuf, 2 * kSysctlRmemMax);
  sock_set_rcvbuf(sk, INT_MAX, INT_MAX);
  EXPECT_EQ(sk.sk_rcvbuf, INT_MAX - 1) << "INT_MAX / 2, doubled";
}

// The same values through this machine's own kernel: setsockopt(SO_SNDBUF
// / SO_RCVBUF) on a UDP socket and getsockopt back, with the kernel's own
// net.core.{w,r}mem_max as the clamp. Any user may make the calls.
int sysctl_int(const char* path) {
  std::FILE* f = std::fopen(path, "r");
  if (f == nullptr) return -1;
  int v = -1;
  if (std::fscanf(f, "%d", &v) != 1) v = -1;
  std::fclose(f);
  return v;
}

TEST(SockMem, BufferSizesAreWhatThisKernelSets) {
  const int wmem_max = sysctl_int("/proc/sys/net/core/wmem_max");
  const int rmem_max = sysctl_int("/proc/sys/net/core/rmem_max");
  const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  if (wmem_max < 0 || rmem_max < 0 || fd < 0) GTEST_SKIP() << "no sysctl or no socket here";
  for (int v :
       {1, 100, 2303, 2304, 2305, 4608, 50000, 106496, 212991, 212992, 300000, 1 << 30, INT_MAX}) {
    SCOPED_TRACE(v);
    Sock sk;
    sock_set_sndbuf(sk, v, wmem_max);
    sock_set_rcvbuf(sk, v, rmem_max);
    int got = 0;
    socklen_t len = sizeof got;
    ASSERT_EQ(::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof v), 0);
    ASSERT_EQ(::getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &got, &len), 0);
    EXPECT_EQ(sk.sk_sndbuf, got);
    ASSERT_EQ(::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof v), 0);
    ASSERT_EQ(::getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &got, &len), 0);
    EXPECT_EQ(sk.sk_rcvbuf, got);
  }
  ::close(fd);
}

TEST(SockMem, SendSkbsAreChargedUntilFreed) {
  SkbPool pool;
  CountingSock sk;
  sk.sk_sndbuf = 2000;
  int err = 1;
  SkBuff* a = sock_alloc_send_skb(pool, sk, 77, true, &err);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(err, 0);
  EXPECT_EQ(a->sk, &sk);
  EXPECT_EQ(a->destructor, &sock_wfree);
  EXPECT_EQ(sk_wmem_alloc_get(sk), 896);
  EXPECT_EQ(sk.sk_wmem_alloc, 897u) << "plus the socket's own reference";
  SkBuff* b = sock_alloc_send_skb(pool, sk, 1500, true, &err);
  ASSERT_NE(b, nullptr) << "896 < 2000: one more, even past the limit";
  EXPECT_EQ(sk_wmem_alloc_get(sk), 896 + 2304);
  EXPECT_EQ(sock_alloc_send_skb(pool, sk, 10, true, &err), nullptr);
  EXPECT_EQ(err, -EAGAIN);
  EXPECT_EQ(sock_alloc_send_skb(pool, sk, 10, false, &err), nullptr);
  EXPECT_EQ(err, -EAGAIN) << "a blocking sender's caller waits";
  EXPECT_EQ(sk.stats.sndbuf_full, 2u);
  EXPECT_FALSE(sock_writeable(sk));
  EXPECT_EQ(sock_wmalloc(pool, sk, 10, false), nullptr);
  sk.sk_sndbuf = 896 + 2304;  // exactly what is in flight: still full
  EXPECT_EQ(sock_alloc_send_skb(pool, sk, 10, true, &err), nullptr);
  sk.sk_sndbuf = 896 + 2304 + 1;
  SkBuff* last = sock_alloc_send_skb(pool, sk, 10, true, &err);
  ASSERT_NE(last, nullptr);
  pool.consume_skb(last);
  EXPECT_EQ(sk.write_space, 1);
  sk.write_space = 0;

  // A clone is not charged; its original still is.
  SkBuff* c = pool.skb_clone(b);
  EXPECT_EQ(c->sk, nullptr);
  EXPECT_EQ(c->destructor, nullptr);
  pool.consume_skb(b);
  EXPECT_EQ(sk_wmem_alloc_get(sk), 896);
  EXPECT_EQ(sk.write_space, 1);
  pool.consume_skb(c);
  EXPECT_EQ(sk_wmem_alloc_get(sk), 896);
  // skb_orphan uncharges at once, as a device's transmit does.
  skb_orphan(a);
  EXPECT_EQ(sk_wmem_alloc_get(sk), 0);
  EXPECT_EQ(sk.write_space, 2);
  EXPECT_TRUE(sock_writeable(sk));
  pool.consume_skb(a);
  EXPECT_EQ(sk.write_space, 2);
  EXPECT_EQ(sk.sk_wmem_alloc, 1u);
  EXPECT_TRUE(pool.idle());
}

TEST(SockMem, FollowOnSkbsStopAtTwiceTheSendBuffer) {
  SkbPool pool;
  Sock sk;
  sk.sk_sndbuf = kSockMinSndbuf;  // 4608
  std::vector<SkBuff*> skbs;
  int err = 0;
  skbs.push_back(sock_alloc_send_skb(pool, sk, 1500, true, &err));  // 2304
  for (;;) {
    SkBuff* skb = sock_alloc_append_skb(pool, sk, 1500, &err);
    if (skb == nullptr) break;
    skbs.push_back(skb);
  }
  EXPECT_EQ(err, -ENOBUFS);
  // 1 + 4 * 2304 = 9217 > 9216: the fifth is refused.
  EXPECT_EQ(skbs.size(), 4u);
  EXPECT_EQ(sk_wmem_alloc_get(sk), 4 * 2304);
  EXPECT_EQ(sk.stats.append_nobufs, 1u);
  SkBuff* forced = sock_wmalloc(pool, sk, 10, true);
  ASSERT_NE(forced, nullptr);
  skbs.push_back(forced);
  for (SkBuff* skb : skbs) pool.kfree_skb(skb);
  EXPECT_EQ(sk_wmem_alloc_get(sk), 0);
  EXPECT_TRUE(pool.idle());
}

TEST(SockMem, AnOwnerKeepsTruesizeThroughACowSoTheChargeBalances) {
  SkbPool pool;
  Sock sk;
  int err = 0;
  SkBuff* skb = sock_alloc_send_skb(pool, sk, 100, true, &err);
  skb_reserve(skb, 16);
  skb_put(skb, 50);
  ASSERT_EQ(pool.skb_cow_head(skb, 100), 0);
  EXPECT_EQ(skb_end_offset(skb), 704u);
  EXPECT_EQ(skb->truesize, 896u) << "unchanged: the socket was charged 896";
  pool.consume_skb(skb);
  EXPECT_EQ(sk_wmem_alloc_get(sk), 0);
}

TEST(SockMem, AllocationFailureIsEnobufs) {
  SkbPool pool(Small());
  Sock sk;
  pool.skbuff_cache().set_limit(0);
  int err = 0;
  EXPECT_EQ(sock_alloc_send_skb(pool, sk, 100, true, &err), nullptr);
  EXPECT_EQ(err, -ENOBUFS);
  EXPECT_EQ(sk_wmem_alloc_get(sk), 0);
}

TEST(SockMem, ReceiveQueueIsChargedAgainstRcvbuf) {
  SkbPool pool;
  CountingSock sk;
  sk.sk_rcvbuf = 2000;
  const std::vector<SkBuff*> in = {pool.alloc_skb(77), pool.alloc_skb(77), pool.alloc_skb(77),
                                   pool.alloc_skb(77)};  // truesize 896 each
  EXPECT_EQ(sk_rmem_enqueue(sk, in[0]), 0);
  EXPECT_EQ(sk_rmem_enqueue(sk, in[1]), 0);  // 1792 <= 2000
  EXPECT_EQ(sk_rmem_alloc_get(sk), 1792);
  EXPECT_EQ(sk_rmem_enqueue(sk, in[2]), -ENOMEM);  // 2688 > 2000
  EXPECT_EQ(sk.sk_drops, 1u);
  EXPECT_EQ(sk.stats.rcvbuf_errors, 1u);
  EXPECT_EQ(sk.data_ready, 2);
  EXPECT_EQ(in[2]->list, nullptr) << "refused: still the caller's";
  pool.kfree_skb_reason(in[2], SkbDropReason::kSocketRcvbuff);
  EXPECT_EQ(skb_queue_len(&sk.sk_receive_queue), 2u);

  EXPECT_EQ(sk_rmem_dequeue(sk), in[0]);
  EXPECT_EQ(sk_rmem_alloc_get(sk), 896);
  pool.consume_skb(in[0]);
  EXPECT_EQ(sk_rmem_enqueue(sk, in[3]), 0);
  sk_rmem_purge(pool, sk);
  EXPECT_EQ(sk_rmem_alloc_get(sk), 0);
  EXPECT_TRUE(skb_queue_empty(&sk.sk_receive_queue));
  EXPECT_EQ(pool.stats().dropped, 3u);
  EXPECT_EQ(pool.stats().drops[static_cast<size_t>(SkbDropReason::kSocketRcvbuff)], 1u);
  EXPECT_TRUE(pool.idle());
}

TEST(SockMem, AnEmptyQueueTakesADatagramLargerThanTheBuffer) {
  SkbPool pool;
  Sock sk;
  sk.sk_rcvbuf = kSockMinRcvbuf;
  SkBuff* big = pool.alloc_skb(9000);  // truesize 16640
  SkBuff* small = pool.alloc_skb(10);
  EXPECT_EQ(sk_rmem_enqueue(sk, big), 0);
  EXPECT_EQ(sk_rmem_enqueue(sk, small), -ENOMEM);
  pool.kfree_skb(small);
  // With a buffer beyond INT_MAX / 2 the sum is checked even when empty.
  sk_rmem_purge(pool, sk);
  sk.sk_rcvbuf = INT_MAX;
  sk.sk_rmem_alloc = INT_MAX - 100;  // as if nearly full
  SkBuff* one = pool.alloc_skb(10);
  EXPECT_EQ(sk_rmem_enqueue(sk, one), -ENOMEM);
  sk.sk_rmem_alloc = 0;
  EXPECT_EQ(sk_rmem_enqueue(sk, one), 0);
  sk_rmem_purge(pool, sk);
  EXPECT_TRUE(pool.idle());
}

TEST(SockMem, AnOwnedSkbMustBeOrphanedBeforeQueueing) {
  SkbPool pool;
  Sock tx, rx;
  int err = 0;
  SkBuff* skb = sock_alloc_send_skb(pool, tx, 10, true, &err);
  EXPECT_THROW(sk_rmem_enqueue(rx, skb), std::logic_error);
  skb_orphan(skb);
  EXPECT_EQ(sk_rmem_enqueue(rx, skb), 0);
  sk_rmem_purge(pool, rx);
  EXPECT_EQ(sk_wmem_alloc_get(tx), 0);
}

// One small datagram's life, the way UDP over loopback would use the layer:
// the sizes and how many fit in a default receive buffer.
TEST(SockMem, SmallDatagramsOnLoopback) {
  SkbPool pool;
  CountingSock tx, rx;
  const unsigned payload = 18, hh_len = 16;  // LL_RESERVED_SPACE of Ethernet
  const unsigned alloclen = 20 + 8 + payload;
  int queued = 0, refused = 0;
  for (int i = 0; i < 300; ++i) {
    int err = 0;
    SkBuff* skb = sock_alloc_send_skb(pool, tx, alloclen + hh_len + 15, true, &err);
    ASSERT_NE(skb, nullptr);
    EXPECT_EQ(skb->truesize, 896u);
    skb_reserve(skb, static_cast<int>(hh_len));
    skb_reset_network_header(skb);
    skb_put_zero(skb, alloclen);
    skb_set_transport_header(skb, 20);
    skb_push(skb, 14);  // the Ethernet header
    skb_orphan(skb);    // loopback_xmit
    skb_pull(skb, 14);  // eth_type_trans
    skb_pull(skb, 20);  // ip_local_deliver
    if (sk_rmem_enqueue(rx, skb) == 0) {
      ++queued;
    } else {
      ++refused;
      pool.kfree_skb_reason(skb, SkbDropReason::kSocketRcvbuff);
    }
  }
  // 237 * 896 = 212352 <= 212992 < 238 * 896.
  EXPECT_EQ(queued, 237);
  EXPECT_EQ(refused, 63);
  EXPECT_EQ(rx.stats.rcvbuf_errors, 63u);
  EXPECT_EQ(sk_wmem_alloc_get(tx), 0);
  EXPECT_EQ(tx.write_space, 300);
  SkBuff* first = sk_rmem_dequeue(rx);
  EXPECT_EQ(first->len, 8u + payload);
  pool.consume_skb(first);
  sk_rmem_purge(pool, rx);
  EXPECT_TRUE(pool.idle());
}

// Pages count their references; the last put frees, and a page is named
// by any address inside it.
TEST(PagePool, ReferencesDecideWhenAPageIsFreed) {
  PagePool pages(2);
  uint8_t* a = pages.alloc_page();
  uint8_t* b = pages.alloc_page();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(pages.alloc_page(), nullptr);
  EXPECT_EQ(pages.stats().failures, 1u);
  pages.get_page(a + 100);
  EXPECT_EQ(pages.page_count(a), 2u);
  EXPECT_EQ(pages.page_address(a + kFragPageSize - 1), a);
  EXPECT_FALSE(pages.put_page(a + 5));
  EXPECT_TRUE(pages.put_page(a));
  EXPECT_THROW(pages.put_page(a), std::logic_error);
  EXPECT_THROW(pages.get_page(a), std::logic_error);
  EXPECT_TRUE(pages.put_page(b));
  EXPECT_EQ(pages.in_use(), 0u);
  EXPECT_EQ(pages.stats().allocs, 2u);
  EXPECT_EQ(pages.stats().frees, 2u);
}

// skb_page_frag_refill reuses a page only the socket holds, keeps one that
// still has room, and otherwise lets go of it for a new one.
TEST(PagePool, FragRefillReusesKeepsOrReplaces) {
  PagePool pages(4);
  PageFrag pf;
  FragRefill r = skb_page_frag_refill(pages, 32, &pf);
  EXPECT_TRUE(r.ok && r.allocated && !r.freed);
  uint8_t* first = pf.page;
  pf.offset = 30000;
  r = skb_page_frag_refill(pages, 32, &pf);  // only the socket holds it
  EXPECT_TRUE(r.ok && !r.allocated);
  EXPECT_EQ(pf.offset, 0u);
  pages.get_page(pf.page);  // a frag in flight
  pf.offset = 1000;
  r = skb_page_frag_refill(pages, 32, &pf);  // room left: kept
  EXPECT_TRUE(r.ok && !r.allocated);
  EXPECT_EQ(pf.offset, 1000u);
  pf.offset = kFragPageSize - 16;
  r = skb_page_frag_refill(pages, 32, &pf);  // full and held: replaced
  EXPECT_TRUE(r.ok && r.allocated && !r.freed);
  EXPECT_NE(pf.page, first);
  EXPECT_EQ(pages.page_count(first), 1u);
  EXPECT_TRUE(pages.put_page(first));  // the frag's reference was the last
  page_frag_release(pages, &pf);
  EXPECT_EQ(pages.in_use(), 0u);
}

// A datagram in frags: copies walk head and frags, clones share the pages,
// copies take their own, and the last free puts every page.
TEST(SkbFrags, CopyCloneAndFreeFollowThePages) {
  SkbPool pool;
  PageFrag pf;
  SkBuff* skb = pool.alloc_skb(64);
  skb_put(skb, 8);
  std::memset(skb->data, 0xab, 8);
  std::vector<uint8_t> want(8, 0xab);
  for (unsigned i = 0; i < 2; ++i) {
    ASSERT_TRUE(skb_page_frag_refill(pool.pages(), 32, &pf).ok);
    pool.pages().get_page(pf.page);
    skb_fill_page_desc(skb, i, pf.page, pf.offset, 100);
    std::memset(pf.page + pf.offset, static_cast<int>(i + 1), 100);
    want.insert(want.end(), 100, static_cast<uint8_t>(i + 1));
    pf.offset += 100;
    skb_len_add(skb, 100);
  }
  EXPECT_TRUE(skb_can_coalesce(skb, 2, pf.page, pf.offset));
  EXPECT_EQ(skb_shinfo(skb)->nr_frags, 2);
  EXPECT_EQ(skb->data_len, 200u);
  std::vector<uint8_t> got(skb->len);
  ASSERT_EQ(skb_copy_bits(skb, 0, got.data(), skb->len), 0);
  SkBuff* clone = pool.skb_clone(skb);
  SkBuff* copy = pool.skb_copy(skb);
  ASSERT_NE(copy, nullptr);
  EXPECT_FALSE(skb_is_nonlinear(copy));
  EXPECT_EQ(copy->len, skb->len);
  std::vector<uint8_t> got_copy(copy->len);
  ASSERT_EQ(skb_copy_bits(copy, 0, got_copy.data(), copy->len), 0);
  EXPECT_EQ(got, got_copy);
  EXPECT_EQ(skb_copy_bits(skb, 50, got.data(), skb->len), -EFAULT);
  pool.kfree_skb(skb);
  EXPECT_EQ(pool.pages().page_count(pf.page), 3u) << "the clone still holds both frags";
  pool.kfree_skb(clone);
  pool.kfree_skb(copy);
  EXPECT_EQ(pool.pages().page_count(pf.page), 1u);
  page_frag_release(pool.pages(), &pf);
  EXPECT_TRUE(pool.idle());
}

}  // namespace
}  // namespace simloop::lnx
