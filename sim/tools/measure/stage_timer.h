// A probe that measures self time per stack function with the CPU's time
// stamp counter, converted to nanoseconds against the steady clock.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sim/stack/harness.h"
#include "sim/stack/net/probe.h"

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

namespace simloop::measure {

// A counter's step in ticks, roughly (1: it has none), from `read`s taken
// around `wait(turns)` of random length. Reads in a tight loop cannot tell:
// their distance is the read's own latency, the same every time. Around
// random waits a fine counter gives nearly every distance in their range, a
// stepped one about one in each step. (The distances' gcd cannot tell
// either: a counter scaled by a hypervisor steps 25 and 26 ticks in turn,
// and now and then 1.)
// The next of a cheap pseudo-random sequence (xorshift; never 0 from non-0).
inline uint32_t xorshift32(uint32_t x) {
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  return x;
}

template <class Read, class Wait>
uint64_t counter_step(Read read, Wait wait) {
  std::vector<uint64_t> d(4096);
  uint32_t rng = 2463534242u;
  for (uint64_t& x : d) {
    rng = xorshift32(rng);
    const uint64_t t0 = read();
    wait(rng & 255);
    x = read() - t0;
  }
  std::sort(d.begin(), d.end());
  d.resize(d.size() * 99 / 100);  // a preempted wait would stretch the range
  const uint64_t range = d.back() - d.front();
  d.erase(std::unique(d.begin(), d.end()), d.end());
  if (d.size() < 2 || range / (d.size() - 1) < 4) return 1;
  // Stepped: the step is the usual gap between the distances, not counting
  // the odd tick by which a scaled counter's steps differ.
  std::vector<uint64_t> gaps;
  for (size_t i = 1; i < d.size(); ++i)
    if (d[i] - d[i - 1] > 1) gaps.push_back(d[i] - d[i - 1]);
  if (gaps.empty()) return 4;
  std::nth_element(gaps.begin(), gaps.begin() + gaps.size() / 2, gaps.end());
  return std::max<uint64_t>(4, gaps[gaps.size() / 2]);
}

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
  // The counter's step in ticks, roughly (1 on a counter without steps),
  // and whether each read is followed by a random wait because of it.
  static uint64_t clock_step();
  static bool waits() { return clock_step() >= 4; }

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
    rng_ = xorshift32(rng_);
    spin(rng_ & 127);
  }
  static void spin(uint32_t turns) {
    for (; turns != 0; --turns) asm volatile("");
  }
  bool dither_ = waits();
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

extern template class simloop::stacks::harness::Stack<simloop::measure::StageTimer>;
