// The poll stack as the layers above see it (sim/stack/net/stack_kind.h):
// no system call per send, its ring and pool as its own options
// (options.poll.*), and of the host's only the Ethernet MTU and ring size.
#pragma once

#include <fmt/format.h>

#include <array>
#include <string_view>

#include "sim/stack/net/stack_kind.h"
#include "sim/stack/workload/path.h"
#include "tests/stacks/poll/stack.h"

namespace simloop::net::poll {

// What the stack refuses of the host's choices, and the key to blame:
// alignment fix-ups and broadcast copies are the kernel stacks'.
inline KeyProblem host_problem(AlignPolicy align, LoopCopy copy, int sockaddr_misalign) {
  if (align != AlignPolicy::none)
    return {"options.align", "the poll stack takes alignment policy none only"};
  if (copy != LoopCopy::m_copy)
    return {"options.copy", "the poll stack has no broadcast loop: loop copy m_copy only"};
  if (sockaddr_misalign != 0)
    return {"options.sockaddr_misalign", "the poll stack has no static sockaddr: 0 only"};
  return {};
}

// The path sets nothing the poll stack has; it refuses what it cannot take.
inline Options stack_options_for(const workload::Path& p, Options so) {
  if (const KeyProblem k = host_problem(p.align, p.copy, p.sockaddr_misalign))
    throw workload::PathError(k.message);
  return so;
}

struct Kind {
  static constexpr std::string_view kName = "poll";
  static constexpr std::string_view kDoc = "a kernel-bypass sender on a polled ring, for tests";
  static const FnTable& fns() { return kFnTable; }
  template <class Probe>
  using Stack = poll::Stack<Probe>;
  using Options = poll::Options;
  using Own = poll::Options;
  static constexpr bool kSyscallPerSend = false;
  // A test stack with no real system behind it: measure native --stack poll
  // runs it, nothing fits its costs.
  static constexpr Measured kMeasured = Measured::native;

  static constexpr std::string_view kSection = "options.poll";
  static constexpr std::string_view kSectionDoc = "Options of the poll stack (stack.kind poll).";
  static constexpr std::array<OptionKey<Own>, 3> kKeys = {{
      {"buffers", "Frame buffers in the process's pool.", &support::at<&Own::buffers>, 1, 1e6},
      {"rx_ring", "Looped-back frames the receive ring holds.", &support::at<&Own::rx_ring>, 1,
       1e6},
      {"rx_queue", "Datagrams a socket holds.", &support::at<&Own::rx_queue>, 1, 1e6},
  }};
  static constexpr std::array<std::string_view, 0> kSharedKeys = {};

  static Options options(const HostOptions& h, Own o) {
    o.ring = h.nic_ring;
    o.mtu = h.ether_mtu;
    return o;
  }

  static KeyProblem problem(const HostOptions& h, const Own&, workload::Dest d, int payload) {
    if (d != workload::Dest::wire && d != workload::Dest::loopback)
      return {"workload.dest", fmt::format("the poll stack sends to wire and loopback only, not {}",
                                           workload::dest_name(d))};
    if (KeyProblem k = host_problem(h.align, h.loop_copy, h.sockaddr_misalign)) return k;
    return workload::ether_problem(payload, h.ether_mtu);
  }
};

}  // namespace simloop::net::poll
