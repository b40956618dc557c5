// What a stack counts as it runs, the same for every stack: its sends and
// send errors, the packets it looped back and processed on input, what it
// delivered to sockets, and its drops by reason (net::Drop).
#pragma once

#include <array>
#include <cstdint>

#include "sim/stack/net/probe.h"

namespace simloop::net {

struct StackCounters {
  uint64_t sent = 0;  // sendto calls that returned 0
  uint64_t send_errors = 0;
  uint64_t looped = 0;  // packets handed to the loopback path (if_simloop, __netif_rx)
  uint64_t netisr_processed = 0;
  uint64_t delivered = 0, delivered_bytes = 0;  // queued on a socket
  std::array<uint64_t, kDropCount> drops{};
  uint64_t drops_total() const {
    uint64_t t = 0;
    for (auto d : drops) t += d;
    return t;
  }
};

}  // namespace simloop::net
