// Where the ttcp sender sends, and what each destination means for the
// path: the one list of destinations, a field of every path (path.h).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/stack/net/host.h"
#include "sim/stack/net/inet.h"

namespace simloop::workload {

enum class Dest : uint8_t {
  loopback,   // 127.0.0.1 through lo0 and the netisr
  broadcast,  // em0's broadcast: a copy loops back (simplex), the frame goes on the ring
  wire,       // the peer 10.0.0.2: the frame goes on the NIC ring only
  self,       // em0's own address routed through em0: the frame itself loops back
  veth,       // a veth pair's peer (10.231.0.2): its receive queue, NAPI, the peer's socket
};

inline constexpr std::array<Dest, 5> kDests = {Dest::loopback, Dest::broadcast, Dest::wire,
                                               Dest::self, Dest::veth};

// ttcp's default port: the receiver binds it, the sender sends to it.
inline constexpr uint16_t kTtcpPort = 5001;

constexpr std::string_view dest_name(Dest d) {
  switch (d) {
    case Dest::loopback:
      return "loopback";
    case Dest::broadcast:
      return "broadcast";
    case Dest::wire:
      return "wire";
    case Dest::self:
      return "self";
    case Dest::veth:
      return "veth";
  }
  return "?";
}

constexpr std::optional<Dest> parse_dest(std::string_view s) {
  for (Dest d : kDests)
    if (s == dest_name(d)) return d;
  return std::nullopt;
}

// Every name, in kDests order: for option checks and help.
inline std::vector<std::string> dest_names() {
  std::vector<std::string> v;
  for (Dest d : kDests) v.emplace_back(dest_name(d));
  return v;
}

// The address the sender's sendto() names.
constexpr uint32_t dest_addr(Dest d) {
  switch (d) {
    case Dest::loopback:
      return net::kLoopAddr;
    case Dest::broadcast:
      return net::kBroadcastAddr;
    case Dest::wire:
      return net::kPeerAddr;
    case Dest::self:
      return net::kHostAddr;
    case Dest::veth:
      return net::kVethPeerAddr;
  }
  return net::kLoopAddr;
}

// A datagram (or a copy of it) comes back to this host's socket.
constexpr bool loops_back(Dest d) {
  return d != Dest::wire;
}

// A frame goes on the NIC's ring, so transmit completions (and their
// interrupts) follow. To self em0 loops the frame back itself.
constexpr bool uses_ring(Dest d) {
  return d == Dest::broadcast || d == Dest::wire;
}

}  // namespace simloop::workload
