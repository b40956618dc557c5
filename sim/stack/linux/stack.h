// The UDP/IPv4 path of a Linux 6.x host on sk_buffs, functional only: it
// knows nothing of time. It builds real packets in real sk_buffs (skbuff.h)
// charged to real socket memory (sock.h), and reports each kernel function
// of its table (fns.h) to its probe as it runs.
//
// Devices: lo (127.0.0.1/8, MTU 65536) and eth0 (10.0.0.1/24, broadcast
// 10.0.0.255) whose transmit ring leads to a peer at 10.0.0.2. The NET_RX
// softirq runs when the owner calls netisr_run(); the ring's completions
// when it calls nic_txeof(). Both are the owner's choice of when, as with
// the BSD stack (sim/stack/bsd/stack.h).
//
// Where Linux differs from the BSD stack, this follows Linux:
//  - no simplex copy: a packet to this host's own address (dest self) is
//    routed through lo by the local table; a broadcast's local copy is a
//    clone (skb_clone, sharing the data), looped back by ip_output;
//  - no UDP checksum on loopback: lo offloads it (CHECKSUM_PARTIAL), only
//    the pseudo-header's sum is stored and the receiver trusts it;
//  - a route lookup per unconnected send; a connected socket keeps its route;
//  - the IP ID is the socket's counter when connected, and 0 on an
//    unconnected socket's datagrams, which carry DF (ip_select_ident_segs);
//  - a full send buffer stops the sender (sk_wmem_alloc, released when the
//    NIC frees the skb, at once on lo); a full device drops silently: the
//    sender sees 0 unless IP_RECVERR is set (udp_send_skb).
// UDP GSO (UDP_SEGMENT) is lo's: the send's one skb crosses lo whole and is
// cut into datagrams on receive (stack_gso_impl.h).
// Simplified: no fragmentation (a datagram over the MTU is EMSGSIZE), no GSO
// off lo (a GSO send by eth0, which offloads no checksum here, is EIO),
// no corking, no qdisc (eth0 behaves as noqueue: a full ring drops), a FIB
// of four routes, neighbours resolved in advance, netfilter on LOCAL_OUT
// only (netfilter.h), no ICMP port unreachable (counted only), one CPU.
#pragma once

#include <array>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "sim/stack/linux/fns.h"
#include "sim/stack/linux/netfilter.h"
#include "sim/stack/linux/options.h"
#include "sim/stack/linux/skbuff.h"
#include "sim/stack/linux/sock.h"
#include "sim/stack/net/counters.h"
#include "sim/stack/net/host.h"
#include "sim/stack/net/inet.h"
#include "sim/stack/net/probe.h"
#include "sim/stack/net/stack_concept.h"

namespace simloop::net::lnx {

// The sk_buff layer (net/core in Linux).
namespace core = ::simloop::lnx;

inline constexpr uint32_t kLoNet = ip_addr(127, 0, 0, 0);
inline constexpr uint32_t kLoMask = ip_addr(255, 0, 0, 0);

// A misaligned header access on a strict-alignment CPU (never on the paths
// built here: Linux aligns its headers; kept so that a layout that broke it
// would say so).
struct AlignmentFault {
  Fn fn;
  const char* field;
  unsigned size;
  int offset;  // from the head of its sk_buff
  unsigned misalign;
  std::string describe() const;
};

using MacAddr = std::array<uint8_t, kEtherAddrLen>;

// struct hh_cache: the hardware header, right-aligned in HH_DATA_MOD bytes.
inline constexpr int kHhDataMod = 16;
struct HhCache {
  alignas(16) std::array<uint8_t, kHhDataMod> data{};
  int len = kEtherHdrLen;
};

struct NetDevice {
  const char* name = "";
  bool loopback = false;
  int mtu = 0;
  MacAddr addr{};
  uint32_t ip = 0;
  uint64_t tx_packets = 0, tx_bytes = 0, tx_dropped = 0, rx_packets = 0, rx_dropped = 0;
  // NETIF_F_HW_CSUM and scatter-gather: the checksum left to the device
  // (CHECKSUM_PARTIAL), large datagrams in page frags. lo and veth have them.
  bool offload = false;
  NetDevice* peer = nullptr;  // a veth end's other end
};

enum class RouteType : uint8_t { local, unicast, broadcast };

// A struct rtable with its neighbour: where the packet goes and how.
struct Route {
  RouteType type = RouteType::unicast;
  NetDevice* dev = nullptr;
  uint32_t src = 0;
  const HhCache* hh = nullptr;  // the neighbour's cached header
};

// A UDP socket: struct sock's memory accounting and the inet fields.
struct UdpSock : core::Sock {
  bool open = false;
  uint32_t laddr = 0;  // 0: any
  uint16_t lport = 0;
  bool connected = false;  // TCP_ESTABLISHED: daddr/dport and the route kept
  uint32_t daddr = 0;
  uint16_t dport = 0;
  const Route* route = nullptr;  // sk_dst_cache
  uint16_t inet_id = 0;          // the IP ID of a connected socket's next datagram
  uint64_t received = 0, received_bytes = 0;
  uint64_t sndbuf_errors = 0;  // UDP_MIB_SNDBUFERRORS: device drops the sender was not told
  uint16_t gso_size = 0;       // UDP_SEGMENT (up->gso_size): 0 sends whole datagrams
};

template <class P>
class Stack {
 public:
  using Fn = lnx::Fn;
  static constexpr const FnTable& fn_table() { return lnx::fn_table(); }
  using Options = lnx::Options;

