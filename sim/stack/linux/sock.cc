#include "sim/stack/linux/sock.h"

#include <algorithm>
#include <cerrno>
#include <stdexcept>

namespace simloop::lnx {

void sock_set_sndbuf(Sock& sk, int val, int wmem_max) {
  val = std::min({val, wmem_max, INT_MAX / 2});
  sk.sk_sndbuf = std::max(val * 2, kSockMinSndbuf);
}

void sock_set_rcvbuf(Sock& sk, int val, int rmem_max) {
  val = std::min({val, rmem_max, INT_MAX / 2});
  sk.sk_rcvbuf = std::max(val * 2, kSockMinRcvbuf);
}

void skb_set_owner_w(SkBuff* skb, Sock* sk) {
  skb_orphan(skb);
  skb->sk = sk;
  skb->destructor = sock_wfree;
  sk->sk_wmem_alloc += skb->truesize;
}

void sock_wfree(SkBuff* skb) {
  Sock* sk = skb->sk;
  // The socket's own reference (1) is never the skb's to drop.
  if (sk->sk_wmem_alloc <= skb->truesize)
    skb_panic(skb, "sock_wfree", "sk_wmem_alloc would drop below the socket's own reference");
  sk->sk_wmem_alloc -= skb->truesize;
  if (sk->sk_write_space != nullptr) sk->sk_write_space(sk);
}

SkBuff* sock_alloc_send_skb(SkbPool& pool, Sock& sk, unsigned size, bool noblock, int* err) {
  (void)noblock;  // blocking or not, the caller sees -EAGAIN and owns the wait
  if (sk_wmem_alloc_get(sk) >= sk.sk_sndbuf) {
    ++sk.stats.sndbuf_full;
    *err = -EAGAIN;
    return nullptr;
  }
  SkBuff* skb = pool.alloc_skb(size);
  if (skb == nullptr) {
    *err = -ENOBUFS;
    return nullptr;
  }
  skb_set_owner_w(skb, &sk);
  *err = 0;
  return skb;
}

SkBuff* sock_wmalloc(SkbPool& pool, Sock& sk, unsigned size, bool force) {
  if (!force && static_cast<int>(sk.sk_wmem_alloc) >= sk.sk_sndbuf) return nullptr;
  SkBuff* skb = pool.alloc_skb(size);
  if (skb != nullptr) skb_set_owner_w(skb, &sk);
  return skb;
}

SkBuff* sock_alloc_append_skb(SkbPool& pool, Sock& sk, unsigned size, int* err) {
  // refcount_read(&sk->sk_wmem_alloc) + wmem_alloc_delta <= 2 * sk->sk_sndbuf
  SkBuff* skb = nullptr;
  if (static_cast<int64_t>(sk.sk_wmem_alloc) <= 2 * static_cast<int64_t>(sk.sk_sndbuf)) {
    skb = pool.alloc_skb(size);
  } else {
    ++sk.stats.append_nobufs;
  }
  if (skb == nullptr) {
    *err = -ENOBUFS;
    return nullptr;
  }
  skb_set_owner_w(skb, &sk);
  *err = 0;
  return skb;
}

int sk_rmem_enqueue(Sock& sk, SkBuff* skb) {
  skb_check_live(skb, "sk_rmem_enqueue");
  if (skb->sk != nullptr || skb->destructor != nullptr)
    skb_panic(skb, "sk_rmem_enqueue", "an owned skb: orphan it first");
  // As unsigned, so a huge sk_rcvbuf cannot wrap the sum.
  const auto rmem = static_cast<unsigned>(sk.sk_rmem_alloc);
  const auto rcvbuf = static_cast<unsigned>(sk.sk_rcvbuf);
  const unsigned size = skb->truesize;
  if (rmem + size > rcvbuf && (rcvbuf > (INT_MAX >> 1) || rmem != 0)) {
    ++sk.sk_drops;
    ++sk.stats.rcvbuf_errors;
    return -ENOMEM;
  }
  sk.sk_rmem_alloc += static_cast<int>(size);
  skb_queue_tail(&sk.sk_receive_queue, skb);
  if (sk.sk_data_ready != nullptr) sk.sk_data_ready(&sk);
  return 0;
}

SkBuff* udp_dequeue(Sock& sk, bool* release) {
  *release = false;
  if (skb_queue_empty(&sk.reader_queue)) {
    if (skb_queue_empty(&sk.sk_receive_queue)) return nullptr;
    skb_queue_splice_tail_init(&sk.sk_receive_queue, &sk.reader_queue);
  }
  SkBuff* skb = skb_dequeue(&sk.reader_queue);
  // udp_rmem_release(sk, truesize, partial = 1, ...)'s test
  sk.forward_deficit += static_cast<int>(skb->truesize);
  *release = sk.forward_deficit >= (sk.sk_rcvbuf >> 2) || skb_queue_empty(&sk.reader_queue);
  return skb;
}

void udp_rmem_release(Sock& sk) {
  sk.sk_rmem_alloc -= sk.forward_deficit;
  sk.forward_deficit = 0;
  // "this can save us from acquiring the rx queue lock on next receive"
  skb_queue_splice_tail_init(&sk.sk_receive_queue, &sk.reader_queue);
}

SkBuff* sk_rmem_dequeue(Sock& sk) {
  sk.sk_rmem_alloc -= sk.forward_deficit;
  sk.forward_deficit = 0;
  SkBuff* skb = skb_dequeue(&sk.reader_queue);
  if (skb == nullptr) skb = skb_dequeue(&sk.sk_receive_queue);
  if (skb != nullptr) sk.sk_rmem_alloc -= static_cast<int>(skb->truesize);
  return skb;
}

void sk_rmem_purge(SkbPool& pool, Sock& sk) {
  while (SkBuff* skb = sk_rmem_dequeue(sk)) pool.kfree_skb(skb);
}

}  // namespace simloop::lnx
