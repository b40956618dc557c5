// The stack the native harness is built from: the one place that names it.
// The harness program (simloop-harness*, sim/tools/measure/harness_main.cc)
// links this stack alone, and the stored I-cache validation
// (experiments/validation/data, configs/harness/owners.txt) measured that
// program's code, so `measure native` without --stack, its stage timer, the
// I-cache check of a harness build, the layout advisor's recorded path and
// calibrate --source native all run this stack.
//
// Beside stacks.h, not in it: the harness's own units include this header,
// and must not pull in the other stacks of the list.
#pragma once

#include <type_traits>

#include "sim/stack/bsd/kind.h"
#include "sim/stack/net/stack_kind.h"

namespace simloop::stacks {

using HarnessKind = net::bsd::Kind;
static_assert(HarnessKind::kMeasured == net::Measured::harness,
              "the harness's stack is the one its kind says is measured by the harness");

// Its stack's class template under a name of its own, for the explicit
// instantiations of Stack<P> for the tools' probes (an alias template such
// as HarnessKind::Stack cannot be named in one).
namespace harness {
using net::bsd::Stack;
static_assert(std::is_same_v<Stack<net::NullProbe>, HarnessKind::Stack<net::NullProbe>>);
}  // namespace harness

}  // namespace simloop::stacks
