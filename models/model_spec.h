// What an optional timing model declares of itself. The configuration
// schema (its keys, their ranges and docs: --set, sweeps, the generated
// reference), the result columns and the engine's probe are all made from
// these declarations (models/optional_models.h lists the models), so a model
// lives in its own files.
//
// A model M is a probe component (models/tee.h) that provides:
//
//   using Config = ...;                  // plain data, with `bool enabled`
//   static constexpr std::string_view kSection;  // its keys' prefix, "machine.dtlb"
//   static constexpr std::string_view kDoc;      // the section's one-line doc
//   static constexpr Stage kStage;       // the stage its stalls are charged to
//   static constexpr std::string_view kStageDoc; // what that stage's cycles are
//   static constexpr std::array<KeySpec<Config>, N> kKeys;
//   static constexpr std::array<ColumnSpec, K> kColumns;  // result columns, when on
//   M(CycleAccount&, const Config&);
//   std::array<double, K> columns(double per_packet) const;  // their values at the end
//                                        // (per_packet: 1 / packets sent)
#pragma once

#include <cstdint>
#include <string_view>
#include <variant>

#include "sim/support/key_spec.h"

namespace simloop::models {

// One configuration key of model config C: `<section>.<name>`, in the form
// every part of the program declares its keys (support/key_spec.h).
template <class C>
using KeySpec = support::KeySpec<C>;
using support::at;

// One result column a model adds to a run's row when it is on.
struct ColumnSpec {
  std::string_view name, unit, doc;
};

// The optional models, in the order events reach them (after the account).
template <class... M>
struct ModelList {};

}  // namespace simloop::models
