#include "sim/tools/measure/stage_timer.h"

template class simloop::stacks::harness::Stack<simloop::measure::StageTimer>;

namespace simloop::measure {

uint64_t StageTimer::clock_step() {
  static const uint64_t step = counter_step(ticks, spin);
  return step;
}

StageTimer::StageTimer(const net::FnTable& fns)
    : fns_(&fns), t0_ticks_(ticks()), t0_(std::chrono::steady_clock::now()) {}

std::vector<std::pair<std::string, double>> StageTimer::self_ns() const {
  // Ticks to ns from the whole life of the timer: the TSC rate is constant.
  const double ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0_).count();
  const uint64_t dt = ticks() - t0_ticks_;
  const double per_tick = dt > 0 ? ns / static_cast<double>(dt) : 1.0;
  std::vector<std::pair<std::string, double>> out;
  for (size_t i = 0; i < fns_->size(); ++i)
    if (self_[i] != 0)
      out.emplace_back(std::string(fns_->name(net::fn_at(i))),
                       static_cast<double>(self_[i]) * per_tick);
  return out;
}

}  // namespace simloop::measure
