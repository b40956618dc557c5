// Definitions of lnx::Stack<P>: the NET_RX softirq up to the socket, the
// receiver's system call, and transmit completion. Included from
// stack_impl.h only.
#pragma once

namespace simloop::net::lnx {

// ---- softirq ---------------------------------------------------------------

// Only a packet queued by __netif_rx raises NET_RX_SOFTIRQ: with nothing
// backlogged the softirq does not run and net_rx_action is not entered.
template <class P>
int Stack<P>::netisr_run(int max) {
  if (backlog_.qlen == 0 || max <= 0) return 0;
  return net_rx_action(max);
}

// net_rx_action: polls the backlog's NAPI instance, dev_weight (64) packets
// a poll, until the budget is spent or nothing is left.
template <class P>
int Stack<P>::net_rx_action(int max) {
  FnScope<P> scope(probe_, Fn::net_rx_action);
  constexpr int kDevWeight = 64;
  int done = 0;
  while (done < max && backlog_.qlen != 0)
    done += process_backlog(std::min(kDevWeight, max - done));
  return done;
}

template <class P>
int Stack<P>::process_backlog(int quota) {
  FnScope<P> scope(probe_, Fn::process_backlog);
  int work = 0;
  while (work < quota) {
    core::SkBuff* skb = core::skb_dequeue(&backlog_);
    if (skb == nullptr) break;
    ++counters_.netisr_processed;
    netif_receive_skb_core(skb);
    ++work;
  }
  return work;
}

// __netif_receive_skb_core: the headers marked, the protocol's handler.
template <class P>
void Stack<P>::netif_receive_skb_core(core::SkBuff* skb) {
  FnScope<P> scope(probe_, Fn::netif_receive_skb_core);
  core::skb_reset_network_header(skb);
  core::skb_reset_transport_header(skb);
  skb->mac_len = static_cast<uint16_t>(skb->network_header - skb->mac_header);
  if (skb->protocol != kEtherTypeIp) {
    drop(Drop::bad_header, skb, core::SkbDropReason::kNotSpecified);
    return;
  }
  ip_rcv(skb);
}

// ip_rcv (ip_rcv_core): version, header length, checksum, total length;
// nothing is written into the packet, whose head a clone may share.
template <class P>
void Stack<P>::ip_rcv(core::SkBuff* skb) {
  FnScope<P> scope(probe_, Fn::ip_rcv);
  if (skb->pkt_type == core::PACKET_OTHERHOST) {
    drop(Drop::not_ours, skb, core::SkbDropReason::kOtherHost);
    return;
  }
  if (!core::pskb_may_pull(skb, kIpHdrLen)) {
    drop(Drop::bad_header, skb, core::SkbDropReason::kPktTooSmall);
    return;
  }
  const uint8_t* iph = skb->data;
  trap_ = false;
  const uint8_t vhl = ld8(Fn::ip_rcv, skb, iph + ip::kVhl, "version/ihl");
  const uint16_t tot_len = ld16(Fn::ip_rcv, skb, iph + ip::kLen, "tot_len");
  if (trap_) {
    drop(Drop::alignment_fault, skb, core::SkbDropReason::kNotSpecified);
    return;
  }
  const unsigned ihl = (vhl & 0x0fu) * 4;
  if ((vhl >> 4) != 4 || ihl < kIpHdrLen || !core::pskb_may_pull(skb, ihl)) {
    drop(Drop::bad_header, skb, core::SkbDropReason::kIpInHdr);
    return;
  }
  // ip_fast_csum, inline: the function's own fixed cost (ip_local_out says why).
  if (cksum_finish(cksum_add(iph, static_cast<int>(ihl))) != 0) {
    drop(Drop::bad_header, skb, core::SkbDropReason::kIpCsum);
    return;
  }
  if (skb->len < tot_len || tot_len < ihl) {
    drop(Drop::bad_header, skb, core::SkbDropReason::kPktTooSmall);
    return;
  }
  core::pskb_trim(skb, tot_len);
  skb->transport_header = static_cast<uint16_t>(skb->network_header + ihl);
  ip_rcv_finish(skb);
}

// ip_rcv_finish: a looped packet keeps the output route it was sent with
// (lo keeps dst), whose input is local delivery; only a packet without one
// is looked up (ip_route_input_noref), in the local table.
template <class P>
void Stack<P>::ip_rcv_finish(core::SkBuff* skb) {
  FnScope<P> scope(probe_, Fn::ip_rcv_finish);
  if (skb->dst == nullptr) {
    const uint32_t daddr = ld32(Fn::ip_rcv_finish, skb, skb->data + ip::kDst, "daddr");
    if (!ip_route_input(skb, daddr)) {
      drop(Drop::not_ours, skb, core::SkbDropReason::kIpOutNoRoutes);
      return;
    }
  }
  ip_local_deliver(skb);
}

// ip_local_deliver (and _finish): the IP header pulled, the protocol's handler.
template <class P>
void Stack<P>::ip_local_deliver(core::SkBuff* skb) {
  FnScope<P> scope(probe_, Fn::ip_local_deliver);
  const uint8_t proto = ld8(Fn::ip_local_deliver, skb, skb->data + ip::kProto, "protocol");
  core::skb_pull(skb, core::skb_network_header_len(skb));
  if (proto != kIpProtoUdp) {
    drop(Drop::bad_header, skb, core::SkbDropReason::kIpNoProto);
    return;
  }
  udp_rcv(skb);
}

template <class P>
void Stack<P>::udp_rcv(core::SkBuff* skb) {
  FnScope<P> scope(probe_, Fn::udp_rcv);
  udp4_lib_rcv(skb);
}

// __udp4_lib_rcv: the length, the checksum unless the device vouched for it
// (CHECKSUM_PARTIAL from lo, UNNECESSARY for a looped broadcast), the
// socket. A broadcast goes to the one matching socket here (Linux's
// __udp4_lib_mcast_deliver would clone it for each). No socket: the ICMP
// port unreachable Linux sends is only counted.
template <class P>
void Stack<P>::udp4_lib_rcv(core::SkBuff* skb) {
  FnScope<P> scope(probe_, Fn::udp4_lib_rcv);
  if (!core::pskb_may_pull(skb, kUdpHdrLen)) {
    drop(Drop::bad_header, skb, core::SkbDropReason::kPktTooSmall);
    return;
  }
  const uint8_t* uh = skb->data;
  const uint8_t* iph = core::skb_network_header(skb);
  trap_ = false;
  const uint16_t sport = ld16(Fn::udp4_lib_rcv, skb, uh + udp::kSport, "source");
  const uint16_t dport = ld16(Fn::udp4_lib_rcv, skb, uh + udp::kDport, "dest");
  const uint16_t ulen = ld16(Fn::udp4_lib_rcv, skb, uh + udp::kUlen, "len");
  const uint16_t check = ld16(Fn::udp4_lib_rcv, skb, uh + udp::kSum, "check");
  const uint32_t saddr = ld32(Fn::udp4_lib_rcv, skb, iph + ip::kSrc, "saddr");
  const uint32_t daddr = ld32(Fn::udp4_lib_rcv, skb, iph + ip::kDst, "daddr");
  if (trap_) {
    drop(Drop::alignment_fault, skb, core::SkbDropReason::kNotSpecified);
    return;
  }
  if (ulen > skb->len || ulen < kUdpHdrLen) {
    drop(Drop::bad_header, skb, core::SkbDropReason::kPktTooSmall);
    return;
  }
  core::pskb_trim(skb, ulen);
  const bool trusted =
      skb->ip_summed == core::CHECKSUM_PARTIAL || skb->ip_summed == core::CHECKSUM_UNNECESSARY;
  if (check != 0 && !trusted) {
    SIMLOOP_PROBE(cksum(uh, ulen));
    const uint64_t sum = cksum_add(uh, ulen, cksum_pseudo(saddr, daddr, kIpProtoUdp, ulen));
    if (cksum_finish(sum) != 0) {
      drop(Drop::bad_header, skb, core::SkbDropReason::kUdpCsum);
      return;
    }
    skb->ip_summed = core::CHECKSUM_UNNECESSARY;
  }
  const int s = udp4_lib_lookup(saddr, sport, daddr, dport);
  if (s < 0) {
    drop(Drop::no_port, skb, core::SkbDropReason::kNoSocket);
    return;
  }
  // A GSO skb is cut into datagrams first (udp_queue_rcv_skb's
  // udp_rcv_segment), each then queued as one.
  if (core::skb_shinfo(skb)->gso_size != 0)
    udp_rcv_segment(socks_[s], skb);
  else
    udp_queue_rcv_skb(socks_[s], skb);
}

// __udp4_lib_lookup: the best-scoring socket bound to the port: a bound
// address must match, a connected socket takes only its peer's datagrams.
template <class P>
int Stack<P>::udp4_lib_lookup(uint32_t saddr, uint16_t sport, uint32_t daddr, uint16_t dport) {
  FnScope<P> scope(probe_, Fn::udp4_lib_lookup);
  int best = -1, best_score = -1;
  for (int s = 0; s < kMaxSockets; ++s) {
    const UdpSock& so = socks_[s];
    if (!so.open || so.lport != dport) continue;
    int score = 0;
    if (so.laddr != 0) {
      if (so.laddr != daddr) continue;
      score += 4;
    }
    if (so.connected) {
      if (so.daddr != saddr || so.dport != sport) continue;
      score += 8;
    }
    if (score > best_score) {
      best = s;
      best_score = score;
    }
  }
  return best;
}

template <class P>
void Stack<P>::udp_queue_rcv_skb(UdpSock& so, core::SkBuff* skb) {
  FnScope<P> scope(probe_, Fn::udp_queue_rcv_skb);
  udp_enqueue_schedule_skb(so, skb);
}

// __udp_enqueue_schedule_skb: the receive buffer's accounting (sock.h); a
// full buffer drops the datagram and counts it as Linux does
// (sk_drops, UDP_MIB_RCVBUFERRORS).
template <class P>
void Stack<P>::udp_enqueue_schedule_skb(UdpSock& so, core::SkBuff* skb) {
  FnScope<P> scope(probe_, Fn::udp_enqueue_schedule_skb);
  const unsigned len = skb->len - kUdpHdrLen;
  if (core::sk_rmem_enqueue(so, skb) != 0) {
    drop(Drop::sockbuf_full, skb, core::SkbDropReason::kSocketRcvbuff);
    return;
  }
  ++so.received;
  so.received_bytes += len;
  ++counters_.delivered;
  counters_.delivered_bytes += len;
}

// ---- receive ---------------------------------------------------------------

template <class P>
int Stack<P>::recvfrom(int s, void* buf, int maxlen, int* got, uint32_t* src, uint16_t* sport) {
  FnScope<P> scope(probe_, Fn::sys_recvfrom);
  if (!valid(s)) return EBADF;
  return -udp_recvmsg(socks_[s], buf, maxlen, got, src, sport);
}

// udp_recvmsg: the first datagram of the reader's queue (its memory given
// back in bulk: udp_dequeue), its data after the UDP header copied out,
// the source filled in.
template <class P>
int Stack<P>::udp_recvmsg(UdpSock& so, void* buf, int maxlen, int* got, uint32_t* src,
                          uint16_t* sport) {
  FnScope<P> scope(probe_, Fn::udp_recvmsg);
  bool release = false;
  core::SkBuff* skb = core::udp_dequeue(so, &release);
  if (skb == nullptr) return -EAGAIN;
  if (release) udp_rmem_release(so);
  const int ulen = static_cast<int>(skb->len) - kUdpHdrLen;
  const int copied = std::max(0, std::min(ulen, maxlen));  // MSG_TRUNC past maxlen
  if (!core::skb_is_nonlinear(skb)) {
    copy_linear_skb(skb, buf, copied);
  } else if (copied > 0) {
    skb_copy_datagram_iter(skb, kUdpHdrLen, buf, copied);
  }
  if (src != nullptr)
    *src = ld32(Fn::udp_recvmsg, skb, core::skb_network_header(skb) + ip::kSrc, "saddr");
  if (sport != nullptr) *sport = ld16(Fn::udp_recvmsg, skb, skb->data + udp::kSport, "source");
  *got = copied;
  skb_consume_udp(skb);
  return 0;
}

// Priced apart from udp_recvmsg: a burst read back to back releases once
// or a few times, not per datagram.
template <class P>
void Stack<P>::udp_rmem_release(UdpSock& so) {
  FnScope<P> scope(probe_, Fn::udp_rmem_release);
  core::udp_rmem_release(so);
}

// Inline in Linux (include/net/udp.h), and called for every linear
// datagram, empty or not (so a 0-byte read costs what it did before it was
// priced apart): copy_to_iter's checks of the user buffer and the kernel
// object are its cost, the bytes the copy's.
template <class P>
void Stack<P>::copy_linear_skb(const core::SkBuff* skb, void* to, int len) {
  FnScope<P> scope(probe_, Fn::copy_linear_skb);
  if (len <= 0) return;
  SIMLOOP_PROBE(copy(CopyKind::to_user, skb->data + kUdpHdrLen, to, static_cast<size_t>(len)));
  core::skb_copy_bits(skb, kUdpHdrLen, to, static_cast<unsigned>(len));
}

template <class P>
void Stack<P>::skb_copy_datagram_iter(const core::SkBuff* skb, int offset, void* to, int len) {
  FnScope<P> scope(probe_, Fn::skb_copy_datagram_iter);
  // Reported and copied per run: the head's bytes, then each frag's.
  auto* out = static_cast<uint8_t*>(to);
  core::skb_for_each_run(skb, static_cast<unsigned>(offset), static_cast<unsigned>(len),
                         [&](const uint8_t* src, unsigned n) {
                           SIMLOOP_PROBE(copy(CopyKind::to_user, src, out, n));
                           std::memcpy(out, src, n);
                           out += n;
                         });
}

template <class P>
void Stack<P>::skb_consume_udp(core::SkBuff* skb) {
  FnScope<P> scope(probe_, Fn::skb_consume_udp);
  free_skb(skb, core::SkbDropReason::kConsumed);
}

// ---- transmit completion ---------------------------------------------------

// Nothing on the ring, no completion interrupt: the clean-up is not entered.
template <class P>
int Stack<P>::nic_txeof(int max) {
  if (ring_.qlen == 0 || max <= 0) return 0;
  return nic_clean_tx_irq(max);
}

// The driver's clean_tx_irq: sent frames freed (napi_consume_skb), which
// releases their sockets' send buffer.
template <class P>
int Stack<P>::nic_clean_tx_irq(int max) {
  FnScope<P> scope(probe_, Fn::nic_clean_tx_irq);
  int done = 0;
  while (done < max) {
    core::SkBuff* skb = core::skb_dequeue(&ring_);
    if (skb == nullptr) break;
    free_skb(skb, core::SkbDropReason::kConsumed);
    ++done;
  }
  return done;
}

}  // namespace simloop::net::lnx

#include "sim/stack/linux/stack_gso_impl.h"
