// The probe the simulated stack reports to: the timing models side by side
// (models/tee.h). The account prices every event by stage; the I-cache and
// the data TLB, when on, add their stalls to it. A timing model joins the
// world here (and as a member of World in simulation.cc).
//
// The stack is instantiated for it in probe.cc, a unit of its own: inside
// simulation.cc the compiler's unit growth limit stops it from inlining the
// probe's hooks into the stack's functions, which costs a call per event.
#pragma once

#include "models/cycle_account.h"
#include "models/dtlb.h"
#include "models/icache_probe.h"
#include "models/tee.h"
#include "net/stack.h"

namespace simloop::engine {

using Probe = models::Tee<models::ICacheProbe*, models::CycleAccount&, models::DataTlb*>;

}  // namespace simloop::engine

namespace simloop::net {
extern template class Stack<engine::Probe>;
}
