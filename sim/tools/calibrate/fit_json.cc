// The fit as JSON (NAME-fit.json): written by calibrate, read by compare.
#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/tools/calibrate/fit.h"

namespace simloop::measure {

nlohmann::json Fit::to_json() const {
  nlohmann::json j;
  j["source"] = source;
  j["stat"] = stat == Stat::min ? "min" : "median";
  j["train"] = split.specs();
  j["split_weight"] = split_weight;
  j["split_slowdown"] = slowdown;
  j["split_overhead_fitted_ns"] = split_overhead;
  if (split_choice)
    j["split_choice"] = {{"chosen", split_choice->split ? "per-function times" : "totals only"},
                         {"split_median_abs_error", split_choice->split_error},
                         {"totals_median_abs_error", split_choice->totals_error},
                         {"predictions", split_choice->predictions},
                         {"folds", split_choice->folds}};
  j["units"] = "ns (cycles at clock_hz 1e9)";
  j["params"] = nlohmann::json::array();
  for (size_t i = 0; i < names.size(); ++i) {
    nlohmann::json p = {{"name", names[i]}, {"value", values[i]}, {"scale", scale(i)}};
    if (!lo.empty()) p["interval_90"] = {lo[i], hi[i]};
    p["determined"] =
        std::find(undetermined.begin(), undetermined.end(), names[i]) == undetermined.end();
    nlohmann::json row = nlohmann::json::array();
    for (Eigen::Index k = 0; k < null_basis.cols(); ++k)
      row.push_back(null_basis(static_cast<Eigen::Index>(i), k));
    p["null_directions"] = row;
    j["params"].push_back(p);
  }
  j["bootstrap"] = draws;
  j["rank"] = rank;
  j["condition_number"] = condition;
  j["undetermined"] = undetermined;
  j["training_points"] = training_points;
  j["held_out_points"] = held_out_points;
  j["constant_kpps"] = constant_kpps;
  j["rms_relative_residual"] = rms_rel_residual();
  j["measured"] = measured;
  j["dest"] = dest;
  for (const auto& r : residuals)
    j["residuals"].push_back(
        {{"point", r.label}, {"measured_ns", r.measured_ns}, {"fitted_ns", r.fitted_ns}});
  return j;
}

Fit Fit::from_json(const nlohmann::json& j) {
  try {
    Fit f;
    f.source = j.at("source").get<std::string>();
    const auto st = parse_stat(j.at("stat").get<std::string>());
    if (!st) throw InputError("stat must be median or min");
    f.stat = *st;
    f.split = parse_split(j.at("train").get<std::vector<std::string>>());
    f.split_weight = j.value("split_weight", 0.0);
    f.slowdown = j.value("split_slowdown", 1.0);
    const auto& ps = j.at("params");
    const auto n = static_cast<Eigen::Index>(ps.size());
    f.scale = Eigen::VectorXd::Ones(n);
    Eigen::Index k = 0;
    for (const auto& p : ps) {
      f.names.push_back(p.at("name").get<std::string>());
      f.values.push_back(p.at("value").get<double>());
      f.scale(k) = p.at("scale").get<double>();
      if (p.contains("interval_90")) {
        f.lo.push_back(p["interval_90"][0].get<double>());
        f.hi.push_back(p["interval_90"][1].get<double>());
      }
      const auto& row = p.at("null_directions");
      if (k == 0) f.null_basis = Eigen::MatrixXd::Zero(n, static_cast<Eigen::Index>(row.size()));
      for (size_t c = 0; c < row.size(); ++c)
        f.null_basis(k, static_cast<Eigen::Index>(c)) = row[c].get<double>();
      ++k;
    }
    f.draws = j.value("bootstrap", std::vector<std::vector<double>>{});
    f.rank = j.value("rank", 0);
    f.condition = j.value("condition_number", 0.0);
    f.undetermined = j.value("undetermined", std::vector<std::string>{});
    f.training_points = j.value("training_points", 0);
    f.held_out_points = j.value("held_out_points", 0);
    f.constant_kpps = j.value("constant_kpps", 0.0);
    f.measured = j.value("measured", std::vector<std::string>{});
    f.dest = j.value("dest", std::string());
    return f;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(std::string("not a fit written by simloop calibrate: ") + e.what());
  }
}

}  // namespace simloop::measure
