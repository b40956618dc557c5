// The Linux stack's options: its sysctls and socket options, the devices'
// MTUs. Apart from the stack so that an experiment can hold them without
// the stack's code.
#pragma once

#include "sim/stack/linux/sock.h"
#include "sim/stack/net/host.h"

namespace simloop::net::lnx {

// The sk_buff layer (net/core in Linux).
namespace core = ::simloop::lnx;

struct Options {
  // net::AlignPolicy::none or strict: Linux needs no fix-up (its headroom,
  // LL_RESERVED_SPACE, keeps every IP header 4-byte aligned); with strict, a
  // misaligned header access would fault as on the BSD stack.
  AlignPolicy align = AlignPolicy::none;
  // Bytes a sent datagram's skb reserves in front of its IP header:
  // LL_RESERVED_SPACE of the route's device, which Linux rounds up to a
  // multiple of HH_DATA_MOD (16), so the IP header lands 4-byte aligned.
  // Other values are what-ifs: 14 (the Ethernet header alone, as BSD's
  // max_linkhdr reserves) puts every IP and UDP header 2 bytes off.
  int headroom = 16;
  int netdev_max_backlog = 1000;          // net.core.netdev_max_backlog
  int nic_ring = 256;                     // eth0's transmit descriptors
  int sndbuf = core::kSysctlWmemDefault;  // sk_sndbuf (net.core.wmem_default)
  int rcvbuf = core::kSysctlRmemDefault;  // sk_rcvbuf (net.core.rmem_default)
  // setsockopt(SO_SNDBUF / SO_RCVBUF, N) on every socket, as a program calls
  // it: clamped to net.core.{w,r}mem_max, doubled, at least the minimum
  // (sock_set_sndbuf); 0: not called, the socket keeps sndbuf / rcvbuf.
  int so_sndbuf = 0;
  int so_rcvbuf = 0;
  int lo_mtu = 65536;
  int eth_mtu = 1500;
  int veth_mtu = 1500;  // the veth pair's (dest veth)
  // Every send is MSG_DONTWAIT: a full send buffer is EAGAIN. Otherwise the
  // socket blocks, and as the caller owns the wait it gets ENOBUFS, the
  // stack interface's "no send space" (net/stack_concept.h).
  bool dontwait = false;
  bool recverr = false;      // IP_RECVERR: a device's drop is the sender's ENOBUFS
  bool so_broadcast = true;  // SO_BROADCAST on every socket (ttcp sets it)
  core::SkbPoolConfig pool;  // when the stack has a pool of its own
  // Bytes of a small skb head (SKB_SMALL_HEAD_CACHE_SIZE, /proc/slabinfo's
  // skbuff_small_head objsize), which sets a small skb's truesize and so
  // how many datagrams a receive buffer holds: 576 on the 6.18.44-fc kernel
  // measured (experiments/validation/linux/rcvbuf.md; MAX_TCP_HEADER 256),
  // 640 where MAX_TCP_HEADER is 320. The stack's own pool takes it
  // (pool_config()).
  int small_head_cache = 576;
  core::SkbPoolConfig pool_config() const {
    core::SkbPoolConfig c = pool;
    c.small_head_size = static_cast<unsigned>(small_head_cache);
    return c;
  }
  // Messages per sendmmsg(2) call; 1 is the sendto()/send() loop.
  int sendmmsg = 1;
  // Rules in an nftables chain on the LOCAL_OUT hook (netfilter.h); 0: no
  // table, so no hook is registered and the path is the same as without.
  int nft_rules = 0;
  // UDP GSO: datagrams per send. Above 1 the sender sets UDP_SEGMENT to the
  // payload and each send carries that many payloads (workload/driver.h);
  // 1 is the plain send, without the socket option.
  int udp_segment = 1;
};

}  // namespace simloop::net::lnx
