// Costs a run used that its profiles leave undetermined (a cost key given as
// `~`: no measurement fixes it, so it is priced 0). Found from how much the
// run used each price, said once per run, and listed in its result.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/costs.h"
#include "sim/config/experiment.h"
#include "sim/engine/simulation.h"

namespace simloop::engine {

// The undetermined costs of `x` that a run with these `uses` used, in the
// schema's order (the functions in their table's order).
std::vector<UndeterminedUse> undetermined_uses(const config::Experiment& x,
                                               const models::PriceUses& uses);

// The function a cost key prices (stack.functions.NAME), or "".
std::string priced_function(const std::string& key);

// What a run that used undetermined costs says, once: which, how much a
// packet, the profile and file that leave each so, and how to price one;
// "" when it used none. The warning, and run --strict's refusal.
std::string undetermined_warning(const config::Experiment& x, const SimResult& r);
std::string undetermined_refusal(const config::Experiment& x, const SimResult& r);

// The result document's "undetermined_costs": one object per cost used
// (key, function if it prices one, where, unit, uses, per_packet).
nlohmann::json undetermined_json(const SimResult& r);

}  // namespace simloop::engine