  // On `pool`, which outlives the stack...
  Stack(core::SkbPool& pool, P& probe, Options opt = {});
  // ... or on a pool of its own (opt.pool).
  explicit Stack(P& probe, Options opt = {});
  ~Stack();
  Stack(const Stack&) = delete;
  Stack& operator=(const Stack&) = delete;

  // Sockets: a descriptor, or -1 when out of them.
  int socket();
  int bind(int s, uint32_t addr, uint16_t port);
  // ip4_datagram_connect: the route looked up once and kept. 0, EBADF,
  // ENETUNREACH, or EACCES (broadcast without SO_BROADCAST).
  int connect(int s, uint32_t addr, uint16_t port);
  void close(int s);

  // sendto(): 0, or EBADF, EMSGSIZE, ENETUNREACH, EACCES, EDESTADDRREQ,
  // ENOBUFS (no memory, no send space on a blocking socket, or a device drop
  // with recverr), EAGAIN (no send space with dontwait). dst 0 and dport 0:
  // no address given (send() on a connected socket).
  int sendto(int s, const void* buf, int len, uint32_t dst, uint16_t dport);
  int send(int s, const void* buf, int len) { return sendto(s, buf, len, 0, 0); }
  // One message of a sendmmsg() call (stack_sendmmsg_impl.h): the call's own
  // part runs with its first message. Results as sendto()'s.
  int sendmmsg_msg(int s, const void* buf, int len, uint32_t dst, uint16_t dport, bool first);
  // The last sendto() found no send space on a blocking socket: Linux would
  // sleep in sock_alloc_send_pskb until sock_wfree makes room, so its
  // ENOBUFS is the caller's cue to wait for a transmit completion and try
  // again, not an error the application sees (nothing was dropped).
  bool send_blocked() const { return send_blocked_; }
  // Whether a sendto() on socket `s` now would find no send space and, the
  // socket blocking, sleep in sock_alloc_send_pskb until sock_wfree makes
  // room (false with dontwait: that send fails with EAGAIN instead).
  bool send_would_block(int s) const;
  // setsockopt(UDP_SEGMENT): 0, EBADF, or EINVAL (size past 65535).
  int set_udp_segment(int s, int size);
  // recvfrom(): 0 and the datagram (truncated to maxlen), or EAGAIN (== EWOULDBLOCK).
  int recvfrom(int s, void* buf, int maxlen, int* got, uint32_t* src = nullptr,
               uint16_t* sport = nullptr);

  // The NET_RX softirq over up to `max` backlogged packets; how many ran.
  // Nothing runs (net_rx_action is not entered) when nothing raised it.
  int netisr_run(int max = INT_MAX);
  int netisr_pending() const { return static_cast<int>(backlog_.qlen); }
  const core::SkBuff* backlog_skb(int i) const { return nth(backlog_, i); }

  // Transmit completion (the driver's clean_tx_irq): frees up to `max`
  // sk_buffs of eth0's ring; nothing runs when the ring is empty.
  int nic_txeof(int max = INT_MAX);
  int nic_pending() const { return static_cast<int>(ring_.qlen); }
  const core::SkBuff* nic_frame(int i) const { return nth(ring_, i); }

