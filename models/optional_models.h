// The optional timing models: the one list the configuration schema, the
// result columns and the engine's probe are made from (models/model_spec.h
// says what each model declares). A model joins simloop by its line here.
#pragma once

#include <tuple>
#include <type_traits>

#include "models/branch_targets.h"
#include "models/dtlb.h"
#include "models/model_spec.h"

namespace simloop::models {

using OptionalModels = ModelList<DataTlb, BranchTargets>;

namespace detail {
template <class L>
struct ConfigsOf;
template <class... M>
struct ConfigsOf<ModelList<M...>> {
  using type = std::tuple<typename M::Config...>;
};
template <class L>
struct ForEach;
template <class... M>
struct ForEach<ModelList<M...>> {
  template <class F>
  static void run(F&& f) {
    (f(std::type_identity<M>{}), ...);
  }
};
}  // namespace detail

// One configuration of each optional model, in list order.
using ModelConfigs = detail::ConfigsOf<OptionalModels>::type;

// Calls f(std::type_identity<M>{}) for each optional model M, in order.
template <class F>
void for_each_model(F&& f) {
  detail::ForEach<OptionalModels>::run(std::forward<F>(f));
}

// Whether stage `s` is an optional model's.
inline bool model_stage(Stage s) {
  bool found = false;
  for_each_model([&]<class M>(std::type_identity<M>) { found = found || M::kStage == s; });
  return found;
}

// Whether stage `s` is reported with configurations `c`: every stage but an
// optional model's, which only while its model is on.
inline bool stage_reported(const ModelConfigs& c, Stage s) {
  bool reported = true;
  for_each_model([&]<class M>(std::type_identity<M>) {
    if (M::kStage == s) reported = std::get<typename M::Config>(c).enabled;
  });
  return reported;
}

}  // namespace simloop::models
