// Socket memory accounting: the part of struct sock that sk_buffs are
// charged to, and the helpers that charge, refuse and uncharge them, with
// Linux 6.x semantics (net/core/sock.c, net/ipv4/ip_output.c, net/ipv4/udp.c).
//
// Send side: an skb allocated for a socket is charged its truesize to
// sk_wmem_alloc (skb_set_owner_w) until it is freed (sock_wfree, its
// destructor), wherever that happens. The limit is checked before charging,
// so a socket may overshoot sk_sndbuf by one skb, as in Linux.
//
// Receive side: a datagram's truesize is charged to sk_rmem_alloc from when
// it is queued until udp_rmem_release gives it back; the limit
// sk_rcvbuf is checked the way UDP does it. The reader takes datagrams off
// a queue of its own (udp_sock's reader_queue), refilled from
// sk_receive_queue a whole queue at a time, and gives their memory back in
// bulk (udp_dequeue). Not modelled: the protocol's global memory limits
// (udp_mem, sk_forward_alloc), busy polling, blocking and timeouts (the
// caller owns time: it gets -EAGAIN and decides when to try again).
#pragma once

#include <climits>
#include <cstdint>

#include "sim/stack/linux/skbuff.h"

namespace simloop::lnx {

// net.core.{w,r}mem_{default,max}: SK_WMEM_MAX = SKB_TRUESIZE(256) * 256.
inline constexpr int kSysctlWmemDefault = static_cast<int>(skb_truesize(256) * 256);
inline constexpr int kSysctlRmemDefault = kSysctlWmemDefault;
inline constexpr int kSysctlWmemMax = kSysctlWmemDefault;
inline constexpr int kSysctlRmemMax = kSysctlRmemDefault;
static_assert(kSysctlWmemDefault == 212992);
// TCP_SKB_MIN_TRUESIZE: 2048 + SKB_DATA_ALIGN(sizeof(struct sk_buff)).
inline constexpr int kSockMinRcvbuf = 2048 + static_cast<int>(kSkbStructSize);
inline constexpr int kSockMinSndbuf = 2 * kSockMinRcvbuf;

// Counts Linux keeps elsewhere (SNMP MIBs), kept per socket here.
struct SockStats {
  uint64_t sndbuf_full = 0;    // sock_alloc_send_skb refused: over sk_sndbuf (-EAGAIN)
  uint64_t append_nobufs = 0;  // a follow-on skb refused: over 2 * sk_sndbuf (-ENOBUFS)
  uint64_t rcvbuf_errors = 0;  // datagrams refused: over sk_rcvbuf (UDP_MIB_RCVBUFERRORS)
};

// The memory-accounting fields of struct sock; a protocol's socket extends
// it. Hooks are Linux's callbacks; nullptr means nobody waits.
struct Sock {
  int sk_sndbuf = kSysctlWmemDefault;
  int sk_rcvbuf = kSysctlRmemDefault;
  // refcount_t: starts at 1, the socket's own reference, which Linux drops
  // at close; sk_wmem_alloc_get() is the bytes in flight.
  uint32_t sk_wmem_alloc = 1;
  int sk_rmem_alloc = 0;  // atomic_t
  uint32_t sk_drops = 0;
  SkBuffHead sk_receive_queue;
  // udp_sock's: the reader's queue, and the truesize taken off it whose
  // release to sk_rmem_alloc is deferred (forward_deficit).
  SkBuffHead reader_queue;
  int forward_deficit = 0;
  PageFrag sk_frag;  // the page a large send's frags are carved from (one reference)
  void (*sk_write_space)(Sock* sk) = nullptr;  // after each uncharge of a sent skb
  void (*sk_data_ready)(Sock* sk) = nullptr;   // after each datagram queued
  SockStats stats;
};

inline int sk_wmem_alloc_get(const Sock& sk) {
  return static_cast<int>(sk.sk_wmem_alloc) - 1;
}
// sock_alloc_send_pskb's test: no send space until sock_wfree uncharges.
inline bool sk_wmem_full(const Sock& sk) {
  return sk_wmem_alloc_get(sk) >= sk.sk_sndbuf;
}
inline int sk_rmem_alloc_get(const Sock& sk) {
  return sk.sk_rmem_alloc;
}
// Poll's POLLOUT for datagram sockets: less than half of sk_sndbuf in flight.
inline bool sock_writeable(const Sock& sk) {
  return static_cast<int>(sk.sk_wmem_alloc) < (sk.sk_sndbuf >> 1);
}

// setsockopt SO_SNDBUF / SO_RCVBUF: clamped to the sysctl maximum, then
// doubled (the kernel's bookkeeping overhead), never below the minimum.
void sock_set_sndbuf(Sock& sk, int val, int wmem_max = kSysctlWmemMax);
void sock_set_rcvbuf(Sock& sk, int val, int rmem_max = kSysctlRmemMax);

// Charges `skb` to `sk` (orphaning it first); sock_wfree uncharges it when
// the skb is freed.
void skb_set_owner_w(SkBuff* skb, Sock* sk);
void sock_wfree(SkBuff* skb);

// The first skb of a send (udp_sendmsg -> ip_append_data): refused while
// sk_wmem_alloc >= sk_sndbuf with -EAGAIN (a blocking sender would sleep
// until sock_wfree makes room: here its caller waits and retries), or
// -ENOBUFS if memory runs out. On success *err is 0 and the skb is charged.
SkBuff* sock_alloc_send_skb(SkbPool& pool, Sock& sk, unsigned size, bool noblock, int* err);
// sock_wmalloc: an owned skb if under sk_sndbuf (or `force`), else nullptr.
SkBuff* sock_wmalloc(SkbPool& pool, Sock& sk, unsigned size, bool force);
// A follow-on skb of the same send (__ip_append_data after the first):
// refused with -ENOBUFS once sk_wmem_alloc exceeds twice sk_sndbuf. Linux
// sums the charges of one call and adds them at its end; charging each skb
// at once gives the same checks and the same total.
SkBuff* sock_alloc_append_skb(SkbPool& pool, Sock& sk, unsigned size, int* err);

// The memory half of __udp_enqueue_schedule_skb: charges the skb's truesize
// to sk_rmem_alloc and queues it, then calls sk_data_ready. Refused with
// -ENOMEM (sk_drops and rcvbuf_errors counted, the skb left to the caller,
// who frees it with SkbDropReason::kSocketRcvbuff) when rmem + truesize >
// sk_rcvbuf, unless the queue is empty (a datagram larger than the whole
// buffer still gets through) and sk_rcvbuf is below INT_MAX / 2. The skb
// must have no owner (the receive path orphans it first).
int sk_rmem_enqueue(Sock& sk, SkBuff* skb);
// __skb_recv_udp's dequeue (net/ipv4/udp.c): the first datagram of
// reader_queue, which is refilled by splicing all of sk_receive_queue into
// it when empty; nullptr if both are empty. The datagram's truesize joins
// forward_deficit. *release says that udp_rmem_release must run now: the
// deficit has reached a quarter of sk_rcvbuf (forward_threshold) or
// reader_queue is empty. One datagram read at a time releases at every
// read, a burst read back to back once or a few times.
SkBuff* udp_dequeue(Sock& sk, bool* release);
// udp_rmem_release: the deficit given back to sk_rmem_alloc, and the
// receive queue spliced onto the reader's.
void udp_rmem_release(Sock& sk);
// Takes the first datagram off the queues (reader_queue first), uncharging
// it and any deferred release at once; nullptr if both are empty.
SkBuff* sk_rmem_dequeue(Sock& sk);
// Frees every queued datagram, uncharging them (udp_destruct_common).
void sk_rmem_purge(SkbPool& pool, Sock& sk);

}  // namespace simloop::lnx
