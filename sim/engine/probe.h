// The probe the simulated stack reports to: the timing models side by side
// (models/tee.h). The account prices every event by stage; the I-cache and
// the optional models (models/optional_models.h), when on, add their stalls
// to it. An optional model joins by its line in that list.
//
// Each stack of the list is instantiated for it (and for QuietProbe) in
// simulation.cc, built with a larger unit growth limit (CMakeLists.txt) so
// that the probe's hooks are still inlined into the stacks' functions.
#pragma once

#include <memory>
#include <tuple>

#include "models/cycle_account.h"
#include "models/icache_probe.h"
#include "models/optional_models.h"
#include "models/tee.h"

namespace simloop::engine {

template <class L>
struct ProbeOf;
template <class... M>
struct ProbeOf<models::ModelList<M...>> {
  using type = models::Tee<models::ICacheProbe*, models::CycleAccount&, M*...>;
  using Parts = std::tuple<std::unique_ptr<M>...>;  // the optional models, null when off
};
using Probe = ProbeOf<models::OptionalModels>::type;
using OptionalParts = ProbeOf<models::OptionalModels>::Parts;

// The probe of a run with the account alone: no I-cache, no optional model
// and no timeline (most runs). The stacks are instantiated for it too, so
// that such a run tests for none of the absent parts on every event.
using QuietProbe = models::Tee<models::QuietAccount&>;

}  // namespace simloop::engine
