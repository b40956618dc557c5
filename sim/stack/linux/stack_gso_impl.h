// UDP GSO (UDP_SEGMENT) in lnx::Stack<P>. Included from stack_input_impl.h only.
//
// Where Linux 6.x does it for a send on lo, as perf shows on this kernel: the
// send builds one skb of paged data (cork->gso_size), udp_send_skb marks it
// SKB_GSO_UDP_L4, lo (NETIF_F_GSO_SOFTWARE) passes it whole through the
// backlog and IP input, and udp_queue_rcv_skb cuts it for a socket without
// UDP_GRO: udp_rcv_segment -> __skb_gso_segment -> inet_gso_segment ->
// __udp_gso_segment -> skb_segment. Each segment is a new sk_buff holding a
// copy of the headers and references to the sent pages; each is queued to
// the socket as a datagram of its own, and the GSO skb is consumed.
#pragma once

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace simloop::net::lnx {

inline constexpr uint32_t kSkbGsoUdpL4 = 1u << 17;  // SKB_GSO_UDP_L4
inline constexpr int kUdpMaxSegments = 128;         // UDP_MAX_SEGMENTS (Linux 6.5 on)

template <class P>
int Stack<P>::set_udp_segment(int s, int size) {
  if (!valid(s)) return EBADF;
  if (size < 0 || size > 0xffff) return EINVAL;
  socks_[s].gso_size = static_cast<uint16_t>(size);
  return 0;
}

// udp_send_skb's GSO half: the checks (the skb freed on failure), then the
// marks that make the skb one of gso_segs datagrams. A send that fits one
// segment goes as a plain datagram.
template <class P>
int Stack<P>::udp_gso_mark(const UdpSock& so, core::SkBuff* skb) {
  if (so.gso_size == 0) return 0;
  const Route& rt = *static_cast<const Route*>(skb->dst);
  const unsigned hlen = core::skb_network_header_len(skb) + kUdpHdrLen;
  const unsigned datalen = skb->len - static_cast<unsigned>(skb_transport_offset(skb)) - kUdpHdrLen;
  int err = 0;
  if (hlen + std::min<unsigned>(datalen, so.gso_size) > static_cast<unsigned>(rt.dev->mtu) ||
      datalen > static_cast<unsigned>(so.gso_size) * kUdpMaxSegments)
    err = -EINVAL;
  else if (skb->ip_summed != core::CHECKSUM_PARTIAL)
    err = -EIO;  // no checksum offload (eth0 here): Linux refuses GSO
  if (err != 0) {
    free_skb(skb, core::SkbDropReason::kNotSpecified);
    return err;
  }
  if (datalen > so.gso_size) {
    core::SkbSharedInfo* sh = core::skb_shinfo(skb);
    sh->gso_size = so.gso_size;
    sh->gso_type = kSkbGsoUdpL4;
    sh->gso_segs = static_cast<uint16_t>((datalen + so.gso_size - 1) / so.gso_size);
  }
  return 0;
}

// udp_rcv_segment, then udp_queue_rcv_skb's walk over the segments. A
// failed segmentation drops the whole send (sk_drops += gso_segs).
template <class P>
void Stack<P>::udp_rcv_segment(UdpSock& so, core::SkBuff* skb) {
  core::SkBuff* segs = udp_gso_segment(skb);
  if (segs == nullptr) {
    for (unsigned i = 0; i < core::skb_shinfo(skb)->gso_segs; ++i) {
      SIMLOOP_PROBE(drop(Drop::no_buffers));
      ++counters_.drops[static_cast<size_t>(Drop::no_buffers)];
    }
    free_skb(skb, core::SkbDropReason::kNoMem);
    return;
  }
  free_skb(skb, core::SkbDropReason::kConsumed);  // consume_skb: the segments hold the pages
  while (segs != nullptr) {
    core::SkBuff* next = segs->next;
    segs->next = segs->prev = nullptr;
    udp_queue_rcv_skb(so, segs);
    segs = next;
  }
}

// __skb_gso_segment through __udp_gso_segment: the segments' list, each
// one's IP header (total length, its ID the next, the checksum) and UDP
// header (length, the pseudo-header's sum for CHECKSUM_PARTIAL) made its
// own; nullptr when an allocation failed.
template <class P>
core::SkBuff* Stack<P>::udp_gso_segment(core::SkBuff* skb) {
  FnScope<P> scope(probe_, Fn::udp_gso_segment);
  const core::SkbSharedInfo* sh = core::skb_shinfo(skb);
  const unsigned mss = sh->gso_size;
  const unsigned datalen = skb->len - kUdpHdrLen;  // data at the UDP header
  const uint8_t* iph0 = core::skb_network_header(skb);
  const uint16_t id0 = load_be16(iph0 + ip::kId);
  const uint32_t saddr = load_be32(iph0 + ip::kSrc), daddr = load_be32(iph0 + ip::kDst);
  core::SkBuff *head = nullptr, *tail = nullptr;
  unsigned i = 0;
  for (unsigned off = 0; off < datalen; off += mss, ++i) {
    const unsigned len = std::min(mss, datalen - off);
    core::SkBuff* seg = skb_segment(skb, off, len);
    if (seg == nullptr) {
      while (head != nullptr) {
        core::SkBuff* next = head->next;
        head->next = nullptr;
        free_skb(head, core::SkbDropReason::kNoMem);
        head = next;
      }
      return nullptr;
    }
    uint8_t* iph = core::skb_network_header(seg);
    uint8_t* uh = core::skb_transport_header(seg);
    const auto ulen = static_cast<uint16_t>(kUdpHdrLen + len);
    st16(Fn::udp_gso_segment, seg, uh + udp::kUlen, ulen, "len");
    const uint16_t ck = cksum_fold(cksum_pseudo(saddr, daddr, kIpProtoUdp, ulen));
    std::memcpy(uh + udp::kSum, &ck, 2);
    st16(Fn::udp_gso_segment, seg, iph + ip::kLen, static_cast<uint16_t>(kIpHdrLen + ulen),
         "tot_len");
    st16(Fn::udp_gso_segment, seg, iph + ip::kId, static_cast<uint16_t>(id0 + i), "id");
    st16(Fn::udp_gso_segment, seg, iph + ip::kSum, 0, "check");
    const uint16_t ipck = cksum_finish(cksum_add(iph, kIpHdrLen));
    std::memcpy(iph + ip::kSum, &ipck, 2);
    if (tail != nullptr)
      tail->next = seg;
    else
      head = seg;
    tail = seg;
  }
  return head;
}

// One pass of skb_segment's loop: a new sk_buff with the GSO skb's headroom,
// a copy of its link, IP and UDP headers (skb_copy_from_linear_data_offset,
// __copy_skb_header), and frags that reference the pages holding bytes
// [off, off + len) of its data after the UDP header; data left at the UDP
// header, as udp_queue_rcv_skb pulls it. The header copy is part of the
// function's fixed cost (a few dozen bytes), not a priced copy.
template <class P>
core::SkBuff* Stack<P>::skb_segment(const core::SkBuff* skb, unsigned off, unsigned len) {
  FnScope<P> scope(probe_, Fn::skb_segment);
  const unsigned mac = skb->mac_header;
  const unsigned doffset = skb->transport_header + kUdpHdrLen - mac;
  core::SkBuff* seg = alloc_skb(mac + doffset);
  if (seg == nullptr) return nullptr;
  core::skb_reserve(seg, static_cast<int>(mac));
  core::skb_put(seg, doffset);
  std::memcpy(seg->data, skb->head + mac, doffset);
  core::skb_reset_mac_header(seg);
  core::skb_set_network_header(seg, static_cast<int>(skb->network_header - mac));
  core::skb_set_transport_header(seg, static_cast<int>(skb->transport_header - mac));
  seg->mac_len = skb->mac_len;
  seg->dev = skb->dev;
  seg->dst = skb->dst;
  seg->tstamp = skb->tstamp;
  seg->protocol = skb->protocol;
  seg->pkt_type = skb->pkt_type;
  seg->ip_summed = skb->ip_summed;
  seg->priority = skb->priority;
  seg->mark = skb->mark;
  seg->hash = skb->hash;
  // The pages: the runs of the range, each frag a page reference.
  unsigned skip = off + kUdpHdrLen;  // from skb->data, at the UDP header
  const unsigned headlen = core::skb_headlen(skb);
  if (skip < headlen) throw std::logic_error("skb_segment: a GSO skb's data is in its page frags");
  skip -= headlen;
  const core::SkbSharedInfo* from = core::skb_shinfo(skb);
  unsigned want = len;
  for (unsigned f = 0; f < from->nr_frags && want > 0; ++f) {
    const core::SkbFrag& fr = from->frags[f];
    if (skip >= fr.size) {
      skip -= fr.size;
      continue;
    }
    const unsigned n = std::min(want, fr.size - skip);
    const unsigned i = core::skb_shinfo(seg)->nr_frags;
    core::skb_fill_page_desc(seg, i, fr.page, fr.offset + skip, n);
    pool_.pages().get_page(fr.page);
    core::skb_len_add(seg, n);
    want -= n;
    skip = 0;
  }
  core::skb_pull(seg, doffset - kUdpHdrLen);
  return seg;
}

}  // namespace simloop::net::lnx
