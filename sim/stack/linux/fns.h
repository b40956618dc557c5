// The Linux stack's function table: the kernel functions of the UDP path on
// sk_buffs (Linux 6.x) that the simulated Linux stack reports, each under its
// kernel name, with its stage, its part of the path and its role.
// `simloop measure kernel --split` maps this machine's kernel symbols onto
// these names (configs/stacks/linux-perf-symbols.yaml).
#pragma once

#include <array>
#include <cstdint>

#include "sim/stack/net/fn_table.h"

namespace simloop::net::lnx {

// The functions, by FnId (the enum's value is the function's index in
// fn_table()).
enum class Fn : uint8_t {
  // send: the system call down to the device
  sys_sendto,           // __sys_sendto: the system call's in-kernel body
  udp_sendmsg,          // socket checks, the destination, corking decisions
  ip_route_output,      // the route lookup of an unconnected send (fib_table_lookup)
  ip_make_skb,          // one datagram: __ip_append_data, then the IP header and its ID
  ip_append_data,       // __ip_append_data: allocation and the user copy
  udp_send_skb,         // the UDP header (no checksum on loopback)
  ip_send_skb,          //
  ip_local_out,         // the total length, the header checksum, the LOCAL_OUT hook
  ip_output,            //
  ip_finish_output2,    // the neighbour: the cached hardware header
  neigh_hh_output,      //
  dev_queue_xmit,       // __dev_queue_xmit: the qdisc (none on lo), the device lock
  dev_hard_start_xmit,  //
  loopback_xmit,        // lo: the skb turns around and is received
  netif_rx,             // __netif_rx: the per-CPU backlog queue
  // softirq (NET_RX): what the backlog holds, up to the socket
  net_rx_action,             //
  process_backlog,           //
  netif_receive_skb_core,    // __netif_receive_skb_core: the protocol handler
  ip_rcv,                    // header checks
  ip_rcv_finish,             // the route of an input packet
  ip_local_deliver,          //
  udp_rcv,                   //
  udp4_lib_rcv,              // __udp4_lib_rcv: length, checksum of non-loopback
  udp4_lib_lookup,           // __udp4_lib_lookup: the socket hash
  udp_queue_rcv_skb,         //
  udp_enqueue_schedule_skb,  // __udp_enqueue_schedule_skb: rcvbuf accounting, the queue
  // receive: the receiver's system call
  sys_recvfrom,            // __sys_recvfrom
  udp_recvmsg,             //
  skb_copy_datagram_iter,  // the copy to the user
  skb_consume_udp,         // the datagram freed
  // the NIC ring path
  ndo_start_xmit,    // the driver puts the frame on its transmit ring
  nic_clean_tx_irq,  // transmit completion: the ring's sk_buffs freed
  // buffers, wherever they are called from
  alloc_skb,   // __alloc_skb: the sk_buff from its cache, the head from kmalloc
  free_skb,    // consume_skb/kfree_skb: the sk_buff and its head back
  sock_wfree,  // the send buffer's charge released when the skb is freed
  // pages: heads above kmalloc's caches, and the frags of large datagrams
  kmalloc_large,         // ___kmalloc_large_node: a head of whole pages
  free_large_kmalloc,    // such a head freed
  skb_page_frag_refill,  // the socket's page frag: room, or a new page
  folio_put,             // __folio_put: a frag's page after its last reference
  alloc_pages,           // the page allocator (the buddy lists)
  free_pages,            // free_frozen_pages: a page back to them
  // send, continued
  move_addr_to_kernel,  // sendto()'s sockaddr copied in (not on send())
  // sendmmsg(2): once per call, then once per message
  sys_sendmmsg,           // __sys_sendmmsg: the descriptor, the loop over the messages
  sys_sendmsg,            // ___sys_sendmsg and ____sys_sendmsg: one message to sock_sendmsg
  copy_msghdr_from_user,  // the message's header and iovec copied in
  // netfilter: the LOCAL_OUT hook, when a table registers it (nft_rules > 0)
  nf_hook_slow,   // the hook's entries walked, the verdict acted on
  nft_do_chain,   // nft_do_chain_ipv4: the packet's info, the base chain's walk
  nft_rule_eval,  // one rule's expressions (payload load and compare, inlined in nft_do_chain)
  // UDP GSO (UDP_SEGMENT): a send's one large skb cut into datagrams where
  // lo delivers it to a socket without UDP_GRO (udp_rcv_segment)
  udp_gso_segment,  // __skb_gso_segment down to __udp_gso_segment: once per GSO skb
  skb_segment,      // one pass of skb_segment's loop: one segment built
  // a veth pair: the peer device's receive, and the input route it needs
  veth_xmit,       // the skb scrubbed, its Ethernet header read, queued for the peer
  ip_route_input,  // ip_route_input_noref: an input packet without a route (not from lo)
  // receive, split where a burst read back to back costs less per datagram
  udp_rmem_release,  // the read datagrams' memory given back, the receive queue spliced
  copy_linear_skb,   // a linear datagram's copy to the user (copy_to_iter's checks)
  count
};

constexpr FnId id(Fn f) {
  return static_cast<FnId>(f);
}

inline constexpr std::array<FnInfo, static_cast<size_t>(Fn::count)> kFns = {{
    {"__sys_sendto", "socket", PathRole::syscall, FnRole::syscall},
    {"udp_sendmsg", "udp", PathRole::udp_output},
    {"ip_route_output_flow", "ip", PathRole::route},
    {"ip_make_skb", "udp", PathRole::ip_output},  // its own cycles: the IP header
    {"__ip_append_data", "socket", PathRole::socket},
    {"udp_send_skb", "udp", PathRole::udp_output},
    {"ip_send_skb", "ip", PathRole::ip_output},
    {"ip_local_out", "ip", PathRole::ip_output},
    {"ip_output", "ip", PathRole::ip_output},
    {"ip_finish_output2", "ether", PathRole::link},
    {"neigh_hh_output", "ether", PathRole::link},
    {"__dev_queue_xmit", "driver", PathRole::device},
    {"dev_hard_start_xmit", "driver", PathRole::device},
    {"loopback_xmit", "loop", PathRole::device},
    {"__netif_rx", "loop", PathRole::device},
    {"net_rx_action", "netisr", PathRole::softirq},
    {"process_backlog", "netisr", PathRole::softirq},
    {"__netif_receive_skb_core", "input", PathRole::softirq},
    {"ip_rcv", "input", PathRole::ip_input},
    {"ip_rcv_finish", "input", PathRole::ip_input},
    {"ip_local_deliver", "input", PathRole::ip_input},
    {"udp_rcv", "input", PathRole::udp_input},
    {"__udp4_lib_rcv", "input", PathRole::udp_input},
    {"__udp4_lib_lookup", "input", PathRole::udp_input},
    {"udp_queue_rcv_skb", "input", PathRole::udp_input},
    {"__udp_enqueue_schedule_skb", "input", PathRole::udp_input},
    {"__sys_recvfrom", "receive", PathRole::receive},
    {"udp_recvmsg", "receive", PathRole::receive},
    {"skb_copy_datagram_iter", "receive", PathRole::receive},
    {"skb_consume_udp", "receive", PathRole::receive},
    {"ndo_start_xmit", "driver", PathRole::device},
    {"nic_clean_tx_irq", "interrupt", PathRole::device, FnRole::completion},
    {"__alloc_skb", "mbuf", PathRole::buffers},
    {"kfree_skb", "mbuf", PathRole::buffers},
    {"sock_wfree", "mbuf", PathRole::buffers},
    {"___kmalloc_large_node", "mbuf", PathRole::buffers},
    {"free_large_kmalloc", "mbuf", PathRole::buffers},
    {"skb_page_frag_refill", "socket", PathRole::buffers},
    {"__folio_put", "mbuf", PathRole::buffers},
    {"alloc_pages", "mbuf", PathRole::buffers},
    {"free_frozen_pages", "mbuf", PathRole::buffers},
    {"move_addr_to_kernel", "socket", PathRole::syscall},    // sendto()'s sockaddr
    {"__sys_sendmmsg", "socket", PathRole::syscall},         // per call
    {"___sys_sendmsg", "socket", PathRole::syscall},         // per message
    {"copy_msghdr_from_user", "socket", PathRole::syscall},  // per message
    {"nf_hook_slow", "ip", PathRole::ip_output},
    {"nft_do_chain", "ip", PathRole::ip_output},
    {"nft_rule_eval", "ip", PathRole::ip_output},
    {"__udp_gso_segment", "input", PathRole::udp_input},
    {"skb_segment", "input", PathRole::udp_input},
    {"veth_xmit", "driver", PathRole::device},
    {"ip_route_input_noref", "input", PathRole::ip_input},
    {"udp_rmem_release", "receive", PathRole::receive},
    {"copy_linear_skb", "receive", PathRole::receive},
}};
static_assert(kFns.size() <= kMaxFns);
static_assert(has_path_roles(kFns));

// Linux's words where simloop's outputs would say the BSD stack's: sk_buffs
// for mbufs, the NET_RX softirq for the netisr, the per-CPU backlog and
// the socket's rcvbuf for the queues that drop, the slab allocator for the
// zones (the calls into it: its cost is __alloc_skb's and kfree_skb's own,
// and only a model that sees calls, the branch targets', charges them), and
// a trace that counts the send buffer a blocked sender waits on.
inline constexpr std::array<StageName, 2> kStageNames = {{
    {"netisr", "softirq", "", "softirq"},
    {"mbuf", "skb", "", "skb"},
}};
inline constexpr std::array<OwnWord, 2> kDropWords = {{
    {"netisr_full", "backlog_full"},
    {"sockbuf_full", "rcvbuf_full"},
}};
inline constexpr std::array<OwnWord, 2> kHelperWords = {{
    {"mbuf_alloc", "kmem_cache_alloc"},
    {"mbuf_free", "kmem_cache_free"},
}};
inline constexpr std::array<GaugeName, 4> kGauges = {{
    {Gauge::nic_ring, "NIC ring", "frames"},
    {Gauge::input_queue, "backlog", "packets"},
    {Gauge::receive_queue, "receive queue", "packets"},
    {Gauge::send_buffer, "send buffer", "bytes"},
}};

inline constexpr FnTable kFnTable{"linux", kFns,
                                  StackWords{kStageNames, kDropWords, kHelperWords, kGauges}};

constexpr const FnTable& fn_table() {
  return kFnTable;
}
constexpr std::string_view fn_name(Fn f) {
  return kFns[static_cast<size_t>(f)].name;
}

}  // namespace simloop::net::lnx
