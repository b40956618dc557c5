// Definitions of Stack<P>; included from stack.h only.
#pragma once

namespace simloop::net::bsd {

template <class P>
Stack<P>::Stack(MbufPool& pool, P& probe, StackOptions opt)
    : opt_(opt), probe_(probe), mb_(pool, probe) {
  init();
}

template <class P>
Stack<P>::Stack(std::unique_ptr<MbufPool> own, P& probe, StackOptions opt)
    : own_pool_(std::move(own)), opt_(opt), probe_(probe), mb_(*own_pool_, probe) {
  init();
}

template <class P>
void Stack<P>::init() {
  if (opt_.max_linkhdr < 0 || opt_.max_protohdr < kUdpIpHdrLen || max_hdr() >= kMHLen)
    throw std::invalid_argument("stack: max_linkhdr/max_protohdr out of range");
  if (opt_.netisr_maxlen < 1 || opt_.nic_ring < 1 || opt_.so_sndbuf < 1 || opt_.so_rcvbuf < 1)
    throw std::invalid_argument("stack: queue limits must be positive");
  if (opt_.sockaddr_misalign < 0 || opt_.sockaddr_misalign > 3)
    throw std::invalid_argument("stack: sockaddr_misalign must be 0..3");
  udp_in()[0] = 16;  // sin_len
  udp_in()[1] = 2;   // AF_INET
  lo0_.name = "lo0";
  lo0_.flags = IFF_LOOPBACK;
  lo0_.mtu = opt_.loop_mtu;
  lo0_.addr = kLoopAddr;
  em0_.name = "em0";
  em0_.flags = IFF_BROADCAST | IFF_SIMPLEX;
  em0_.mtu = opt_.ether_mtu;
  em0_.mac = {0x02, 0, 0, 0, 0, 0x01};
  em0_.addr = kHostAddr;
  peer_mac_ = {0x02, 0, 0, 0, 0, 0x02};
  netisr_.maxlen = opt_.netisr_maxlen;
  nic_.maxlen = opt_.nic_ring;
}

template <class P>
Stack<P>::~Stack() {
  mb_.freem_queue(netisr_.head);
  mb_.freem_queue(nic_.head);
  for (auto& so : sockets_) mb_.freem_queue(so.rcv.head);
}

// ---- sockets ---------------------------------------------------------------

template <class P>
int Stack<P>::socket() {
  for (int s = 0; s < kMaxSockets; ++s) {
    if (!sockets_[s].open) {
      sockets_[s] = Socket{};
      sockets_[s].open = true;
      sockets_[s].rcv.maxlen = INT_MAX;
      return s;
    }
  }
  return -1;
}

template <class P>
int Stack<P>::bind(int s, uint32_t addr, uint16_t port) {
  if (s < 0 || s >= kMaxSockets || !sockets_[s].open) return EBADF;
  for (const auto& other : sockets_)
    if (other.open && other.lport == port && port != 0) return EADDRINUSE;
  sockets_[s].laddr = addr;
  sockets_[s].lport = port;
  return 0;
}

template <class P>
void Stack<P>::close(int s) {
  if (s < 0 || s >= kMaxSockets || !sockets_[s].open) return;
  mb_.freem_queue(sockets_[s].rcv.head);
  sockets_[s] = Socket{};
}

// sendto() -> sosend_dgram(): the datagram goes into a fresh chain with
// max_hdr bytes reserved in front, then down the protocol.
template <class P>
int Stack<P>::sendto(int s, const void* buf, int len, uint32_t dst, uint16_t dport) {
  FnScope<P> scope(probe_, Fn::sendto);
  if (s < 0 || s >= kMaxSockets || !sockets_[s].open) return EBADF;
  const int error = sosend_dgram(sockets_[s], buf, len, dst, dport);
  if (error == 0)
    ++counters_.sent;
  else
    ++counters_.send_errors;
  return error;
}

// sosend_dgram(): a function of its own, as in the kernel, so that its scope
// is entered exactly when it is called.
template <class P>
int Stack<P>::sosend_dgram(Socket& so, const void* buf, int len, uint32_t dst, uint16_t dport) {
  FnScope<P> scope(probe_, Fn::sosend_dgram);
  if (len < 0 || len > opt_.so_sndbuf) return EMSGSIZE;
  Mbuf* m;
  {
    // Mbufs::uiotombuf's scope, around its one call: the mbuf layer names no
    // stack's functions.
    FnScope<P> uio(probe_, Fn::m_uiotombuf);
    m = mb_.uiotombuf(buf, len, max_hdr());
  }
  if (m == nullptr) {
    SIMLOOP_PROBE(drop(Drop::no_buffers));
    ++counters_.drops[static_cast<size_t>(Drop::no_buffers)];
    return ENOBUFS;
  }
  return udp_output(so, m, dst, dport);
}

template <class P>
int Stack<P>::recvfrom(int s, void* buf, int maxlen, int* got, uint32_t* src, uint16_t* sport) {
  const bool open = s >= 0 && s < kMaxSockets && sockets_[s].open;
  // With nothing to receive (or no such socket) it returns at once.
  FnScope<P> scope(probe_, Fn::soreceive,
                   open && sockets_[s].rcv.len > 0 ? Call::work : Call::idle);
  if (!open) return EBADF;
  Socket& so = sockets_[s];
  Mbuf* rec = so.rcv.pop();
  if (rec == nullptr) return EWOULDBLOCK;
  // A record is an MT_SONAME mbuf with the sender's address, then the data.
  Mbuf* data = rec->m_next;
  if (src != nullptr) *src = load_be32(rec->m_data + 4);
  if (sport != nullptr) *sport = load_be16(rec->m_data + 2);
  const int len = data != nullptr ? data->pkthdr().len : 0;
  const int n = std::min(len, maxlen);
  if (n > 0) mb_.copydata(data, 0, n, buf, CopyKind::uiomove);
  so.rcv_cc -= len + rec->m_len;
  *got = n;
  mb_.freem(rec);
  return 0;
}

// ---- output ----------------------------------------------------------------

template <class P>
bool Stack<P>::is_local(uint32_t dst) const {
  return (dst >> 24) == 127 || dst == em0_.addr || dst == kBroadcastAddr || dst == 0xffffffffU;
}

template <class P>
const MacAddr* Stack<P>::arp_lookup(uint32_t dst) const {
  if (dst == kPeerAddr) return &peer_mac_;
  if (dst == em0_.addr) return &em0_.mac;
  return nullptr;
}

// udp_output(): prepend the udpiphdr, fill the UDP header, checksum it over
// the pseudo-header and the data, and hand the packet to ip_output().
template <class P>
int Stack<P>::udp_output(Socket& so, Mbuf* m, uint32_t dst, uint16_t dport) {
  FnScope<P> scope(probe_, Fn::udp_output);
  const int len = m->pkthdr().len;
  if (len + kUdpIpHdrLen > kIpMaxPacket) {
    mb_.freem(m);
    return EMSGSIZE;
  }
  // Route: which interface, which source address.
  Ifnet* ifp;
  bool bcast = false;
  if ((dst >> 24) == 127) {
    ifp = &lo0_;
  } else if (dst == em0_.addr) {
    ifp = opt_.useloopback ? &lo0_ : &em0_;
  } else if (dst == kBroadcastAddr || dst == 0xffffffffU) {
    ifp = &em0_;
    bcast = true;
  } else if ((dst & kNetmask) == (em0_.addr & kNetmask)) {
    ifp = &em0_;
  } else {
    mb_.freem(m);
    return EHOSTUNREACH;
  }
  const uint32_t src = (dst >> 24) == 127 ? kLoopAddr : em0_.addr;
  if (so.lport == 0) so.lport = next_port_++;

  m = mb_.prepend(m, kUdpIpHdrLen);
  if (m == nullptr) {
    SIMLOOP_PROBE(drop(Drop::no_buffers));
    ++counters_.drops[static_cast<size_t>(Drop::no_buffers)];
    return ENOBUFS;
  }
  if (m->m_len < kUdpIpHdrLen) {  // a header split across mbufs is not built here
    mb_.freem(m);
    return ENOBUFS;
  }
  const int uh = kIpHdrLen;
  const auto ulen = static_cast<uint16_t>(len + kUdpHdrLen);
  trap_ = false;
  st16(Fn::udp_output, m, uh + udp::kSport, so.lport, "uh_sport");
  st16(Fn::udp_output, m, uh + udp::kDport, dport, "uh_dport");
  st16(Fn::udp_output, m, uh + udp::kUlen, ulen, "uh_ulen");
  st16(Fn::udp_output, m, uh + udp::kSum, 0, "uh_sum");
  if (trap_) return drop_faulted(m);
  SIMLOOP_PROBE(cksum(m->m_data + uh, ulen));
  uint64_t sum = cksum_pseudo(src, dst, kIpProtoUdp, ulen);
  sum = cksum_chain(m, uh, ulen, sum);
  uint16_t ck = cksum_finish(sum);
  if (ck == 0) ck = 0xffff;  // 0 means "no checksum" in UDP
  std::memcpy(m->m_data + uh + udp::kSum, &ck, 2);
  return ip_output(m, ifp, src, dst, bcast);
}

// ip_output(): fill the IP header and its checksum; no options, no
// fragmentation (a datagram over the MTU is EMSGSIZE).
template <class P>
int Stack<P>::ip_output(Mbuf* m, Ifnet* ifp, uint32_t src, uint32_t dst, bool bcast) {
  FnScope<P> scope(probe_, Fn::ip_output);
  const int len = m->pkthdr().len;
  if (len > ifp->mtu) {
    mb_.freem(m);
    return EMSGSIZE;
  }
  trap_ = false;
  st8(Fn::ip_output, m, ip::kVhl, 0x45, "ip_vhl");
  st8(Fn::ip_output, m, ip::kTos, 0, "ip_tos");
  st16(Fn::ip_output, m, ip::kLen, static_cast<uint16_t>(len), "ip_len");
  st16(Fn::ip_output, m, ip::kId, ip_id_++, "ip_id");
  st16(Fn::ip_output, m, ip::kOff, 0, "ip_off");
  st8(Fn::ip_output, m, ip::kTtl, 64, "ip_ttl");
  st8(Fn::ip_output, m, ip::kProto, kIpProtoUdp, "ip_p");
  st16(Fn::ip_output, m, ip::kSum, 0, "ip_sum");
  st32(Fn::ip_output, m, ip::kSrc, src, "ip_src");
  st32(Fn::ip_output, m, ip::kDst, dst, "ip_dst");
  if (trap_) return drop_faulted(m);
  SIMLOOP_PROBE(cksum(m->m_data, kIpHdrLen));
  const uint16_t ck = cksum_finish(cksum_add(m->m_data, kIpHdrLen));
  std::memcpy(m->m_data + ip::kSum, &ck, 2);
  if ((ifp->flags & IFF_LOOPBACK) != 0) return looutput(ifp, m);
  return ether_output(ifp, m, dst, bcast);
}

template <class P>
int Stack<P>::looutput(Ifnet* ifp, Mbuf* m) {
  FnScope<P> scope(probe_, Fn::looutput);
  ifp->opackets++;
  ifp->obytes += static_cast<uint64_t>(m->pkthdr().len);
  return if_simloop(ifp, m, 0);
}

// ether_output(): resolve the link address, prepend the Ethernet header,
// and on a simplex interface loop broadcasts (a copy) and frames to
// ourselves (the frame itself) back through if_simloop().
template <class P>
int Stack<P>::ether_output(Ifnet* ifp, Mbuf* m, uint32_t dst, bool bcast) {
  FnScope<P> scope(probe_, Fn::ether_output);
  static constexpr MacAddr kBroadcastMac = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  const MacAddr* edst = bcast ? &kBroadcastMac : arp_lookup(dst);
  if (edst == nullptr) {
    mb_.freem(m);
    return EHOSTUNREACH;
  }
  if (bcast) m->m_flags |= M_BCAST;
  m = mb_.prepend(m, kEtherHdrLen);
  if (m == nullptr) {
    SIMLOOP_PROBE(drop(Drop::no_buffers));
    ++counters_.drops[static_cast<size_t>(Drop::no_buffers)];
    return ENOBUFS;
  }
  SIMLOOP_PROBE(header(bsd::id(Fn::ether_output), m->m_data + ether::kDst, 1, true));
  std::memcpy(m->m_data + ether::kDst, edst->data(), kEtherAddrLen);
  SIMLOOP_PROBE(header(bsd::id(Fn::ether_output), m->m_data + ether::kSrc, 1, true));
  std::memcpy(m->m_data + ether::kSrc, ifp->mac.data(), kEtherAddrLen);
  trap_ = false;
  st16(Fn::ether_output, m, ether::kType, kEtherTypeIp, "ether_type");
  if (trap_) return drop_faulted(m);

  if ((ifp->flags & IFF_SIMPLEX) != 0) {
    if ((m->m_flags & M_BCAST) != 0) {
      Mbuf* n = opt_.loop_copy == LoopCopy::m_copy ? mb_.copym(m, 0, kMCopyAll) : mb_.dup(m);
      if (n != nullptr) {
        if_simloop(ifp, n, kEtherHdrLen);
      } else {
        SIMLOOP_PROBE(drop(Drop::no_buffers));
        ++counters_.drops[static_cast<size_t>(Drop::no_buffers)];
      }
    } else if (*edst == ifp->mac) {
      return if_simloop(ifp, m, kEtherHdrLen);
    }
  }
  return ether_output_frame(ifp, m);
}

template <class P>
int Stack<P>::ether_output_frame(Ifnet* ifp, Mbuf* m) {
  FnScope<P> scope(probe_, Fn::ether_output_frame);
  if (nic_.full()) {
    drop(Drop::nic_full, m);
    return ENOBUFS;
  }
  ifp->opackets++;
  ifp->obytes += static_cast<uint64_t>(m->pkthdr().len);
  nic_.push(m);
  return 0;
}

// if_simloop(): the packet comes back in on `ifp`: strip the link header,
// fix the alignment as the policy says, and queue it for the netisr.
template <class P>
int Stack<P>::if_simloop(Ifnet* ifp, Mbuf* m, int hlen) {
  FnScope<P> scope(probe_, Fn::if_simloop);
  ++counters_.looped;
  m->pkthdr().rcvif = ifp;
  if (hlen > 0) mb_.adj(m, hlen);
  // Like FreeBSD's if_simloop, a packet that cannot be queued is dropped
  // and counted; the sender is not told.
  m = align_fixup(m);
  if (m == nullptr) {
    SIMLOOP_PROBE(drop(Drop::no_buffers));
    ++counters_.drops[static_cast<size_t>(Drop::no_buffers)];
    return 0;
  }
  if (netisr_.full()) {
    drop(Drop::netisr_full, m);
    return 0;
  }
  ifp->ipackets++;
  netisr_.push(m);
  return 0;
}

template <class P>
Mbuf* Stack<P>::align_fixup(Mbuf* m) {
  const auto mis = static_cast<int>(mtod_addr(m) & 3);
  if (mis == 0) return m;
  switch (opt_.align) {
    case AlignPolicy::none:
    case AlignPolicy::strict:
      return m;
    case AlignPolicy::copy_down:
      if (m_writable(m) && m_leadingspace(m) >= mis) {
        SIMLOOP_PROBE(copy(CopyKind::align_fixup, m->m_data, m->m_data - mis, m->m_len));
        std::memmove(m->m_data - mis, m->m_data, static_cast<size_t>(m->m_len));
        m->m_data -= mis;
        return m;
      } else {
        // Shared or read-only storage must not be written: the first
        // mbuf's data goes into a fresh mbuf at a 4-byte boundary.
        return mb_.copyup(m, std::min(m->m_len, kMHLen), 0);
      }
    case AlignPolicy::copy_down_unsafe: {
      // Deliberately wrong: ignores whether the storage is shared.
      const auto room = static_cast<int>(m->m_data - m_bufstart(m));
      if (room < mis) return m;
      SIMLOOP_PROBE(copy(CopyKind::align_fixup, m->m_data, m->m_data - mis, m->m_len));
      std::memmove(m->m_data - mis, m->m_data, static_cast<size_t>(m->m_len));
      m->m_data -= mis;
      return m;
    }
  }
  return m;
}

// ---- input -----------------------------------------------------------------

// The netisr's run over its input queue. It is entered on every call, an
// empty queue included (the harness calls it after every send, whatever the
// destination): its code runs then too.
template <class P>
int Stack<P>::netisr_run(int max) {
  // Polled with nothing queued, it only looks.
  FnScope<P> scope(probe_, Fn::netisr_dispatch, netisr_.len == 0 ? Call::idle : Call::work);
  int done = 0;
  while (done < max) {
    Mbuf* m = netisr_.pop();
    if (m == nullptr) break;
    ++counters_.netisr_processed;
    ip_input(m);
    ++done;
  }
  return done;
}

template <class P>
void Stack<P>::drop(Drop where, Mbuf* m) {
  SIMLOOP_PROBE(drop(where));
  ++counters_.drops[static_cast<size_t>(where)];
  mb_.freem(m);
}

// A header store trapped on output: the store was not done, so the packet
// must not go on with a half-written header.
template <class P>
int Stack<P>::drop_faulted(Mbuf* m) {
  drop(Drop::alignment_fault, m);
  return EFAULT;
}

// ip_input(): validate the header (version, lengths, checksum) without
// writing into the packet, which may share storage with a frame in flight.
template <class P>
void Stack<P>::ip_input(Mbuf* m) {
  FnScope<P> scope(probe_, Fn::ip_input);
  if (m->m_len < kIpHdrLen) {
    m = mb_.pullup(m, kIpHdrLen);
    if (m == nullptr) {
      SIMLOOP_PROBE(drop(Drop::no_buffers));
      ++counters_.drops[static_cast<size_t>(Drop::no_buffers)];
      return;
    }
  }
  trap_ = false;
  const uint8_t vhl = ld8(Fn::ip_input, m, ip::kVhl, "ip_vhl");
  const uint16_t ip_len = ld16(Fn::ip_input, m, ip::kLen, "ip_len");
  const uint8_t proto = ld8(Fn::ip_input, m, ip::kProto, "ip_p");
  const uint32_t src = ld32(Fn::ip_input, m, ip::kSrc, "ip_src");
  const uint32_t dst = ld32(Fn::ip_input, m, ip::kDst, "ip_dst");
  if (trap_) {
    drop(Drop::alignment_fault, m);
    return;
  }
  const int hlen = (vhl & 0x0f) << 2;
  if ((vhl >> 4) != 4 || hlen < kIpHdrLen || hlen > m->m_len || ip_len < hlen ||
      ip_len > m->pkthdr().len) {
    drop(Drop::bad_header, m);
    return;
  }
  SIMLOOP_PROBE(cksum(m->m_data, hlen));
  if (cksum_finish(cksum_add(m->m_data, hlen)) != 0) {
    drop(Drop::bad_header, m);
    return;
  }
  if (m->pkthdr().len > ip_len) mb_.adj(m, ip_len - m->pkthdr().len);
  if (!is_local(dst)) {
    drop(Drop::not_ours, m);
    return;
  }
  if (proto != kIpProtoUdp) {
    drop(Drop::bad_header, m);
    return;
  }
  udp_input(m, hlen, src, dst);
}

template <class P>
void Stack<P>::udp_input(Mbuf* m, int iphlen, uint32_t src, uint32_t dst) {
  FnScope<P> scope(probe_, Fn::udp_input);
  if (m->m_len < iphlen + kUdpHdrLen) {
    m = mb_.pullup(m, iphlen + kUdpHdrLen);
    if (m == nullptr) {
      SIMLOOP_PROBE(drop(Drop::no_buffers));
      ++counters_.drops[static_cast<size_t>(Drop::no_buffers)];
      return;
    }
  }
  trap_ = false;
  const uint16_t sport = ld16(Fn::udp_input, m, iphlen + udp::kSport, "uh_sport");
  const uint16_t dport = ld16(Fn::udp_input, m, iphlen + udp::kDport, "uh_dport");
  const uint16_t ulen = ld16(Fn::udp_input, m, iphlen + udp::kUlen, "uh_ulen");
  const uint16_t sum = ld16(Fn::udp_input, m, iphlen + udp::kSum, "uh_sum");
  if (trap_) {
    drop(Drop::alignment_fault, m);
    return;
  }
  if (ulen < kUdpHdrLen || ulen != m->pkthdr().len - iphlen) {
    drop(Drop::bad_header, m);
    return;
  }
  if (sum != 0) {
    SIMLOOP_PROBE(cksum(m->m_data + iphlen, ulen));
    uint64_t s = cksum_pseudo(src, dst, kIpProtoUdp, ulen);
    s = cksum_chain(m, iphlen, ulen, s);
    if (cksum_finish(s) != 0) {
      drop(Drop::bad_header, m);
      return;
    }
  }
  for (auto& so : sockets_) {
    if (so.open && so.lport == dport && (so.laddr == 0 || so.laddr == dst)) {
      // The source goes into udp_in through a sockaddr_in's typed fields.
      if (check_udp_in_access(Fn::udp_input, 2, 2, true, "udp_in.sin_port"))
        store_be16(udp_in() + 2, sport);
      if (check_udp_in_access(Fn::udp_input, 4, 4, true, "udp_in.sin_addr"))
        store_be32(udp_in() + 4, src);
      if (trap_) {
        drop(Drop::alignment_fault, m);
        return;
      }
      mb_.adj(m, iphlen + kUdpHdrLen);
      sbappendaddr(so, m);
      return;
    }
  }
  drop(Drop::no_port, m);
}

// sbappendaddr(): a record of a copy of udp_in and the data, if it fits. The
// copy is bcopy's, bytewise, and its cycles are in sbappend's.
template <class P>
void Stack<P>::sbappendaddr(Socket& so, Mbuf* m) {
  FnScope<P> scope(probe_, Fn::sbappend);
  constexpr int kSockaddrInLen = 16;
  const int len = m->pkthdr().len;
  if (so.rcv_cc + len + kSockaddrInLen > opt_.so_rcvbuf) {
    drop(Drop::sockbuf_full, m);
    return;
  }
  Mbuf* a = mb_.get(MT_SONAME);
  if (a == nullptr) {
    drop(Drop::no_buffers, m);
    return;
  }
  a->m_len = kSockaddrInLen;
  std::memcpy(a->m_data, udp_in(), kSockaddrInLen);
  a->m_next = m;
  so.rcv.push(a);
  so.rcv_cc += len + kSockaddrInLen;
  ++so.received;
  so.received_bytes += static_cast<uint64_t>(len);
  ++counters_.delivered;
  counters_.delivered_bytes += static_cast<uint64_t>(len);
}

// ---- NIC -------------------------------------------------------------------

template <class P>
int Stack<P>::nic_txeof(int max) {
  FnScope<P> scope(probe_, Fn::nic_txeof);
  int done = 0;
  while (done < max) {
    Mbuf* m = nic_.pop();
    if (m == nullptr) break;
    mb_.freem(m);
    ++done;
  }
  return done;
}

template <class P>
const Mbuf* Stack<P>::nic_frame(int i) const {
  const Mbuf* m = nic_.head;
  for (; m != nullptr && i > 0; --i) m = m->m_nextpkt;
  return m;
}

// ---- header access ---------------------------------------------------------

// Every header load and store goes through here: the common case (an
// aligned or permitted access to writable storage) is inlined into the
// caller, and what is rare is a call.
template <class P>
[[gnu::always_inline]] inline bool Stack<P>::check_access(Fn fn, const Mbuf* m, int off,
                                                          unsigned size, bool write,
                                                          const char* field) {
  const uint8_t* p = m->m_data + off;
  SIMLOOP_PROBE(header(bsd::id(fn), p, size, write));
  if (write && !m_writable(m)) [[unlikely]]
    read_only_write(fn);
  if ((reinterpret_cast<uintptr_t>(p) & (size - 1)) == 0 || !strict_cpu()) [[likely]]
    return true;
  return misaligned_access(fn, m, p, size, field);
}

template <class P>
void Stack<P>::read_only_write(Fn fn) {
  throw std::logic_error(std::string(bsd::fn_name(fn)) + ": header write into read-only storage");
}

template <class P>
bool Stack<P>::misaligned_access(Fn fn, const Mbuf* m, const uint8_t* p, unsigned size,
                                 const char* field) {
  const bool ext = (m->m_flags & M_EXT) != 0;
  const auto* base = ext ? m->ext().buf : reinterpret_cast<const uint8_t*>(m);
  return record_fault(fn, p, size, field, static_cast<int>(m->m_data - base), base,
                      ext ? "cluster" : "mbuf");
}

template <class P>
bool Stack<P>::check_udp_in_access(Fn fn, int off, unsigned size, bool write, const char* field) {
  const uint8_t* p = udp_in() + off;
  SIMLOOP_PROBE(header(bsd::id(fn), p, size, write));
  if ((reinterpret_cast<uintptr_t>(p) & (size - 1)) == 0 || !strict_cpu()) return true;
  // Offsets count from udp_in itself; the storage starts a cache line, so
  // the offset's low bits are the address's too.
  return record_fault(fn, p, size, field, -1, udp_in(), "udp_in");
}

template <class P>
bool Stack<P>::record_fault(Fn fn, const uint8_t* p, unsigned size, const char* field,
                            int header_offset, const uint8_t* base, const char* buffer) {
  if (!fault_)
    fault_ = AlignmentFault{fn,
                            field,
                            size,
                            buffer,
                            static_cast<int>(p - base),
                            static_cast<unsigned>(reinterpret_cast<uintptr_t>(p) & 3),
                            header_offset};
  trap_ = true;
  return false;
}

template <class P>
[[gnu::always_inline]] inline uint8_t Stack<P>::ld8(Fn fn, const Mbuf* m, int off,
                                                    const char* field) {
  check_access(fn, m, off, 1, false, field);
  return m->m_data[off];
}
template <class P>
[[gnu::always_inline]] inline uint16_t Stack<P>::ld16(Fn fn, const Mbuf* m, int off,
                                                      const char* field) {
  return check_access(fn, m, off, 2, false, field) ? load_be16(m->m_data + off) : 0;
}
template <class P>
[[gnu::always_inline]] inline uint32_t Stack<P>::ld32(Fn fn, const Mbuf* m, int off,
                                                      const char* field) {
  return check_access(fn, m, off, 4, false, field) ? load_be32(m->m_data + off) : 0;
}
template <class P>
[[gnu::always_inline]] inline void Stack<P>::st8(Fn fn, Mbuf* m, int off, uint8_t v,
                                                 const char* field) {
  check_access(fn, m, off, 1, true, field);
  m->m_data[off] = v;
}
template <class P>
[[gnu::always_inline]] inline void Stack<P>::st16(Fn fn, Mbuf* m, int off, uint16_t v,
                                                  const char* field) {
  if (check_access(fn, m, off, 2, true, field)) store_be16(m->m_data + off, v);
}
template <class P>
[[gnu::always_inline]] inline void Stack<P>::st32(Fn fn, Mbuf* m, int off, uint32_t v,
                                                  const char* field) {
  if (check_access(fn, m, off, 4, true, field)) store_be32(m->m_data + off, v);
}

}  // namespace simloop::net::bsd