  const std::optional<AlignmentFault>& fault() const { return fault_; }
  const StackCounters& counters() const { return counters_; }
  const UdpSock& sock(int s) const { return socks_.at(static_cast<size_t>(s)); }
  int rcv_queued(int s) const {
    return static_cast<int>(sock(s).sk_receive_queue.qlen + sock(s).reader_queue.qlen);
  }
  // The bytes socket s holds against its send buffer (sk_wmem_alloc_get).
  int snd_queued(int s) const { return core::sk_wmem_alloc_get(sock(s)); }
  const Options& options() const { return opt_; }
  const NetDevice& lo() const { return lo_; }
  const NetDevice& eth0() const { return eth0_; }
  const NetDevice& veth0() const { return veth0_; }  // this host's end of the veth pair
  const NetDevice& veth1() const { return veth1_; }  // the peer's end
  core::SkbPool& pool() { return pool_; }
  const core::SkbPool& pool() const { return pool_; }
  // The LOCAL_OUT chain (options.linux.nft_rules rules at the start); its
  // rules may be changed between sends, not emptied (the hook stays).
  NftChain& nft_chain() { return nft_; }
  const NftChain& nft_chain() const { return nft_; }

  // LL_RESERVED_SPACE of both devices: Ethernet's 14 bytes rounded up to
  // HH_DATA_MOD (Options::headroom's default), and the what-ifs' bound.
  static constexpr int kHhLen = 16;
  static constexpr int kMaxHeadroom = 256;

 private:
  // options.linux.so_sndbuf / so_rcvbuf: the setsockopt() a program makes
  // on each socket it opens, with the kernel's clamping and doubling.
  void setsockopt_buffers(UdpSock& so) const {
    if (opt_.so_sndbuf > 0) core::sock_set_sndbuf(so, opt_.so_sndbuf);
    if (opt_.so_rcvbuf > 0) core::sock_set_rcvbuf(so, opt_.so_rcvbuf);
  }
  static constexpr int kMaxSockets = 16;
  static const core::SkBuff* nth(const core::SkBuffHead& q, int i) {
    const core::SkBuff* skb = q.next;
    for (; skb != nullptr && i > 0; --i) skb = skb->next;
    return skb;
  }
  bool valid(int s) const { return s >= 0 && s < kMaxSockets && socks_[s].open; }
  void init();
  void init_veth();

  // send
  int udp_sendmsg(UdpSock& so, const void* buf, int len, uint32_t dst, uint16_t dport);
  int ip_route_output(uint32_t dst, const Route** rt);
  core::SkBuff* ip_make_skb(UdpSock& so, const Route& rt, uint32_t dst, bool connected,
                            const void* buf, int len, int* err);
  core::SkBuff* ip_append_data(UdpSock& so, const Route& rt, const void* buf, int len, int* err);
  bool append_page_frags(UdpSock& so, core::SkBuff* skb, const void* buf, int len);
  bool page_frag_refill(core::PageFrag& pfrag);
  void move_addr_to_kernel();
  void kmalloc_large();
  void free_large_kmalloc();
  void folio_put();
  void alloc_pages();
  void free_pages();
  int udp_send_skb(UdpSock& so, core::SkBuff* skb, uint32_t src, uint32_t dst, uint16_t dport);
  int ip_send_skb(core::SkBuff* skb);
  int ip_local_out(core::SkBuff* skb);
  int nf_hook_slow(core::SkBuff* skb);
  NftVerdict nft_do_chain(core::SkBuff* skb);
  NftVerdict nft_rule_eval(NftRule& r, const core::SkBuff* skb, const uint8_t* nh, unsigned avail);
  int ip_output(core::SkBuff* skb);
  int ip_finish_output2(core::SkBuff* skb);
  int neigh_hh_output(const HhCache& hh, core::SkBuff* skb);
  int dev_queue_xmit(core::SkBuff* skb);
  int dev_hard_start_xmit(core::SkBuff* skb, NetDevice& dev);
  int loopback_xmit(core::SkBuff* skb, NetDevice& dev);
  int netif_rx(core::SkBuff* skb);
  int ndo_start_xmit(core::SkBuff* skb, NetDevice& dev);
  int veth_xmit(core::SkBuff* skb, NetDevice& dev);
  bool ip_route_input(const core::SkBuff* skb, uint32_t daddr);
  // softirq
  int net_rx_action(int max);
  int process_backlog(int quota);
  void netif_receive_skb_core(core::SkBuff* skb);
  void ip_rcv(core::SkBuff* skb);
  void ip_rcv_finish(core::SkBuff* skb);
  void ip_local_deliver(core::SkBuff* skb);
  void udp_rcv(core::SkBuff* skb);
  void udp4_lib_rcv(core::SkBuff* skb);
  int udp4_lib_lookup(uint32_t saddr, uint16_t sport, uint32_t daddr, uint16_t dport);
  void udp_queue_rcv_skb(UdpSock& so, core::SkBuff* skb);
  void udp_enqueue_schedule_skb(UdpSock& so, core::SkBuff* skb);
  // UDP GSO (stack_gso_impl.h)
  int udp_gso_mark(const UdpSock& so, core::SkBuff* skb);
  void udp_rcv_segment(UdpSock& so, core::SkBuff* skb);
  core::SkBuff* udp_gso_segment(core::SkBuff* skb);
  core::SkBuff* skb_segment(const core::SkBuff* skb, unsigned offset, unsigned len);
  // receive
  int udp_recvmsg(UdpSock& so, void* buf, int maxlen, int* got, uint32_t* src, uint16_t* sport);
  void udp_rmem_release(UdpSock& so);
  void copy_linear_skb(const core::SkBuff* skb, void* to, int len);
  void skb_copy_datagram_iter(const core::SkBuff* skb, int offset, void* to, int len);
  void skb_consume_udp(core::SkBuff* skb);
  int nic_clean_tx_irq(int max);
  // buffers
  core::SkBuff* alloc_skb(unsigned size);
  void free_skb(core::SkBuff* skb, core::SkbDropReason reason);
  void orphan(core::SkBuff* skb);
  void sock_wfree(core::SkBuff* skb);
  void drop(Drop where, core::SkBuff* skb, core::SkbDropReason reason);

