// Native runs of the Linux stack: apart from native.cc, which the native
// harness links, so that the harness's code (and the I-cache layouts
// measured from it) stays the BSD stack's alone.
#include "sim/stack/linux/stack.h"
#include "sim/stack/workload/linux_options.h"
#include "sim/tools/measure/native_loop.h"

namespace simloop::measure {

std::vector<NativeResult> run_native(const NativeOptions& opt, const net::lnx::Options& so) {
  std::vector<NativeResult> out;
  for (int i = 0; i < opt.repeats; ++i) {
    net::NullProbe probe;
    out.push_back(
        run_native_loop<net::NullProbe, net::lnx::Stack<net::NullProbe>>(opt, probe, i, so));
  }
  return out;
}

}  // namespace simloop::measure
