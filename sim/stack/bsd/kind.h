// The BSD stack as the layers above see it (net/stack_kind.h says what a
// kind declares). Its options are the host's (options.*) and a few of its
// own under the same prefix: the socket limits, the netisr queue, the
// header space.
#pragma once

#include <fmt/format.h>

#include <array>
#include <string_view>

#include "sim/stack/bsd/stack.h"
#include "sim/stack/net/stack_kind.h"
#include "sim/stack/workload/path.h"

namespace simloop::net::bsd {

struct Kind {
  static constexpr std::string_view kName = "bsd";
  static constexpr std::string_view kDoc = "the FreeBSD-6-like stack on mbufs";
  static const FnTable& fns() { return fn_table(); }
  template <class P>
  using Stack = bsd::Stack<P>;
  using Options = StackOptions;
  using Own = StackOptions;  // the host's fields are set from HostOptions
  static constexpr bool kSyscallPerSend = true;
  // Measured as itself: the native harness program is built from it
  // (sim/stack/harness.h), and calibrate --source native fits its costs.
  static constexpr Measured kMeasured = Measured::harness;

  static constexpr std::string_view kSection = "options";
  static constexpr std::string_view kSectionDoc = "Options of the real stack.";
  static constexpr std::array<OptionKey<Own>, 4> kKeys = {{
      {"netisr_maxlen", "Netisr input queue limit, packets.", &support::at<&Own::netisr_maxlen>, 1,
       1e6},
      {"so_sndbuf", "Largest datagram a socket sends, bytes.", &support::at<&Own::so_sndbuf>, 1,
       1e7},
      {"so_rcvbuf", "Socket receive buffer limit, bytes.", &support::at<&Own::so_rcvbuf>, 1, 1e9},
      {"max_linkhdr", "Link header space reserved in front of the data, bytes.",
       &support::at<&Own::max_linkhdr>, 0, 100},
  }};
  static constexpr std::array<std::string_view, 5> kSharedKeys = {
      "options.copy", "options.sockaddr_misalign", "workload.service", "stack.alloc", "stack.free"};

  static Options options(const HostOptions& h, Own o) {
    o.align = h.align;
    o.loop_copy = h.loop_copy;
    o.sockaddr_misalign = h.sockaddr_misalign;
    o.nic_ring = h.nic_ring;
    o.ether_mtu = h.ether_mtu;
    return o;
  }

  // Every destination but loopback leaves by em0 (self loops back through it).
  static KeyProblem problem(const HostOptions& h, const Own& o, workload::Dest d, int payload) {
    if (d == workload::Dest::veth)
      return {"workload.dest", "veth: the bsd stack has no veth device"};
    if (payload > kMaxJumboPayload)
      return {"workload.payload",
              fmt::format("{} bytes: the bsd stack sends at most {} (a jumbo frame's payload)",
                          payload, kMaxJumboPayload)};
    if (payload > o.so_sndbuf)
      return {"workload.payload",
              fmt::format("{} bytes exceed options.so_sndbuf ({})", payload, o.so_sndbuf)};
    if (d != workload::Dest::loopback)
      if (KeyProblem p = workload::ether_problem(payload, h.ether_mtu)) return p;
    if (o.max_linkhdr + o.max_protohdr >= kMHLen)
      return {"options.max_linkhdr", "too large for a header mbuf"};
    return {};
  }
};

}  // namespace simloop::net::bsd
