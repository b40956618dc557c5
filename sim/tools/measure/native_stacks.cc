// Native runs of any stack of the list (stacks.h): apart from native.cc,
// which the native harness links, so that the harness's code (and the
// I-cache layouts measured from it) stays the BSD stack's alone.
#include "sim/stack/stacks.h"
#include "sim/tools/measure/native.h"
#include "sim/tools/measure/native_loop.h"

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
    }
  });
  if (!found) throw std::invalid_argument("no stack named " + std::string(stack));
  return out;
}

}  // namespace simloop::measure
