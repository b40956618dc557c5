// What a stack must provide to be driven: the ttcp loop (workload/ttcp.h),
// the engine, the native harness, calibration and the layout advisor use a
// stack through these operations and nothing else, so a second stack is a
// type that satisfies UdpStack, with its own FnTable (net/fn_table.h).
#pragma once

#include <concepts>
#include <cstdint>
#include <string>

#include "sim/stack/net/fn_table.h"
#include "sim/stack/net/probe.h"

namespace simloop::net {

template <class S>
concept UdpStack = requires(S s, const S cs, const void* data, void* buf, int* got, int n,
                            uint32_t addr, uint16_t port) {
  // The functions it reports to its probe, by FnId.
  { S::fn_table() } -> std::same_as<const FnTable&>;
  // Sockets: a descriptor (-1 when out of them), bound to a local port.
  { s.socket() } -> std::same_as<int>;
  { s.bind(n, addr, port) } -> std::same_as<int>;
  // One datagram down the send path: 0 or an errno value (ENOBUFS: no
  // buffers or no socket send space; EFAULT: a strict-alignment fault).
  { s.sendto(n, data, n, addr, port) } -> std::same_as<int>;
  // One datagram off a socket's receive queue: 0, or EWOULDBLOCK.
  { s.recvfrom(n, buf, n, got) } -> std::same_as<int>;
  { cs.rcv_queued(n) } -> std::same_as<int>;  // datagrams waiting on socket n
  // (Optional, where sockets block for send space: send_would_block(n) and
  // snd_queued(n), the bytes socket n holds against its send buffer; the
  // ttcp loop and the engine look for them.)
  // Input processing of looped-back packets (BSD's netisr, Linux's
  // NET_RX softirq): up to n packets, how many ran; and how many wait.
  { s.netisr_run(n) } -> std::same_as<int>;
  { cs.netisr_pending() } -> std::same_as<int>;
  // Transmit completion of the NIC ring: frees up to n frames, how many.
  { s.nic_txeof(n) } -> std::same_as<int>;
  { cs.nic_pending() } -> std::same_as<int>;
  // What it counted (sends, drops by net::Drop) and, if a strict-alignment
  // CPU faulted, the fault.
  { cs.counters().drops[0] } -> std::convertible_to<uint64_t>;
  { cs.counters().sent } -> std::convertible_to<uint64_t>;
  { cs.fault().has_value() } -> std::same_as<bool>;
  { cs.fault()->describe() } -> std::same_as<std::string>;
};

}  // namespace simloop::net
