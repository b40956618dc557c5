// The host every stack simulates, as far as the stacks share it: its
// addresses, and the choices a path through it makes that more than one
// stack's options hold (how misaligned headers are handled, how a broadcast
// is copied for the simplex loop), with their names.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/stack/net/inet.h"
#include "sim/support/key_spec.h"

namespace simloop::net {

// Loopback, then the Ethernet interface's address, its peer on the wire,
// the subnet's broadcast and mask.
inline constexpr uint32_t kLoopAddr = ip_addr(127, 0, 0, 1);
inline constexpr uint32_t kHostAddr = ip_addr(10, 0, 0, 1);
inline constexpr uint32_t kPeerAddr = ip_addr(10, 0, 0, 2);
inline constexpr uint32_t kBroadcastAddr = ip_addr(10, 0, 0, 255);
inline constexpr uint32_t kNetmask = ip_addr(255, 255, 255, 0);
// A veth pair's ends (measure kernel --path veth uses the same /30): this
// host's end and its peer's, the receiver's in another network namespace.
inline constexpr uint32_t kVethAddr = ip_addr(10, 231, 0, 1);
inline constexpr uint32_t kVethPeerAddr = ip_addr(10, 231, 0, 2);

// What if_simloop does about an IP header that is not 4-byte aligned, and
// what the CPU does with a misaligned header access.
enum class AlignPolicy : uint8_t {
  none,              // unaligned access allowed (x86): no fix-up; misaligned header
                     // accesses are reported so a model can charge for them
  copy_down,         // if_simloop copies the data down to a 4-byte boundary, as
                     // strict-alignment CPUs need, into a fresh mbuf when the storage
                     // is shared or read-only (never writing into a frame in flight)
  strict,            // strict-alignment CPU, no fix-up: a misaligned access faults
  copy_down_unsafe,  // the naive fix-up: moves data down in place even in a
                     // shared cluster, corrupting the frame being sent
};

// How ether_output copies a broadcast for the simplex loop.
enum class LoopCopy : uint8_t { m_copy, m_dup };

inline constexpr std::array<AlignPolicy, 4> kAlignPolicies = {
    AlignPolicy::none, AlignPolicy::copy_down, AlignPolicy::strict, AlignPolicy::copy_down_unsafe};
inline constexpr std::array<LoopCopy, 2> kLoopCopies = {LoopCopy::m_copy, LoopCopy::m_dup};

std::string_view align_policy_name(AlignPolicy p);
// Every name, in the order above: for option checks and help.
std::vector<std::string> align_policy_names();
std::vector<std::string> loop_copy_names();
std::string_view loop_copy_name(LoopCopy c);
// Parse the names above; nullopt for anything else.
std::optional<AlignPolicy> parse_align_policy(std::string_view s);
std::optional<LoopCopy> parse_loop_copy(std::string_view s);

// The options of the host that every stack is built with (the keys
// options.*): each stack takes what it has of them (its kind.h).
struct HostOptions {
  AlignPolicy align = AlignPolicy::none;
  LoopCopy loop_copy = LoopCopy::m_copy;
  // Bytes past a 4-byte boundary of the static sockaddr_in the receive
  // path fills with each datagram's source (0-3).
  int sockaddr_misalign = 0;
  int nic_ring = 256;  // the Ethernet device's transmit descriptors
  int ether_mtu = 1500;
};

// options.*: the host's keys (each stack's own follow, from its kind.h).
inline constexpr auto kHostKeys = std::to_array<support::KeySpec<HostOptions>>({
    {"align",
     "none: unaligned access allowed (x86), misaligned accesses charged; copy-down: if_simloop "
     "copies to a 4-byte boundary (never into shared storage); strict: a misaligned access "
     "faults and ends the run; copy-down-unsafe: the naive in-place fix-up.",
     support::Choice<HostOptions>{
         &align_policy_names,
         [](HostOptions& o, std::string_view v) { o.align = *parse_align_policy(v); },
         [](const HostOptions& o) { return align_policy_name(o.align); }}},
    {"copy", "How ether_output copies a broadcast for the simplex loop.",
     support::Choice<HostOptions>{
         &loop_copy_names,
         [](HostOptions& o, std::string_view v) { o.loop_copy = *parse_loop_copy(v); },
         [](const HostOptions& o) { return loop_copy_name(o.loop_copy); }}},
    {"sockaddr_misalign",
     "Bytes past a 4-byte boundary of udp_in, the static sockaddr_in that udp_input fills for "
     "each received datagram (struct sockaddr asks for no alignment: FreeBSD's sun_noname).",
     &support::at<&HostOptions::sockaddr_misalign>, 0, 3},
    {"nic_ring", "NIC transmit descriptors.", &support::at<&HostOptions::nic_ring>, 1, 1e6},
    {"ether_mtu", "MTU of the Ethernet interface, bytes.", &support::at<&HostOptions::ether_mtu>,
     68, kMaxEtherMtu},
});

}  // namespace simloop::net
