// One path through the stack: where the ttcp sender sends (Dest), what the
// stack does with misaligned data and with a broadcast's simplex copy, what
// serves the host after each send, and where the sender's buffer and the
// receiver's sockaddr lie. The simulator, the layout advisor, the native
// harness, calibration and the command line all name a path with it: its
// names and their parsing, its stack options, its payload limits.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "sim/stack/bsd/stack.h"
#include "sim/stack/net/inet.h"
#include "sim/stack/net/stack_kind.h"
#include "sim/stack/workload/dest.h"

namespace simloop::workload {

// How the host around the sender serves a datagram after sendto().
enum class Service : uint8_t {
  // The simulated host. Where the datagram loops back, the netisr's
  // software interrupt runs at once (it preempts the sender on a
  // uniprocessor), and the receiver, blocked in recvfrom(), only makes the
  // calls that return a datagram (none with `receive` off). The ring is
  // left alone: the caller's driver model reclaims frames (reap) when its
  // clock says they are done.
  simulated,
  // The native harness ("full"): the whole path of a packet runs before the
  // next send, whatever the destination: the netisr, recvfrom() until it
  // says EWOULDBLOCK, transmit completion. On ENOBUFS the same runs and the
  // send is tried again, up to 1000 times, as ttcp sleeps and retries.
  drained,
  // As drained, but nothing serves the host after sendto() except transmit
  // completion: no netisr, no receiver. Datagrams that loop back wait in the
  // netisr queue until it is full, then are dropped there. A path without
  // the receive side, for calibrating the send side on its own.
  send_only,
};

constexpr std::string_view service_name(Service s) {
  switch (s) {
    case Service::simulated:
      return "simulated";
    case Service::drained:
      return "full";
    case Service::send_only:
      return "send-only";
  }
  return "?";
}

inline constexpr std::array<Service, 3> kServices = {Service::simulated, Service::drained,
                                                     Service::send_only};

constexpr std::optional<Service> parse_service(std::string_view s) {
  for (Service v : kServices)
    if (s == service_name(v)) return v;
  return std::nullopt;
}

// Every name, in kServices order: for option checks and help.
inline std::vector<std::string> service_names() {
  std::vector<std::string> v;
  for (Service s : kServices) v.emplace_back(service_name(s));
  return v;
}

// A value that is not one of a path field's: the message names the field,
// every valid value and the nearest one.
struct PathError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

struct Path {
  Dest dest = Dest::loopback;
  net::AlignPolicy align = net::AlignPolicy::none;
  net::LoopCopy copy = net::LoopCopy::m_copy;
  Service service = Service::drained;
  // Bytes past a 4-byte boundary of udp_in, the static sockaddr_in that
  // udp_input fills for each received datagram (0-3).
  int sockaddr_misalign = 0;
  // Bytes past an 8-byte boundary of the sender's buffer (0-7): sendto()
  // then copies the payload in from a misaligned address.
  int buffer_misalign = 0;

  static constexpr int kMaxSockaddrMisalign = 3;
  static constexpr int kMaxBufferMisalign = 7;
  // The largest payload of any path (a jumbo frame's): the bound on a
  // payload before a path's own (max_payload).
  static constexpr int kMaxPayload = net::kMaxJumboPayload;

  // The fields by name, in the order a spec (parse) gives them.
  static constexpr std::array<std::string_view, 6> kFields = {
      "dest", "align", "copy", "sockaddr_misalign", "service", "buffer_misalign"};

  // Every name a field takes (its numbers as text), in order. Service
  // names only what a native run can be (full, send-only).
  static std::vector<std::string> names(std::string_view field);
  // Why `value` is not a value of `field`, with every valid one and the
  // nearest ("" if it is one).
  static std::string problem(std::string_view field, std::string_view value);
  // Sets a field from its name; throws PathError (problem()).
  void set(std::string_view field, std::string_view value);
  // A field's value by name.
  std::string get(std::string_view field) const;
  // The command-line option that sets a field: "--" and its name, '-' for '_'.
  static std::string option(std::string_view field);

  // "DEST/ALIGN/COPY[/SOCKADDR_MISALIGN[/SERVICE[/BUFFER_MISALIGN]]]", the
  // fields left out at their defaults; throws PathError.
  static Path parse(std::string_view spec);
  static constexpr std::string_view kSpecFormat = "DEST/ALIGN/COPY[/MISALIGN[/SERVICE[/BUFFER]]]";
  // Every field, in that form.
  std::string spec() const;

  // The largest payload the path carries with the stack's options `so`:
  // the socket's send limit, and the MTU of the interface the datagram
  // leaves by less the IP and UDP headers (there is no IP fragmentation).
  int max_payload(const net::bsd::StackOptions& so) const;
  // Why `payload` bytes cannot be sent on the path ("" if they can).
  std::string payload_problem(int payload, const net::bsd::StackOptions& so) const;

  bool operator==(const Path&) const = default;
};

// Why `payload` bytes cannot leave by the Ethernet device of MTU `mtu`,
// blaming workload.payload (empty if they can): there is no fragmentation.
net::KeyProblem ether_problem(int payload, int mtu);

// The stack's options for a destination: only a host without the lo0 route
// for its own address sends to itself through em0.
constexpr net::bsd::StackOptions stack_options_for(Dest d, net::bsd::StackOptions so) {
  so.useloopback = d != Dest::self;
  return so;
}

// The BSD stack's options for a path: `so` with the path's alignment
// policy, loop copy, sockaddr misalignment and route to itself.
constexpr net::bsd::StackOptions stack_options_for(const Path& p, net::bsd::StackOptions so) {
  so.align = p.align;
  so.loop_copy = p.copy;
  so.sockaddr_misalign = p.sockaddr_misalign;
  return stack_options_for(p.dest, so);
}

}  // namespace simloop::workload
