// Definitions of lnx::Stack<P>: a veth pair (drivers/net/veth.c) whose peer
// end is in the receiver's namespace. Included from stack.h only.
//
// As on this kernel without XDP or GRO on the pair: veth_xmit hands the skb
// to the peer device (veth_forward_skb -> __dev_forward_skb: the skb
// scrubbed, which orphans it and drops its route; eth_type_trans), and
// __netif_rx queues it on this CPU's backlog, whose NAPI poll
// (process_backlog) receives it in the peer's namespace. With no route the
// input path looks one up (ip_route_input_noref). The namespaces are not
// modelled apart: the peer's socket is one of this stack's.
#pragma once

#include <cstring>

namespace simloop::net::lnx {

template <class P>
void Stack<P>::init_veth() {
  veth0_.name = "veth0";
  veth0_.mtu = opt_.veth_mtu;
  veth0_.addr = {0x02, 0, 0x0a, 0xe7, 0, 0x01};
  veth0_.ip = kVethAddr;
  veth0_.offload = true;
  veth1_ = veth0_;
  veth1_.name = "veth1";
  veth1_.addr = {0x02, 0, 0x0a, 0xe7, 0, 0x02};
  veth1_.ip = kVethPeerAddr;
  veth0_.peer = &veth1_;
  veth1_.peer = &veth0_;
  uint8_t* h = veth_hh_.data.data() + kHhDataMod - kEtherHdrLen;
  std::memcpy(h + ether::kDst, veth1_.addr.data(), kEtherAddrLen);
  std::memcpy(h + ether::kSrc, veth0_.addr.data(), kEtherAddrLen);
  store_be16(h + ether::kType, kEtherTypeIp);
  rt_veth_ = Route{RouteType::unicast, &veth0_, veth0_.ip, &veth_hh_};
}

template <class P>
int Stack<P>::veth_xmit(core::SkBuff* skb, NetDevice& dev) {
  FnScope<P> scope(probe_, Fn::veth_xmit);
  NetDevice& peer = *dev.peer;
  const unsigned len = skb->len;
  // is_skb_forwardable: the frame must fit the peer's MTU.
  if (len > static_cast<unsigned>(peer.mtu + kEtherHdrLen)) {
    ++dev.tx_dropped;
    drop(Drop::bad_header, skb, core::SkbDropReason::kNotSpecified);
    return kNetXmitDrop;
  }
  // skb_scrub_packet: the owner's charge released, the route dropped.
  orphan(skb);
  skb->dst = nullptr;
  // eth_type_trans: the header the neighbour wrote says whose the frame is
  // and what it carries; then it is pulled.
  core::skb_reset_mac_header(skb);
  trap_ = false;
  const uint16_t proto = ld16(Fn::veth_xmit, skb, skb->data + ether::kType, "h_proto");
  if (trap_) {
    drop(Drop::alignment_fault, skb, core::SkbDropReason::kNotSpecified);
    return kNetXmitDrop;
  }
  const uint8_t* dst = skb->data + ether::kDst;
  // Compared as bytes, reported as the link addresses are elsewhere: never
  // a misaligned word.
  SIMLOOP_PROBE(header(id(Fn::veth_xmit), dst, 1, false));
  if (std::memcmp(dst, peer.addr.data(), kEtherAddrLen) == 0)
    skb->pkt_type = core::PACKET_HOST;
  else
    skb->pkt_type = (dst[0] & 1) != 0 ? core::PACKET_BROADCAST : core::PACKET_OTHERHOST;
  skb->protocol = proto;
  core::skb_pull(skb, kEtherHdrLen);
  skb->dev = &peer;
  if (netif_rx(skb) != kNetXmitSuccess) {
    ++dev.tx_dropped;
    return kNetXmitDrop;
  }
  ++dev.tx_packets;
  dev.tx_bytes += len;
  ++peer.rx_packets;
  return kNetXmitSuccess;
}

// ip_route_input_noref: the input route of a packet that came without one,
// a lookup in the receiver's local table.
template <class P>
bool Stack<P>::ip_route_input(const core::SkBuff*, uint32_t daddr) {
  FnScope<P> scope(probe_, Fn::ip_route_input);
  return is_local(daddr);
}

}  // namespace simloop::net::lnx
