// The poll stack's functions: a kernel-bypass UDP sender that builds whole
// frames in memory the process owns and posts them to a device ring it
// polls itself. No function is a system call.
#pragma once

#include <array>
#include <cstdint>

#include "sim/stack/net/fn_table.h"

namespace simloop::net::poll {

enum class Fn : uint8_t {
  pkt_send,   // the send call: a free buffer, the frame built in it
  pkt_fill,   // the Ethernet, IP and UDP headers written, the payload copied
  ring_post,  // the descriptor posted (a doorbell write, batched)
  ring_poll,  // transmit completion, polled: finished descriptors reaped
  rx_poll,    // the looped-back ring polled: frames checked and queued
  pkt_recv,   // the receiver's read of one queued datagram
  count
};

inline constexpr std::array<FnInfo, static_cast<size_t>(Fn::count)> kFns = {{
    {"pkt_send", "socket", PathRole::socket, FnRole::plain},
    {"pkt_fill", "udp", PathRole::udp_output, FnRole::plain},  // every header, in one
    {"ring_post", "driver", PathRole::device, FnRole::plain},
    {"ring_poll", "driver", PathRole::device, FnRole::completion},
    {"rx_poll", "input", PathRole::udp_input, FnRole::plain},
    {"pkt_recv", "receive", PathRole::receive, FnRole::plain},
}};
static_assert(has_path_roles(kFns));

// Its words for the stages its functions are charged to.
inline constexpr std::array<StageName, 3> kStageNames = {{
    {"socket", "send call", "the application's own send call into its frame pool: no system call"},
    {"driver", "ring", "the transmit ring: descriptors posted, completions polled"},
    {"input", "rx poll", "the receive ring polled: frames checked and queued for the reader"},
}};

inline constexpr FnTable kFnTable{"poll", kFns, kStageNames};

}  // namespace simloop::net::poll
