// The probe the simulated stack reports to: the timing models side by side
// (models/tee.h). The account prices every event by stage; the I-cache and
// the optional models (models/optional_models.h), when on, add their stalls
// to it. An optional model joins by its line in that list.
//
// Each stack of the list is instantiated for it (and for QuietProbe and
// CacheProbe) in simulation.cc, built with a larger unit growth limit
// (CMakeLists.txt) so that the probe's hooks are still inlined into the
// stacks' functions.
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
// The probe of a run with the I-cache and the account alone, and no
// timeline: the I-cache study's runs. Its parts are always there, so no
// event tests for an absent one or for a listener.
using CacheProbe = models::Tee<models::ICacheProbe&, models::QuietAccount&>;

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

// The probe of type `P` over a run's models: every part (Probe), the
// account alone (QuietProbe, when no other part is on), or the I-cache and
// the account (CacheProbe).
template <class P>
P make_probe(models::CycleAccount& acct, models::QuietAccount& quiet,
             const std::unique_ptr<models::ICacheProbe>& icache, OptionalParts& optional) {
  if constexpr (std::is_same_v<P, QuietProbe>) {
    (void)acct, (void)icache, (void)optional;
    return P(quiet);
  } else if constexpr (std::is_same_v<P, CacheProbe>) {
    (void)acct, (void)optional;
    return P(*icache, quiet);
  } else {
    (void)quiet;
    return std::apply([&](auto&... m) { return P(icache.get(), acct, m.get()...); }, optional);
  }
}

// The probe a run can use: QuietProbe when no model but the account is on
// and no timeline listens to it, CacheProbe when the I-cache is the only
// other, else Probe.
enum class ProbeKind { quiet, cache, full };
inline ProbeKind probe_kind(const config::Experiment& x, const Tracer* tracer) {
  bool optional = false;
  models::for_each_model([&]<class M>(std::type_identity<M>) {
    if (std::get<typename M::Config>(x.models).enabled) optional = true;
  });
  if (tracer != nullptr || optional) return ProbeKind::full;
  return x.cache_enabled && x.code ? ProbeKind::cache : ProbeKind::quiet;
}
// `run(std::type_identity<P>{})` with the probe type P the run takes.
template <class F>
auto with_probe(const config::Experiment& x, const Tracer* tracer, F&& run) {
  switch (probe_kind(x, tracer)) {
    case ProbeKind::quiet:
      return run(std::type_identity<QuietProbe>{});
    case ProbeKind::cache:
      return run(std::type_identity<CacheProbe>{});
    case ProbeKind::full:
      break;
  }
  return run(std::type_identity<Probe>{});
}

}  // namespace simloop::engine
