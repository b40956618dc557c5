#include "sim/tools/measure/stage_timer_overhead.h"

#include <algorithm>
#include <limits>

#include "sim/stack/harness.h"
#include "sim/tools/measure/stage_timer.h"

namespace simloop::measure {

SplitOverhead measure_split_overhead(int64_t calls, int trials) {
  SplitOverhead best{std::numeric_limits<double>::infinity(),
                     std::numeric_limits<double>::infinity()};
  if (calls <= 0) return {};
  // Two functions that do nothing: the caller's self time is its own enter
  // and leave plus the child's, the child's only its own.
  // Any two of the functions of the stack measure native times.
  const net::FnTable& fns = stacks::HarnessKind::fns();
  const net::FnId kCaller = net::fn_at(0);
  const net::FnId kChild = net::fn_at(1);
  for (int t = 0; t < std::max(trials, 1); ++t) {
    StageTimer timer(fns);
    for (int64_t i = 0; i < calls; ++i) {
      timer.enter(kCaller);
      timer.enter(kChild);
      timer.leave(kChild);
      timer.leave(kCaller);
    }
    double caller = 0, child = 0;
    for (const auto& [name, ns] : timer.self_ns()) {
      if (name == fns.name(kCaller)) caller = ns;
      if (name == fns.name(kChild)) child = ns;
    }
    const double self = child / static_cast<double>(calls);
    const double parent = caller / static_cast<double>(calls) - self;
    best.self_ns = std::min(best.self_ns, self);
    best.parent_ns = std::min(best.parent_ns, std::max(parent, 0.0));
  }
  return best;
}

}  // namespace simloop::measure
