// The Linux stack as the layers above see it (net/stack_kind.h says what a
// kind declares): its own options are options.linux.*, and of the host's it
// takes the alignment policy (none or strict), the ring and the MTU.
#pragma once

#include <fmt/format.h>

#include <array>
#include <string>
#include <string_view>

#include "sim/stack/linux/stack.h"
#include "sim/stack/net/stack_kind.h"
#include "sim/stack/workload/path.h"

namespace simloop::net::lnx {

// What the stack refuses of the host's choices, and the key to blame
// (empty if it takes them): the copy-down fix-ups (Linux keeps IP headers
// aligned), m_dup (a broadcast's local copy is always a clone) and a
// misplaced udp_in (Linux fills the caller's own sockaddr).
inline KeyProblem host_problem(AlignPolicy align, LoopCopy copy, int sockaddr_misalign) {
  if (align != AlignPolicy::none && align != AlignPolicy::strict)
    return {"options.align", "the linux stack takes alignment policy none or strict, not '" +
                                 std::string(align_policy_name(align)) + "'"};
  if (copy != LoopCopy::m_copy)
    return {"options.copy",
            "the linux stack loops a broadcast back as a clone: loop copy m_copy only"};
  if (sockaddr_misalign != 0)
    return {"options.sockaddr_misalign",
            "the linux stack has no static sockaddr: sockaddr_misalign must be 0"};
  return {};
}

// What a workload::Path sets in the stack's options; the ttcp loop finds it
// by its arguments. Every destination runs: self goes through lo, as
// Linux's local table routes it.
inline Options stack_options_for(const workload::Path& p, Options so) {
  if (const KeyProblem k = host_problem(p.align, p.copy, p.sockaddr_misalign))
    throw workload::PathError(k.message);
  so.align = p.align;
  return so;
}

// What UDP_SEGMENT refuses of a path (Linux's own limits on lo, the
// sends it fails with EMSGSIZE or EINVAL), blaming options.linux.udp_segment.
inline KeyProblem udp_segment_problem(int segments, workload::Dest d, int payload) {
  const std::string key = "options.linux.udp_segment";
  if (segments <= 1) return {};
  if (d == workload::Dest::veth)
    return {key, "UDP GSO goes through lo here; workload.dest veth sends one datagram per call"};
  if (segments > 128)
    return {key, std::to_string(segments) +
                     " segments per send: Linux takes up to 128 "
                     "(UDP_MAX_SEGMENTS)"};
  if (payload < 1)
    return {key, "a segment needs at least 1 byte of payload (workload.payload is " +
                     std::to_string(payload) + ")"};
  if (int64_t{payload} * segments > kMaxUdpPayload)
    return {key, std::to_string(segments) + " segments of " + std::to_string(payload) +
                     " bytes make a " + std::to_string(int64_t{payload} * segments) +
                     "-byte send, over a UDP datagram's " + std::to_string(kMaxUdpPayload) +
                     " bytes"};
  if (workload::uses_ring(d))
    return {key,
            "GSO is modelled on lo only: the Ethernet device here offloads no checksum "
            "(Linux fails such a send with EIO); use a destination through lo"};
  return {};
}

struct Kind {
  static constexpr std::string_view kName = "linux";
  static constexpr std::string_view kDoc = "the Linux 6.x UDP path on sk_buffs";
  static const FnTable& fns() { return fn_table(); }
  template <class P>
  using Stack = lnx::Stack<P>;
  using Options = lnx::Options;
  using Own = lnx::Options;  // align, nic_ring and eth_mtu are set from HostOptions
  static constexpr bool kSyscallPerSend = true;
  // Measured on this machine's kernel: measure kernel --split charges perf's
  // samples to its functions by the kernel symbols the table names, and
  // calibrate --source linux fits its functions' costs to those rows.
  static constexpr Measured kMeasured = Measured::kernel;
  static constexpr std::string_view kPerfSymbols = "configs/stacks/linux-perf-symbols.yaml";

