// What the stage timer's own clock reads cost, so that its per-function
// times can be corrected: a function's self time includes `self_ns` per call
// and `parent_ns` per call it makes.
#pragma once

#include <cstdint>

namespace simloop::measure {

struct SplitOverhead {
  double self_ns = 0;    // per call of a function, charged to it
  double parent_ns = 0;  // per call a function makes, charged to the caller
};

// Times `calls` empty calls with and without a child under a StageTimer, in
// `trials` trials, and keeps the smallest (least disturbed) figures.
SplitOverhead measure_split_overhead(int64_t calls = 200000, int trials = 5);

}  // namespace simloop::measure
