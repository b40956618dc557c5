// Definitions of lnx::Stack<P>: sockets and the send path. Included from
// stack.h only; the input and receive paths are in stack_input_impl.h.
#pragma once

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace simloop::net::lnx {

// Linux's internal results, as the functions below pass them up.
inline constexpr int kNetXmitSuccess = 0;  // NET_XMIT_SUCCESS, NETDEV_TX_OK, NET_RX_SUCCESS
inline constexpr int kNetXmitDrop = 1;     // NET_XMIT_DROP, NET_RX_DROP
inline constexpr uint16_t kIpDf = 0x4000;

template <class P>
Stack<P>::Stack(core::SkbPool& pool, P& probe, Options opt)
    : pool_(pool), probe_(probe), opt_(opt) {
  init();
}

template <class P>
Stack<P>::Stack(P& probe, Options opt)
    : own_pool_(std::make_unique<core::SkbPool>(opt.pool_config())),
      pool_(*own_pool_),
      probe_(probe),
      opt_(opt) {
  init();
}

template <class P>
void Stack<P>::init() {
  if (opt_.align != AlignPolicy::none && opt_.align != AlignPolicy::strict)
    throw std::invalid_argument(
        "linux stack: alignment policy must be none or strict (Linux aligns its headers and has "
        "no copy-down fix-up)");
  if (opt_.netdev_max_backlog < 1 || opt_.nic_ring < 1 || opt_.sndbuf < 1 || opt_.rcvbuf < 1)
    throw std::invalid_argument("linux stack: queue and buffer limits must be positive");
  if (opt_.headroom < kEtherHdrLen || opt_.headroom > kMaxHeadroom)
    throw std::invalid_argument("linux stack: headroom must leave room for the Ethernet header (" +
                                std::to_string(kEtherHdrLen) + " to " +
                                std::to_string(kMaxHeadroom) + " bytes)");
  if (opt_.lo_mtu < 68 || opt_.eth_mtu < 68 || opt_.eth_mtu > kMaxEtherMtu)
    throw std::invalid_argument("linux stack: MTU out of range");
  nft_ = nft_output_chain(opt_.nft_rules);  // throws on a count out of range
  lo_.name = "lo";
  lo_.loopback = true;
  lo_.mtu = opt_.lo_mtu;
  lo_.ip = kLoopAddr;
  eth0_.name = "eth0";
  eth0_.mtu = opt_.eth_mtu;
  eth0_.addr = {0x02, 0, 0, 0, 0, 0x01};
  eth0_.ip = kHostAddr;
  // The neighbours' cached headers: destination, source, type.
  auto fill = [](HhCache& hh, const MacAddr& dst, const MacAddr& src) {
    uint8_t* h = hh.data.data() + kHhDataMod - kEtherHdrLen;
    std::memcpy(h + ether::kDst, dst.data(), kEtherAddrLen);
    std::memcpy(h + ether::kSrc, src.data(), kEtherAddrLen);
    store_be16(h + ether::kType, kEtherTypeIp);
  };
  fill(lo_hh_, MacAddr{}, lo_.addr);
  fill(peer_hh_, MacAddr{0x02, 0, 0, 0, 0, 0x02}, eth0_.addr);
  fill(bcast_hh_, MacAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, eth0_.addr);
  rt_lo_ = Route{RouteType::local, &lo_, kLoopAddr, &lo_hh_};
  rt_self_ = Route{RouteType::local, &lo_, eth0_.ip, &lo_hh_};
  rt_bcast_ = Route{RouteType::broadcast, &eth0_, eth0_.ip, &bcast_hh_};
  rt_peer_ = Route{RouteType::unicast, &eth0_, eth0_.ip, &peer_hh_};
  lo_.offload = true;
  init_veth();
}

template <class P>
Stack<P>::~Stack() {
  while (core::SkBuff* skb = core::skb_dequeue(&backlog_))
    free_skb(skb, core::SkbDropReason::kQueuePurge);
  while (core::SkBuff* skb = core::skb_dequeue(&ring_))
    free_skb(skb, core::SkbDropReason::kQueuePurge);
  for (auto& so : socks_) {
    while (core::SkBuff* skb = core::sk_rmem_dequeue(so))
      free_skb(skb, core::SkbDropReason::kQueuePurge);
    core::page_frag_release(pool_.pages(), &so.sk_frag);
  }
}

// ---- sockets ---------------------------------------------------------------

template <class P>
int Stack<P>::socket() {
  for (int s = 0; s < kMaxSockets; ++s) {
    UdpSock& so = socks_[s];
    // A closed socket whose sk_buffs are still in flight is not reused yet:
    // their destructors uncharge it.
    if (!so.open && core::sk_wmem_alloc_get(so) == 0) {
      so = UdpSock{};
      so.open = true;
      so.sk_sndbuf = opt_.sndbuf;
      so.sk_rcvbuf = opt_.rcvbuf;
      setsockopt_buffers(so);
      return s;
    }
  }
  return -1;
}

template <class P>
int Stack<P>::bind(int s, uint32_t addr, uint16_t port) {
  if (!valid(s)) return EBADF;
  for (const auto& other : socks_)
    if (other.open && port != 0 && other.lport == port) return EADDRINUSE;
  socks_[s].laddr = addr;
  socks_[s].lport = port;
  return 0;
}

template <class P>
int Stack<P>::connect(int s, uint32_t addr, uint16_t port) {
  if (!valid(s)) return EBADF;
  UdpSock& so = socks_[s];
  const Route* rt = nullptr;
  if (const int err = ip_route_output(addr, &rt); err != 0) return -err;
  if (rt->type == RouteType::broadcast && !opt_.so_broadcast) return EACCES;
  if (so.lport == 0) so.lport = next_port_++;
  so.connected = true;
  so.daddr = addr;
  so.dport = port;
  so.route = rt;
  // Linux starts inet_id at a random value; a fixed function of the flow
  // here, so that runs repeat.
  so.inet_id = static_cast<uint16_t>((addr * 2654435761U) >> 16 ^ port ^ so.lport);
  return 0;
}

template <class P>
void Stack<P>::close(int s) {
  if (!valid(s)) return;
  UdpSock& so = socks_[s];
  while (core::SkBuff* skb = core::sk_rmem_dequeue(so))
    free_skb(skb, core::SkbDropReason::kQueuePurge);
  core::page_frag_release(pool_.pages(), &so.sk_frag);
  so.open = false;
  so.lport = 0;
  so.connected = false;
}

// ---- send ------------------------------------------------------------------

// __sys_sendto: the system call's body; Linux's -errno becomes the errno the
// caller sees.
template <class P>
int Stack<P>::sendto(int s, const void* buf, int len, uint32_t dst, uint16_t dport) {
  FnScope<P> scope(probe_, Fn::sys_sendto);
  send_blocked_ = false;
  if (!valid(s)) {
    ++counters_.send_errors;
    return EBADF;
  }
  // sendto() with an address copies the sockaddr in; send() has none.
  if (dst != 0 || dport != 0) move_addr_to_kernel();
  const int err = udp_sendmsg(socks_[s], buf, len, dst, dport);
  if (err == 0)
    ++counters_.sent;
  else
    ++counters_.send_errors;
  return -err;
}

// udp_sendmsg: the destination (given, or the connected peer's), the route
// (looked up per send unless connected), one skb built, then sent.
template <class P>
int Stack<P>::udp_sendmsg(UdpSock& so, const void* buf, int len, uint32_t dst, uint16_t dport) {
  FnScope<P> scope(probe_, Fn::udp_sendmsg);
  if (len < 0 || len > 0xffff) return -EMSGSIZE;
  bool connected = false;
  if (dst == 0 && dport == 0) {
    if (!so.connected) return -EDESTADDRREQ;
    dst = so.daddr;
    dport = so.dport;
    connected = true;
  } else if (dport == 0) {
    return -EINVAL;
  }
  if (so.lport == 0) so.lport = next_port_++;  // inet_autobind
  const Route* rt = so.route;                  // sk_dst_check: the cached route, still valid
  if (!connected) {
    if (const int err = ip_route_output(dst, &rt); err != 0) return err;
    if (rt->type == RouteType::broadcast && !opt_.so_broadcast) return -EACCES;
  }
  int err = 0;
  core::SkBuff* skb = ip_make_skb(so, *rt, dst, connected, buf, len, &err);
  if (skb == nullptr) return err;
  return udp_send_skb(so, skb, rt->src, dst, dport);
}

// ip_route_output_flow over a tiny FIB: the local table (127/8, our own
// address, the broadcast address), then main's connected 10.0.0.0/24.
template <class P>
int Stack<P>::ip_route_output(uint32_t dst, const Route** rt) {
  FnScope<P> scope(probe_, Fn::ip_route_output);
  if ((dst & kLoMask) == kLoNet) {
    *rt = &rt_lo_;
  } else if (dst == eth0_.ip) {
    *rt = &rt_self_;  // our own address is local: through lo, not eth0
  } else if (dst == kBroadcastAddr || dst == 0xffffffffU) {
    *rt = &rt_bcast_;
  } else if (dst == kPeerAddr) {
    *rt = &rt_peer_;
  } else if (dst == kVethPeerAddr) {
    *rt = &rt_veth_;
  } else {
    // Off-link, or an on-link address no neighbour answers for: Linux would
    // queue for ARP and fail later; refused at once here.
    return -ENETUNREACH;
  }
  return 0;
}

// ip_make_skb: __ip_append_data builds the skb with the data, then
// __ip_make_skb writes the IP header but its length and checksum.
template <class P>
core::SkBuff* Stack<P>::ip_make_skb(UdpSock& so, const Route& rt, uint32_t dst, bool connected,
                                    const void* buf, int len, int* err) {
  FnScope<P> scope(probe_, Fn::ip_make_skb);
  core::SkBuff* skb = ip_append_data(so, rt, buf, len, err);
  if (skb == nullptr) return nullptr;
  uint8_t* iph = core::skb_network_header(skb);
  trap_ = false;
  st8(Fn::ip_make_skb, skb, iph + ip::kVhl, 0x45, "version/ihl");
  st8(Fn::ip_make_skb, skb, iph + ip::kTos, 0, "tos");
  // IP_PMTUDISC_WANT: a datagram that fits the path MTU carries DF.
  st16(Fn::ip_make_skb, skb, iph + ip::kOff, kIpDf, "frag_off");
  st8(Fn::ip_make_skb, skb, iph + ip::kTtl, 64, "ttl");
  st8(Fn::ip_make_skb, skb, iph + ip::kProto, kIpProtoUdp, "protocol");
  st32(Fn::ip_make_skb, skb, iph + ip::kSrc, rt.src, "saddr");
  st32(Fn::ip_make_skb, skb, iph + ip::kDst, dst, "daddr");
  // ip_select_ident_segs: a connected socket numbers its datagrams; an
  // unconnected DF datagram cannot be fragmented, so its ID is 0.
  const uint16_t id = connected ? ++so.inet_id : 0;
  st16(Fn::ip_make_skb, skb, iph + ip::kId, id, "id");
  if (trap_) {
    drop(Drop::alignment_fault, skb, core::SkbDropReason::kNotSpecified);
    *err = -EFAULT;
    return nullptr;
  }
  skb->dst = &rt;  // skb_dst_set
  return skb;
}

template <class P>
bool Stack<P>::send_would_block(int s) const {
  if (opt_.dontwait || s < 0 || static_cast<size_t>(s) >= socks_.size()) return false;
  const UdpSock& so = socks_[static_cast<size_t>(s)];
  return so.open && core::sk_wmem_full(so);
}

// __ip_append_data for one datagram that fits the MTU: the first skb of a
// send (sock_alloc_send_skb: charged to the socket, refused when the send
// buffer is full), hh_len of headroom for the link header, the IP and UDP
// headers' room, and the user's data copied in. Without checksum offload
// the copy also sums the data (csum_and_copy_from_user).
template <class P>
core::SkBuff* Stack<P>::ip_append_data(UdpSock& so, const Route& rt, const void* buf, int len,
                                       int* err) {
  FnScope<P> scope(probe_, Fn::ip_append_data);
  const int fragheaderlen = kIpHdrLen;
  const int transhdrlen = kUdpHdrLen;
  if (fragheaderlen + transhdrlen + len > rt.dev->mtu ||
      fragheaderlen + transhdrlen + len > 0xffff) {
    *err = -EMSGSIZE;  // Linux would fragment; not modelled
    return nullptr;
  }
  // sock_alloc_send_pskb's check, before any allocation.
  if (core::sk_wmem_full(so)) {
    ++so.stats.sndbuf_full;
    if (opt_.dontwait) {
      *err = -EAGAIN;
      SIMLOOP_PROBE(drop(Drop::no_buffers));
      ++counters_.drops[static_cast<size_t>(Drop::no_buffers)];
    } else {
      *err = -ENOBUFS;  // the caller waits (send_blocked): nothing is dropped
      send_blocked_ = true;
    }
    return nullptr;
  }
  const int fraglen = fragheaderlen + transhdrlen + len;
  const int alloc_extra = opt_.headroom + 15;
  // A head that would reach SKB_MAX_ALLOC holds only the headers; the data
  // goes to page frags on a device with scatter-gather: lo (Linux turns
  // scatter-gather off on a device that cannot offload the checksum, as
  // eth0 here).
  // With UDP_SEGMENT set, always (cork->gso_size).
  const bool paged =
      rt.dev->offload &&
      (so.gso_size != 0 || fraglen + alloc_extra >= static_cast<int>(core::kSkbMaxLinearAlloc));
  const int alloclen = paged ? fragheaderlen + transhdrlen : fraglen;
  core::SkBuff* skb = alloc_skb(static_cast<unsigned>(alloclen + alloc_extra));
  if (skb == nullptr) {
    *err = -ENOBUFS;
    SIMLOOP_PROBE(drop(Drop::no_buffers));
    ++counters_.drops[static_cast<size_t>(Drop::no_buffers)];
    return nullptr;
  }
  core::skb_set_owner_w(skb, &so);
  // lo offloads the checksum (NETIF_F_HW_CSUM); eth0 here does not.
  skb->ip_summed = rt.dev->offload ? core::CHECKSUM_PARTIAL : core::CHECKSUM_NONE;
  core::skb_reserve(skb, opt_.headroom);
  core::skb_put(skb, static_cast<unsigned>(alloclen));
  core::skb_set_network_header(skb, 0);
  skb->transport_header = static_cast<uint16_t>(skb->network_header + fragheaderlen);
  if (paged) {
    if (!append_page_frags(so, skb, buf, len)) {
      *err = -ENOBUFS;
      drop(Drop::no_buffers, skb, core::SkbDropReason::kNoMem);
      return nullptr;
    }
  } else if (len > 0) {
    uint8_t* data = skb->data + fragheaderlen + transhdrlen;
    SIMLOOP_PROBE(copy(CopyKind::uiomove, buf, data, static_cast<size_t>(len)));
    std::memcpy(data, buf, static_cast<size_t>(len));
    if (skb->ip_summed == core::CHECKSUM_NONE) {
      SIMLOOP_PROBE(cksum(data, static_cast<size_t>(len)));
      skb->csum = cksum_fold(cksum_add(data, len));
    }
  }
  *err = 0;
  return skb;
}

// __ip_append_data's paged half: the user's data copied to the socket's
// page frag, a frag per page (a run that continues the last frag extends
// it), each frag holding a page reference, every byte charged to the
// socket as it lands. False when no page is left.
template <class P>
bool Stack<P>::append_page_frags(UdpSock& so, core::SkBuff* skb, const void* buf, int len) {
  const auto* from = static_cast<const uint8_t*>(buf);
  core::PageFrag& pfrag = so.sk_frag;
  while (len > 0) {
    if (!page_frag_refill(pfrag)) return false;
    const unsigned i = core::skb_shinfo(skb)->nr_frags;
    if (core::skb_can_coalesce(skb, i, pfrag.page, pfrag.offset)) {
      // extended below
    } else if (i == core::kMaxSkbFrags) {
      return false;
    } else {
      core::skb_fill_page_desc(skb, i, pfrag.page, pfrag.offset, 0);
      pool_.pages().get_page(pfrag.page);
    }
    const int copy = std::min(len, static_cast<int>(pfrag.size - pfrag.offset));
    uint8_t* to = pfrag.page + pfrag.offset;
    SIMLOOP_PROBE(copy(CopyKind::uiomove, from, to, static_cast<size_t>(copy)));
    std::memcpy(to, from, static_cast<size_t>(copy));
    core::skb_shinfo(skb)->frags[core::skb_shinfo(skb)->nr_frags - 1].size +=
        static_cast<unsigned>(copy);
    pfrag.offset += static_cast<unsigned>(copy);
    core::skb_len_add(skb, static_cast<unsigned>(copy));
    so.sk_wmem_alloc += static_cast<uint32_t>(copy);
    from += copy;
    len -= copy;
  }
  return true;
}

// sk_page_frag_refill: room in the socket's page, a new page when the old
// one is full or still held by a datagram in flight.
template <class P>
bool Stack<P>::page_frag_refill(core::PageFrag& pfrag) {
  FnScope<P> scope(probe_, Fn::skb_page_frag_refill);
  const core::FragRefill r = core::skb_page_frag_refill(pool_.pages(), 32, &pfrag);
  if (r.freed) folio_put();
  if (r.allocated) alloc_pages();
  return r.ok;
}

// Kernel work the simulated structures do without (sendto()'s address
// copy, the page allocator's): each function stands for the kernel function
// its name says, entered where the kernel enters it, so that it is priced
// as often.
template <class P>
void Stack<P>::move_addr_to_kernel() {
  FnScope<P> scope(probe_, Fn::move_addr_to_kernel);
}
template <class P>
void Stack<P>::kmalloc_large() {
  FnScope<P> scope(probe_, Fn::kmalloc_large);
  alloc_pages();
}
template <class P>
void Stack<P>::free_large_kmalloc() {
  FnScope<P> scope(probe_, Fn::free_large_kmalloc);
  free_pages();
}
template <class P>
void Stack<P>::folio_put() {
  FnScope<P> scope(probe_, Fn::folio_put);
  free_pages();
}
template <class P>
void Stack<P>::alloc_pages() {
  FnScope<P> scope(probe_, Fn::alloc_pages);
}
template <class P>
void Stack<P>::free_pages() {
  FnScope<P> scope(probe_, Fn::free_pages);
}

// udp_send_skb: the UDP header; on lo only the pseudo-header's sum
// (udp4_hwcsum, the device finishes it: lo never does, the receiver trusts
// CHECKSUM_PARTIAL), on eth0 the whole checksum in software (udp_csum).
// A device's drop (-ENOBUFS) is not the sender's error unless IP_RECVERR.
template <class P>
int Stack<P>::udp_send_skb(UdpSock& so, core::SkBuff* skb, uint32_t src, uint32_t dst,
                           uint16_t dport) {
  FnScope<P> scope(probe_, Fn::udp_send_skb);
  uint8_t* uh = core::skb_transport_header(skb);
  const auto ulen =
      static_cast<uint16_t>(skb->len - static_cast<unsigned>(skb_transport_offset(skb)));
  trap_ = false;
  st16(Fn::udp_send_skb, skb, uh + udp::kSport, so.lport, "source");
  st16(Fn::udp_send_skb, skb, uh + udp::kDport, dport, "dest");
  st16(Fn::udp_send_skb, skb, uh + udp::kUlen, ulen, "len");
  st16(Fn::udp_send_skb, skb, uh + udp::kSum, 0, "check");
  if (trap_) {
    drop(Drop::alignment_fault, skb, core::SkbDropReason::kNotSpecified);
    return -EFAULT;
  }
  if (const int err = udp_gso_mark(so, skb); err != 0) return err;  // UDP_SEGMENT's checks
  const uint64_t pseudo = cksum_pseudo(src, dst, kIpProtoUdp, ulen);
  uint16_t ck;
  if (skb->ip_summed == core::CHECKSUM_PARTIAL) {
    skb->csum_start = skb->transport_header;
    skb->csum_offset = udp::kSum;
    ck = cksum_fold(pseudo);
  } else {
    SIMLOOP_PROBE(cksum(uh, kUdpHdrLen));
    ck = cksum_finish(cksum_add(uh, kUdpHdrLen, pseudo + skb->csum));
    if (ck == 0) ck = 0xffff;  // CSUM_MANGLED_0: 0 means "no checksum"
  }
  std::memcpy(uh + udp::kSum, &ck, 2);
  int err = ip_send_skb(skb);
  if (err == -ENOBUFS && !opt_.recverr) {
    ++so.sndbuf_errors;
    err = 0;
  }
  return err;
}

template <class P>
int Stack<P>::ip_send_skb(core::SkBuff* skb) {
  FnScope<P> scope(probe_, Fn::ip_send_skb);
  const int err = ip_local_out(skb);
  return err > 0 ? -ENOBUFS : err;  // net_xmit_errno
}

// __ip_local_out: the total length, the header checksum, the LOCAL_OUT hook
// if a table registers it (stack_nf_impl.h), then dst_output. The header's
// sum is ip_fast_csum, five words summed inline: part of the function's own
// fixed cost, not a checksum priced per byte (stack.cksum_cycles_per_byte
// prices csum_partial's sums of data).
template <class P>
int Stack<P>::ip_local_out(core::SkBuff* skb) {
  FnScope<P> scope(probe_, Fn::ip_local_out);
  uint8_t* iph = core::skb_network_header(skb);
  st16(Fn::ip_local_out, skb, iph + ip::kLen, static_cast<uint16_t>(skb->len), "tot_len");
  st16(Fn::ip_local_out, skb, iph + ip::kSum, 0, "check");
  const uint16_t ck = cksum_finish(cksum_add(iph, kIpHdrLen));
  std::memcpy(iph + ip::kSum, &ck, 2);
  skb->protocol = kEtherTypeIp;
  if (!nft_.rules.empty())
    if (const int v = nf_hook_slow(skb); v != 1) return v;
  return ip_output(skb);
}

// ip_output: the device. A broadcast route is ip_mc_output's: a clone of
// the packet loops back (dev_loopback_xmit: no copy, the head shared) and
// the packet itself goes out; neither has a function of its own in the table.
template <class P>
int Stack<P>::ip_output(core::SkBuff* skb) {
  FnScope<P> scope(probe_, Fn::ip_output);
  const Route& rt = *static_cast<const Route*>(skb->dst);
  skb->dev = rt.dev;
  if (rt.type == RouteType::broadcast) {
    if (core::SkBuff* n = pool_.skb_clone(skb); n != nullptr) {
      SIMLOOP_PROBE(alloc(Obj::skb, n));
      core::skb_reset_mac_header(n);
      n->pkt_type = core::PACKET_LOOPBACK;
      n->ip_summed = core::CHECKSUM_UNNECESSARY;
      netif_rx(n);
    } else {
      SIMLOOP_PROBE(drop(Drop::no_buffers));
      ++counters_.drops[static_cast<size_t>(Drop::no_buffers)];
    }
  }
  return ip_finish_output2(skb);
}

template <class P>
int Stack<P>::ip_finish_output2(core::SkBuff* skb) {
  FnScope<P> scope(probe_, Fn::ip_finish_output2);
  const Route& rt = *static_cast<const Route*>(skb->dst);
  if (core::skb_headroom(skb) < static_cast<unsigned>(opt_.headroom) &&
      pool_.skb_cow_head(skb, static_cast<unsigned>(opt_.headroom)) != 0) {
    drop(Drop::no_buffers, skb, core::SkbDropReason::kNoMem);
    return -ENOMEM;
  }
  return neigh_hh_output(*rt.hh, skb);
}

// neigh_hh_output: the cached header copied in whole HH_DATA_MOD blocks in
// front of the data, then pushed.
template <class P>
int Stack<P>::neigh_hh_output(const HhCache& hh, core::SkBuff* skb) {
  FnScope<P> scope(probe_, Fn::neigh_hh_output);
  // A block copy, reported as the BSD stack reports its link addresses:
  // bytewise, never a misaligned word. A what-if headroom below HH_DATA_MOD
  // (which Linux never builds: it would drop the packet) gets the header's
  // own bytes only.
  if (core::skb_headroom(skb) >= static_cast<unsigned>(kHhDataMod)) {
    SIMLOOP_PROBE(header(id(Fn::neigh_hh_output), skb->data - kHhDataMod, 1, true));
    std::memcpy(skb->data - kHhDataMod, hh.data.data(), kHhDataMod);
  } else {
    SIMLOOP_PROBE(header(id(Fn::neigh_hh_output), skb->data - hh.len, 1, true));
    std::memcpy(skb->data - hh.len, hh.data.data() + kHhDataMod - hh.len,
                static_cast<size_t>(hh.len));
  }
  core::skb_push(skb, static_cast<unsigned>(hh.len));
  return dev_queue_xmit(skb);
}

// __dev_queue_xmit: lo has no qdisc, and eth0 is treated alike (noqueue).
template <class P>
int Stack<P>::dev_queue_xmit(core::SkBuff* skb) {
  FnScope<P> scope(probe_, Fn::dev_queue_xmit);
  core::skb_reset_mac_header(skb);
  NetDevice& dev = *static_cast<const Route*>(skb->dst)->dev;
  skb->dev = &dev;
  return dev_hard_start_xmit(skb, dev);
}

template <class P>
int Stack<P>::dev_hard_start_xmit(core::SkBuff* skb, NetDevice& dev) {
  FnScope<P> scope(probe_, Fn::dev_hard_start_xmit);
  if (dev.peer != nullptr) return veth_xmit(skb, dev);
  return dev.loopback ? loopback_xmit(skb, dev) : ndo_start_xmit(skb, dev);
}

// loopback_xmit: the skb leaves its socket (the send buffer is released
// here, not when the packet is read), eth_type_trans strips the link
// header, and it is received at once.
template <class P>
int Stack<P>::loopback_xmit(core::SkBuff* skb, NetDevice& dev) {
  FnScope<P> scope(probe_, Fn::loopback_xmit);
  orphan(skb);
  const unsigned len = skb->len;
  core::skb_reset_mac_header(skb);
  core::skb_pull(skb, kEtherHdrLen);
  skb->pkt_type = core::PACKET_HOST;
  skb->protocol = kEtherTypeIp;
  if (netif_rx(skb) == kNetXmitSuccess) {
    ++dev.tx_packets;
    dev.tx_bytes += len;
  } else {
    ++dev.tx_dropped;
  }
  return kNetXmitSuccess;
}

// __netif_rx -> enqueue_to_backlog: the per-CPU backlog takes a packet while
// it holds no more than netdev_max_backlog (so up to one more than that).
template <class P>
int Stack<P>::netif_rx(core::SkBuff* skb) {
  FnScope<P> scope(probe_, Fn::netif_rx);
  ++counters_.looped;
  if (backlog_.qlen > static_cast<uint32_t>(opt_.netdev_max_backlog)) {
    ++lo_.rx_dropped;
    drop(Drop::netisr_full, skb, core::SkbDropReason::kNotSpecified);  // CPU_BACKLOG
    return kNetXmitDrop;
  }
  core::skb_queue_tail(&backlog_, skb);
  return kNetXmitSuccess;
}

// The driver's ndo_start_xmit: the frame on the transmit ring, still
// charged to its socket until completion frees it. A full ring drops it
// (a driver would stop its queue and a qdisc hold the packet).
template <class P>
int Stack<P>::ndo_start_xmit(core::SkBuff* skb, NetDevice& dev) {
  FnScope<P> scope(probe_, Fn::ndo_start_xmit);
  if (ring_.qlen >= static_cast<uint32_t>(opt_.nic_ring)) {
    ++dev.tx_dropped;
    drop(Drop::nic_full, skb, core::SkbDropReason::kFullRing);
    return kNetXmitDrop;
  }
  ++dev.tx_packets;
  dev.tx_bytes += skb->len;
  core::skb_queue_tail(&ring_, skb);
  return kNetXmitSuccess;
}

// ---- buffers ---------------------------------------------------------------

template <class P>
core::SkBuff* Stack<P>::alloc_skb(unsigned size) {
  FnScope<P> scope(probe_, Fn::alloc_skb);
  const uint64_t large = pool_.stats().large_heads;
  core::SkBuff* skb = pool_.alloc_skb(size);
  // A head above kmalloc's largest cache is whole pages.
  if (pool_.stats().large_heads != large) kmalloc_large();
  if (skb != nullptr) {
    SIMLOOP_PROBE(alloc(Obj::skb, skb));
    SIMLOOP_PROBE(alloc(Obj::skb_head, skb->head));
  }
  return skb;
}

// skb_orphan: the owner's destructor, sock_wfree, releases its charge.
template <class P>
void Stack<P>::orphan(core::SkBuff* skb) {
  // skb_orphan: the destructor runs only where one is set.
  if (skb->destructor != nullptr) sock_wfree(skb);
}

// The destructor of a sent skb: its bytes leave the socket's wmem.
template <class P>
void Stack<P>::sock_wfree(core::SkBuff* skb) {
  FnScope<P> scope(probe_, Fn::sock_wfree);
  core::skb_orphan(skb);
}

// consume_skb / kfree_skb: the last reference frees the sk_buff (its
// destructor first) and, unless a clone still shares it, the head.
template <class P>
void Stack<P>::free_skb(core::SkBuff* skb, core::SkbDropReason reason) {
  FnScope<P> scope(probe_, Fn::free_skb);
  if (skb->users == 1) {
    orphan(skb);
    SIMLOOP_PROBE(free(Obj::skb, skb));
    if (skb->cloned == 0 || core::skb_shinfo(skb)->dataref == 1)
      SIMLOOP_PROBE(free(Obj::skb_head, skb->head));
  }
  const uint64_t large = pool_.stats().large_head_frees;
  const uint64_t pages = pool_.pages().stats().frees;
  pool_.kfree_skb_reason(skb, reason);
  // What the free gave back to the page allocator: a large head, the pages
  // of frags whose last reference this was.
  if (pool_.stats().large_head_frees != large) free_large_kmalloc();
  for (uint64_t n = pool_.pages().stats().frees - pages; n > 0; --n) folio_put();
}

template <class P>
void Stack<P>::drop(Drop where, core::SkBuff* skb, core::SkbDropReason reason) {
  SIMLOOP_PROBE(drop(where));
  ++counters_.drops[static_cast<size_t>(where)];
  free_skb(skb, reason);
}

// ---- header access ---------------------------------------------------------

template <class P>
bool Stack<P>::check(Fn fn, const core::SkBuff* skb, const uint8_t* p, unsigned size, bool write,
                     const char* field) {
  SIMLOOP_PROBE(header(id(fn), p, size, write));
  (void)write;
  const auto mis = static_cast<unsigned>(reinterpret_cast<uintptr_t>(p) & (size - 1));
  if (mis == 0 || opt_.align != AlignPolicy::strict) return true;
  if (!fault_)
    fault_ = AlignmentFault{fn, field, size, static_cast<int>(p - skb->head),
                            static_cast<unsigned>(reinterpret_cast<uintptr_t>(p) & 3)};
  trap_ = true;
  return false;
}

template <class P>
uint8_t Stack<P>::ld8(Fn fn, const core::SkBuff* skb, const uint8_t* p, const char* field) {
  check(fn, skb, p, 1, false, field);
  return *p;
}
template <class P>
uint16_t Stack<P>::ld16(Fn fn, const core::SkBuff* skb, const uint8_t* p, const char* field) {
  return check(fn, skb, p, 2, false, field) ? load_be16(p) : 0;
}
template <class P>
uint32_t Stack<P>::ld32(Fn fn, const core::SkBuff* skb, const uint8_t* p, const char* field) {
  return check(fn, skb, p, 4, false, field) ? load_be32(p) : 0;
}
template <class P>
void Stack<P>::st8(Fn fn, core::SkBuff* skb, uint8_t* p, uint8_t v, const char* field) {
  check(fn, skb, p, 1, true, field);
  *p = v;
}
template <class P>
void Stack<P>::st16(Fn fn, core::SkBuff* skb, uint8_t* p, uint16_t v, const char* field) {
  if (check(fn, skb, p, 2, true, field)) store_be16(p, v);
}
template <class P>
void Stack<P>::st32(Fn fn, core::SkBuff* skb, uint8_t* p, uint32_t v, const char* field) {
  if (check(fn, skb, p, 4, true, field)) store_be32(p, v);
}

}  // namespace simloop::net::lnx

#include "sim/stack/linux/stack_input_impl.h"