  static constexpr std::string_view kSection = "options.linux";
  static constexpr std::string_view kSectionDoc =
      "Options of the Linux stack (stack.kind linux); options.align (none or strict), "
      "options.nic_ring and options.ether_mtu apply to it as well.";
  static constexpr std::array<OptionKey<Own>, 12> kKeys = {{
      {"netdev_max_backlog",
       "net.core.netdev_max_backlog: the per-CPU backlog queue limit, packets.",
       &support::at<&Own::netdev_max_backlog>, 1, 1e6},
      {"headroom",
       "Bytes a sent skb reserves before its IP header: LL_RESERVED_SPACE, 16 for lo and "
       "Ethernet (a multiple of 16 in Linux). Other values are what-ifs: 14 puts every IP and UDP "
       "header 2 bytes off 4-byte alignment.",
       &support::at<&Own::headroom>, 14, 256},
      {"sndbuf",
       "SO_SNDBUF: the socket's send buffer, bytes of truesize (net.core.wmem_default 212992).",
       &support::at<&Own::sndbuf>, 1, 1e9},
      {"rcvbuf",
       "SO_RCVBUF: the socket's receive buffer, bytes of truesize (net.core.rmem_default "
       "212992).",
       &support::at<&Own::rcvbuf>, 1, 1e9},
      {"so_sndbuf",
       "setsockopt(SO_SNDBUF, N) on every socket, as a program calls it: the kernel clamps N to "
       "net.core.wmem_max (212992), doubles it and keeps at least 4608 bytes; that sets the send "
       "buffer in place of sndbuf (which stands for net.core.wmem_default). 0: not called.",
       &support::at<&Own::so_sndbuf>, 0, 1e9},
      {"so_rcvbuf",
       "setsockopt(SO_RCVBUF, N) on every socket, as a program calls it: clamped to "
       "net.core.rmem_max (212992), doubled, at least 2304 bytes; in place of rcvbuf. 0: not "
       "called.",
       &support::at<&Own::so_rcvbuf>, 0, 1e9},
      {"small_head_cache",
       "Bytes of one skbuff_small_head object (/proc/slabinfo's objsize; "
       "SKB_SMALL_HEAD_CACHE_SIZE): heads that fit come from it, and such an skb's truesize is "
       "this less 320 plus 576, so it sets how many small datagrams a receive buffer holds. "
       "576 on the 6.18.44-fc kernel measured (built without tunnels); 640 where "
       "MAX_TCP_HEADER is 320 (LL_MAX_HEADER 128 and tunnels configured).",
       &support::at<&Own::small_head_cache>, 384, 8192},
      {"recverr", "IP_RECVERR: a device's drop is the sender's ENOBUFS (otherwise silent).",
       &support::at<&Own::recverr>},
      {"sendmmsg",
       "Datagrams per sendmmsg(2) call (UIO_MAXIOV 1024 at most): one system call entry and "
       "exit and __sys_sendmmsg per call, ___sys_sendmsg and udp_sendmsg per datagram. 1 is "
       "the sendto() (or, connected, send()) loop.",
       &support::at<&Own::sendmmsg>, 1, 1024},
      {"nft_rules",
       "Rules in an nftables chain on the IPv4 LOCAL_OUT hook (type filter hook output), each "
       "`ip daddr 198.18.X.Y counter`, matching no datagram sent, so every one is evaluated "
       "per datagram (nf_hook_slow, nft_do_chain, nft_rule_eval per rule); 0: no table, no hook.",
       &support::at<&Own::nft_rules>, 0, kMaxNftRules},
      {"udp_segment",
       "UDP GSO: datagrams per send (UDP_SEGMENT set to the payload, each send carrying this many "
       "payloads, cut into datagrams where lo delivers them). 1 is the plain send. payload times "
       "this may not exceed 65507 bytes, and only paths through lo take more than 1.",
       &support::at<&Own::udp_segment>, 1, 128},
      {"veth_mtu",
       "MTU of the veth pair that workload.dest veth sends over (veth's default 1500); a "
       "payload must fit it less the IP and UDP headers.",
       &support::at<&Own::veth_mtu>, 68, 65535},
  }};
  static constexpr std::array<std::string_view, 1> kSharedKeys = {"workload.connected"};

  static Options options(const HostOptions& h, Own o) {
    o.align = h.align;
    o.nic_ring = h.nic_ring;
    o.eth_mtu = h.ether_mtu;
    return o;
  }

  // Linux routes its own addresses through lo: only wire and broadcast
  // leave by the Ethernet device (and its MTU). What the stack refuses of
  // the path when it is built is refused here, naming the key.
  static KeyProblem problem(const HostOptions& h, const Own& o, workload::Dest d, int payload) {
    if (d == workload::Dest::veth && payload + kUdpIpHdrLen > o.veth_mtu)
      return {"workload.payload",
              fmt::format("{} bytes + 28 bytes of headers exceed options.linux.veth_mtu ({}); "
                          "there is no IP fragmentation",
                          payload, o.veth_mtu)};
    if (workload::uses_ring(d))
      if (KeyProblem p = workload::ether_problem(payload, h.ether_mtu)) return p;
    if (KeyProblem p = udp_segment_problem(o.udp_segment, d, payload)) return p;
    return host_problem(h.align, h.loop_copy, h.sockaddr_misalign);
  }
};

}  // namespace simloop::net::lnx
