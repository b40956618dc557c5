// Native runs of any stack of the list (stacks.h): apart from native.cc,
// which the native harness links, so that the harness's code (and the
// I-cache layouts measured from it) stays its own stack's alone
// (stacks::HarnessKind, sim/stack/harness.h).
#include "sim/stack/stacks.h"
#include "sim/tools/measure/native.h"
#include "sim/tools/measure/native_loop.h"
#include "sim/tools/measure/stage_timer.h"

namespace simloop::measure {

std::vector<NativeResult> run_native(const NativeOptions& opt, std::string_view stack,
                                     const net::HostOptions& host,
                                     const stacks::StackOptionSet& own) {
  std::vector<NativeResult> out;
  const bool found = stacks::with_stack(stack, [&]<class K>(std::type_identity<K>) {
    using S = typename K::template Stack<net::NullProbe>;
    const auto so = K::options(host, own.get<typename K::Own>(K::kName));
    for (int i = 0; i < opt.repeats; ++i) {
      net::NullProbe probe;
      out.push_back(run_native_loop<net::NullProbe, S>(opt, probe, i, so));
      if (opt.split) {
        // As run_native's: a second, instrumented run for the shares of time.
        StageTimer timer(K::fns());
        using T = typename K::template Stack<StageTimer>;
        auto timed = run_native_loop<StageTimer, T>(opt, timer, i, so);
        const double per = timed.total_sent > 0 ? 1.0 / static_cast<double>(timed.total_sent) : 0;
        for (const auto& [name, ns] : timer.self_ns())
          out.back().stage_ns.emplace_back(name, ns * per);
        out.back().split_ns_per_packet = timed.ns_per_packet();
      }
    }
  });
  if (!found) throw std::invalid_argument("no stack named " + std::string(stack));
  return out;
}

}  // namespace simloop::measure
