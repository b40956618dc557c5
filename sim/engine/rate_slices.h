// How steady the send rate is within one run: packets sent per equal slice
// of simulated time, and the coefficient of variation of those counts.
//
// Each batch of packets is spread evenly over the simulated time its
// execution took, into bins of one width from the start of the run. When
// the run outgrows the bins, neighbours are merged and the width doubles,
// so every bin always has the same width (the counts of equal slices stay
// comparable however long the run) and memory stays flat. Each bin also
// keeps the span its packets were sent in, so a bin the run ends in (or a
// sleep cuts) is not taken as full. Time the sender spends asleep (ENOBUFS)
// gets no packets.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/support/zero_pages.h"

namespace simloop::engine {

class RateSlices {
 public:
  static constexpr size_t kBins = 4096;

  // `packets` sent during [from, to] of simulated time.
  void add(double from, double to, double packets) {
    ++batches_;
    if (packets <= 0) return;
    if (bins_.empty()) {
      t0_ = from;
      width_ = std::max(to - from, 1e-9);
      bins_ = support::ZeroPages<Bin>(kBins);
    }
    from = std::max(from, t0_);
    to = std::max(to, from);
    while (to - t0_ >= width_ * kBins) grow();
    if (to <= from) {
      bins_[bin_of(from)].add(packets, from, from);
      return;
    }
    const double per_s = packets / (to - from);
    for (size_t b = bin_of(from), last = bin_of(to); b <= last; ++b) {
      const double lo = std::max(from, t0_ + width_ * static_cast<double>(b));
      const double hi = std::min(to, t0_ + width_ * static_cast<double>(b + 1));
      if (hi > lo) bins_[b].add(per_s * (hi - lo), lo, hi);
    }
  }

  int64_t batches() const { return batches_; }

  // Packets in each of `slices` equal slices of [t0, t0 + elapsed]; a bin a
  // slice boundary cuts is shared by the fraction of it on each side.
  std::vector<double> slice_counts(double t0, double elapsed, int slices) const {
    std::vector<double> out(static_cast<size_t>(slices), 0.0);
    if (bins_.empty() || elapsed <= 0) return out;
    for (const Bin& bin : bins_) {
      if (bin.packets == 0) continue;
      const double lo = bin.from, hi = bin.to;
      if (hi <= lo) {
        out[static_cast<size_t>(slice_of(lo, t0, elapsed, slices))] += bin.packets;
        continue;
      }
      const double per_s = bin.packets / (hi - lo);
      const auto first = slice_of(lo, t0, elapsed, slices);
      const auto last = slice_of(hi, t0, elapsed, slices);
      for (int k = first; k <= last; ++k) {
        const double s_lo = std::max(lo, t0 + elapsed * k / slices);
        const double s_hi = std::min(hi, t0 + elapsed * (k + 1) / slices);
        if (s_hi > s_lo) out[static_cast<size_t>(k)] += per_s * (s_hi - s_lo);
      }
    }
    return out;
  }

  // Coefficient of variation of the rate over 20 equal slices of the run
  // (0 with fewer than 40 batches: too few to say).
  double cv(double t0, double elapsed) const {
    constexpr int kSlices = 20;
    if (elapsed <= 0 || batches_ < 2 * kSlices) return 0;
    const auto counts = slice_counts(t0, elapsed, kSlices);
    double mean = 0;
    for (double c : counts) mean += c;
    mean /= kSlices;
    double var = 0;
    for (double c : counts) var += (c - mean) * (c - mean);
    return mean > 0 ? std::sqrt(var / (kSlices - 1)) / mean : 0;
  }

 private:
  size_t bin_of(double t) const {
    const double i = std::floor((t - t0_) / width_);
    return static_cast<size_t>(std::clamp(i, 0.0, static_cast<double>(kBins - 1)));
  }
  static int slice_of(double t, double t0, double elapsed, int slices) {
    const double k = std::floor((t - t0) / elapsed * slices);
    return static_cast<int>(std::clamp(k, 0.0, static_cast<double>(slices - 1)));
  }
  void grow() {
    for (size_t i = 0; i < kBins / 2; ++i) {
      Bin merged = bins_[2 * i];
      const Bin& next = bins_[2 * i + 1];
      if (next.packets > 0) merged.add(next.packets, next.from, next.to);
      bins_[i] = merged;
    }
    std::fill(bins_.begin() + kBins / 2, bins_.end(), Bin{});
    width_ *= 2;
  }

  // Packets, and the span of time they were sent in.
  struct Bin {
    double packets = 0, from = 0, to = 0;
    void add(double n, double lo, double hi) {
      from = packets > 0 ? std::min(from, lo) : lo;
      to = packets > 0 ? std::max(to, hi) : hi;
      packets += n;
    }
  };

  double t0_ = 0, width_ = 0;
  int64_t batches_ = 0;
  support::ZeroPages<Bin> bins_;  // all zero bytes: no packets yet
};

}  // namespace simloop::engine
