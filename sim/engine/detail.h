// A run's per-function detail: cycles per packet by function and kind of
// cost, I-cache misses per packet by function, and the I-cache sets that
// missed. As JSON (beside the result row) and as long rows (one per
// function and metric: the form data-frame tools read directly).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/config/experiment.h"
#include "sim/engine/simulation.h"
#include "sim/report/table.h"

namespace simloop::engine {

// The metrics of the long rows, in order: cycles_<kind> for each cost
// kind, cycles_total, i1_misses (all per packet).
const std::vector<std::string>& function_metrics();

// {"functions": [{"function", "cycles_per_packet", "<kind>"..., "i1_misses_per_packet"}],
//  "icache_sets": [{"set", "misses_per_packet", "stall_per_packet", "symbols"}]}
nlohmann::json detail_json(const SimResult& r);

// One row per function and metric: the identifying columns, then
// function, metric, value.
std::vector<report::Row> long_rows(const config::Experiment& x, const SimResult& r);

}  // namespace simloop::engine
