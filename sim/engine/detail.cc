#include "sim/engine/detail.h"

#include <fmt/format.h>

#include "sim/engine/columns.h"

namespace simloop::engine {

using models::CostKind;

const std::vector<std::string>& function_metrics() {
  static const std::vector<std::string> m = [] {
    std::vector<std::string> v;
    for (size_t k = 0; k < models::kCostKindCount; ++k)
      v.push_back(fmt::format("cycles_{}", models::cost_kind_name(static_cast<CostKind>(k))));
    v.emplace_back("cycles_total");
    v.emplace_back("i1_misses");
    return v;
  }();
  return m;
}

namespace {

double per_packet(const SimResult& r) {
  return r.packets > 0 ? 1.0 / static_cast<double>(r.packets) : 0;
}

// The value of metric `m` (an index into function_metrics()) for function `f`.
double metric(const SimResult& r, size_t f, size_t m) {
  const double per = per_packet(r);
  if (m < models::kCostKindCount) return r.ledger.cycles[f][m] * per;
  if (m == models::kCostKindCount) return r.ledger.fn_total(f) * per;
  return r.ledger.l1i_misses[f] * per;
}

}  // namespace

nlohmann::json detail_json(const SimResult& r) {
  const double per = per_packet(r);
  nlohmann::json fns = nlohmann::json::array();
  for (size_t f : models::ledger_fns(*r.ledger.fns)) {
    nlohmann::json j;
    j["function"] = std::string(models::ledger_fn_name(*r.ledger.fns, f));
    j["cycles_per_packet"] = r.ledger.fn_total(f) * per;
    for (size_t k = 0; k < models::kCostKindCount; ++k)
      j[std::string(models::cost_kind_name(static_cast<CostKind>(k)))] =
          r.ledger.cycles[f][k] * per;
    j["i1_misses_per_packet"] = r.ledger.l1i_misses[f] * per;
    fns.push_back(std::move(j));
  }
  nlohmann::json sets = nlohmann::json::array();
  for (const auto& s : r.icache_sets)
    sets.push_back({{"set", s.set},
                    {"misses_per_packet", s.misses * per},
                    {"stall_per_packet", s.stall * per},
                    {"symbols", s.symbols}});
  return {{"functions", std::move(fns)}, {"icache_sets", std::move(sets)}};
}

std::vector<report::Row> long_rows(const config::Experiment& x, const SimResult& r) {
  const report::Row id = identity_row(x);
  const auto& metrics = function_metrics();
  std::vector<report::Row> rows;
  rows.reserve(models::kLedgerFns * metrics.size());
  for (size_t f : models::ledger_fns(*r.ledger.fns))
    for (size_t m = 0; m < metrics.size(); ++m) {
      report::Row row = id;
      row.set("function", std::string(models::ledger_fn_name(*r.ledger.fns, f)))
          .set("metric", metrics[m])
          .set("value", metric(r, f, m));
      rows.push_back(std::move(row));
    }
  return rows;
}

}  // namespace simloop::engine
