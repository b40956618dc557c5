// The I-cache model pointed at the native harness: the harness's own symbol
// map gives the addresses, a hot profile (or a fraction of each symbol) the
// bytes that run, and the real stack, run through the harness's loop behind a
// code tracer, the order they run in. The result is L1 misses per packet for
// an I1 geometry, to be put beside what cachegrind counts for the same build.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "measure/native.h"
#include "models/icache.h"
#include "models/layout.h"
#include "models/layout_advisor.h"

namespace simloop::measure {

// The code the harness runs for `packets` steady-state packets (after its
// start sentinel and `opt.warmup` packets), as the simulator's replay takes
// it. Throws std::runtime_error if the run faults.
models::PathTrace harness_trace(const NativeOptions& opt, int packets = 50);

// L1 misses per packet of `linked` on `trace` for an I1 cache of geometry
// `i1`, as cachegrind models one: LRU, no prefetch, nothing behind it.
double predict_i1_misses(const models::LinkedLayout& linked, const models::CacheGeometry& i1,
                         const models::PathTrace& trace);

// Whether two lists of values put their items in the same order (ties count
// as agreeing with either order), and Kendall's tau-a between them.
struct RankAgreement {
  bool same_order = true;
  double kendall_tau = 1;
};
RankAgreement rank_agreement(const std::vector<double>& measured,
                             const std::vector<double>& predicted);

}  // namespace simloop::measure