  // Header access: reported to the probe; on a strict CPU a misaligned one
  // records the fault and is not done.
  bool check(Fn fn, const core::SkBuff* skb, const uint8_t* p, unsigned size, bool write,
             const char* field);
  uint8_t ld8(Fn fn, const core::SkBuff* skb, const uint8_t* p, const char* field);
  uint16_t ld16(Fn fn, const core::SkBuff* skb, const uint8_t* p, const char* field);
  uint32_t ld32(Fn fn, const core::SkBuff* skb, const uint8_t* p, const char* field);
  void st8(Fn fn, core::SkBuff* skb, uint8_t* p, uint8_t v, const char* field);
  void st16(Fn fn, core::SkBuff* skb, uint8_t* p, uint16_t v, const char* field);
  void st32(Fn fn, core::SkBuff* skb, uint8_t* p, uint32_t v, const char* field);

  bool is_local(uint32_t addr) const {
    return (addr & kLoMask) == kLoNet || addr == kHostAddr || addr == kBroadcastAddr ||
           addr == 0xffffffffU || addr == kVethPeerAddr;
  }

  std::unique_ptr<core::SkbPool> own_pool_;
  core::SkbPool& pool_;
  P& probe_;
  Options opt_;
  NetDevice lo_, eth0_;
  HhCache lo_hh_, peer_hh_, bcast_hh_;
  // The FIB's cached output routes (a nexthop's rtable), which skbs point to.
  Route rt_lo_, rt_self_, rt_bcast_, rt_peer_;
  // The veth pair: its ends (the peer's in the receiver's namespace, which
  // shares this stack's sockets), the peer's cached header, the route to it.
  NetDevice veth0_, veth1_;
  HhCache veth_hh_;
  Route rt_veth_;
  core::SkBuffHead backlog_;  // softnet_data.input_pkt_queue (one CPU)
  core::SkBuffHead ring_;     // eth0's transmit ring
  std::array<UdpSock, kMaxSockets> socks_{};
  uint16_t next_port_ = 32768;  // net.ipv4.ip_local_port_range
  bool trap_ = false;
  bool send_blocked_ = false;
  std::optional<AlignmentFault> fault_;
  StackCounters counters_;
  NftChain nft_;  // the LOCAL_OUT hook is registered while it holds rules
};

}  // namespace simloop::net::lnx

#include "sim/stack/linux/stack_impl.h"
#include "sim/stack/linux/stack_nf_impl.h"
#include "sim/stack/linux/stack_sendmmsg_impl.h"
#include "sim/stack/linux/stack_veth_impl.h"

namespace simloop::net::lnx {
static_assert(UdpStack<Stack<NullProbe>>);

extern template class Stack<NullProbe>;
extern template class Stack<NoProbe>;
extern template class Stack<CountingProbe>;
}  // namespace simloop::net::lnx
