// The probe the simulated stack reports to: the timing models side by side
// (models/tee.h). The account prices every event by stage; the I-cache and
// the optional models (models/optional_models.h), when on, add their stalls
// to it. An optional model joins by its line in that list.
//
// Each stack of the list is instantiated for it (and for QuietProbe) in
// simulation.cc, built with a larger unit growth limit (CMakeLists.txt) so
// that the probe's hooks are still inlined into the stacks' functions.
// Below, how a run's models and its probe are made from the experiment.
#pragma once

#include <memory>
#include <tuple>
#include <type_traits>

#include "models/cycle_account.h"
#include "models/icache_probe.h"
#include "models/optional_models.h"
#include "models/tee.h"
#include "sim/config/experiment.h"

namespace simloop::engine {

class Tracer;

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

// The I-cache model, if the experiment turns it on (it needs a code layout).
inline std::unique_ptr<models::ICacheProbe> make_icache(const config::Experiment& x,
                                                        models::CycleAccount& acct) {
  if (!x.cache_enabled || !x.code) return nullptr;
  const models::PageColouring colouring{x.seed, x.variance.phys_pages};
  return std::make_unique<models::ICacheProbe>(acct, *x.code, x.icache, x.fetch,
                                               x.engine.icache_replay,
                                               x.variance.page_colouring ? &colouring : nullptr);
}

// The optional models the experiment turns on.
inline OptionalParts make_optional(const config::Experiment& x, models::CycleAccount& acct) {
  OptionalParts parts;
  models::for_each_model([&]<class M>(std::type_identity<M>) {
    const auto& c = std::get<typename M::Config>(x.models);
    if (c.enabled) std::get<std::unique_ptr<M>>(parts) = std::make_unique<M>(acct, c);
  });
  return parts;
}

// The probe of type `P` over a run's models: every part (Probe), or the
// account alone (QuietProbe, when no other part is on).
template <class P>
P make_probe(models::CycleAccount& acct, models::QuietAccount& quiet,
             const std::unique_ptr<models::ICacheProbe>& icache, OptionalParts& optional) {
  if constexpr (std::is_same_v<P, QuietProbe>) {
    (void)acct, (void)icache, (void)optional;
    return P(quiet);
  } else {
    (void)quiet;
    return std::apply([&](auto&... m) { return P(icache.get(), acct, m.get()...); }, optional);
  }
}

// Whether a run can use QuietProbe: no model but the account is on, and no
// timeline listens to it.
inline bool quiet_run(const config::Experiment& x, const Tracer* tracer) {
  bool quiet = tracer == nullptr && !(x.cache_enabled && x.code);
  models::for_each_model([&]<class M>(std::type_identity<M>) {
    if (std::get<typename M::Config>(x.models).enabled) quiet = false;
  });
  return quiet;
}

}  // namespace simloop::engine
