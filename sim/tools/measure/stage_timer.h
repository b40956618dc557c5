// A probe that measures self time per stack function with the CPU's time
// stamp counter, converted to nanoseconds against the steady clock.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sim/stack/bsd/stack.h"
#include "sim/stack/net/probe.h"

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

namespace simloop::measure {

class StageTimer : public net::NullProbe {
 public:
  // `fns`: the functions of the stack it times.
  explicit StageTimer(const net::FnTable& fns);
  void enter(net::FnId fn) {
    const uint64_t now = ticks();
    if (depth_ > 0) self_[static_cast<size_t>(stack_[depth_ - 1])] += now - last_;
    if (depth_ < stack_.size()) stack_[depth_++] = fn;
    last_ = now;
    dither();
  }
  void leave(net::FnId /*fn*/) {
    const uint64_t now = ticks();
    if (depth_ > 0) self_[static_cast<size_t>(stack_[--depth_])] += now - last_;
    last_ = now;
    dither();
  }
  // Self time per function in ns, for functions that ran.
  std::vector<std::pair<std::string, double>> self_ns() const;

 private:
  static uint64_t ticks() {
#if defined(__x86_64__) || defined(__i386__)
    return __rdtsc();
#else
    return static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
#endif
  }
  // Some CPUs advance the time stamp counter in steps about as long as a
  // clock read (21 ticks, 10 ns, on an AMD EPYC), and each read falls at
  // the same point of a step: a short function's time then comes out as a
  // whole number of steps, whatever it costs. On such a CPU a random wait
  // of up to 127 loop turns (several steps) after every read spreads where
  // the next read falls, so that a function's mean over a run is its cost
  // plus the mean wait; the wait is part of the per-call overhead that
  // measure_split_overhead measures the same way and calibrate removes.
  // Where the counter has no steps, nothing waits.
  void dither() {
    if (!dither_) return;
    rng_ ^= rng_ << 13;
    rng_ ^= rng_ >> 17;
    rng_ ^= rng_ << 5;
    for (uint32_t k = rng_ & 127; k != 0; --k) asm volatile("");
  }
  // The counter's step: the greatest common divisor of the differences
  // between successive reads (1 on a counter without steps).
  static uint64_t clock_step();
  bool dither_ = clock_step() >= 4;
  uint32_t rng_ = 2463534242u;
  const net::FnTable* fns_;
  std::array<net::FnId, 32> stack_{};
  size_t depth_ = 0;
  uint64_t last_ = 0;
  std::array<uint64_t, net::kMaxFns> self_{};
  uint64_t t0_ticks_;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace simloop::measure

namespace simloop::net {
extern template class Stack<measure::StageTimer>;
}
