// The Ethernet wire and transmit-completion interrupts, as pure models.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>

namespace simloop::models {

// Bytes one frame occupies on Ethernet: the frame padded to the 60-byte
// minimum, the 4-byte FCS, the 8-byte preamble and the 12-byte gap.
constexpr int ether_wire_bytes(int frame_len) {
  return std::max(frame_len, 60) + 4 + 8 + 12;
}

// Frames leave in order, one at a time, at the link's bit rate.
class WireSerializer {
 public:
  explicit WireSerializer(double bandwidth_bps) : bandwidth_bps_(bandwidth_bps) {}
  // A frame handed to the NIC at `t` finishes leaving at the returned time.
  double depart(double t, int frame_len) {
    const double start = std::max(t, busy_until_);
    busy_until_ = start + ether_wire_bytes(frame_len) * 8.0 / bandwidth_bps_;
    return busy_until_;
  }
  double busy_until() const { return busy_until_; }

 private:
  double bandwidth_bps_;
  double busy_until_ = 0;
};

// Interrupt moderation: an interrupt after every `packets` completions, or,
// with an interval, at most one per interval (the first completion after a
// quiet period waits for the interval to end). Completions arrive in order.
class IrqModerator {
 public:
  IrqModerator(int packets, double interval_s)
      : packets_(std::max(packets, 1)), interval_(interval_s) {}

  // Reports a completion at `t`; returns the time of a newly scheduled
  // interrupt that covers it, if this completion schedules one.
  std::optional<double> on_completion(double t) {
    if (interval_ > 0) {
      if (scheduled_ && t <= next_) return std::nullopt;  // the pending one covers it
      next_ = std::max(t, last_ + interval_);
      last_ = next_;
      scheduled_ = true;
      return next_;
    }
    if (++pending_ < packets_) return std::nullopt;
    pending_ = 0;
    return t;
  }

 private:
  int packets_;
  double interval_;
  int pending_ = 0;
  bool scheduled_ = false;
  double next_ = 0;
  double last_ = -1e300;
};

}  // namespace simloop::models
