#include "sim/tools/calibrate/fit_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>

namespace simloop::measure {

void print_fit(std::ostream& out, const Fit& fit, const std::vector<Point>& points,
               std::string_view stat) {
  std::set<std::string> sources;
  for (const auto& p : points)
    if (p.native() == (fit.source == "native") && fit.split.trains(p)) sources.insert(p.source);
  if (sources.size() > 1)
    spdlog::warn("the training points come from {} sources ({}): one profile is fitted to all",
                 sources.size(), fmt::join(sources, "; "));

  out << fmt::format("{} fit on {} training point(s) ({}), {} held out; statistic: {}\n",
                     fit.source, fit.training_points, fmt::join(fit.split.specs(), "; "),
                     fit.held_out_points, stat);
  if (fit.split_choice)
    out << fmt::format(
        "observations chosen on the training points ({} predictions in {} folds, each of a "
        "path or a payload left out): median |error| {:.2f} % with per-function times, "
        "{:.2f} % with totals only: {}\n",
        fit.split_choice->predictions, fit.split_choice->folds, 100 * fit.split_choice->split_error,
        100 * fit.split_choice->totals_error,
        fit.split_choice->split ? "per-function times" : "totals only");
  if (fit.source == "native")
    out << fmt::format("observations: ns per packet{}\n",
                       fit.split_weight > 0
                           ? fmt::format(" and each function's self time (weight {:g}; "
                                         "the instrumented run {:.2f} x slower, its clock "
                                         "reads {:.1f} ns per call and {:.1f} per call made "
                                         "beyond the {:.1f} measured)",
                                         fit.split_weight, fit.slowdown, fit.split_overhead.at(0),
                                         fit.split_overhead.at(1), points.front().overhead_self_ns)
                           : " only");
  out << fmt::format(
      "fitted costs (ns){}:\n",
      fit.lo.empty() ? ""
                     : fmt::format(", 90 % interval over {} resamples of "
                                   "the repeats{}",
                                   fit.draws.size(),
                                   fit.stat == measure::Stat::min ? ", centred on the fit (a "
                                                                    "resample's minimum is never "
                                                                    "below the data's)"
                                                                  : ""));
  for (size_t i = 0; i < fit.names.size(); ++i) {
    out << fmt::format("  {:<42} {:10.4f}", fit.names[i], fit.values[i]);
    if (!fit.lo.empty()) out << fmt::format("  [{:9.4f}, {:9.4f}]", fit.lo[i], fit.hi[i]);
    const auto with = fit.tied_to(fit.names[i]);
    if (with)
      out << (with->empty()
                  ? "  not determined: never exercised"
                  : fmt::format("  not determined: only with {}", fmt::join(*with, ", ")));
    out << "\n";
  }
  out << fmt::format("design: {} parameters, rank {}, condition number {:.3g}\n", fit.names.size(),
                     fit.rank, fit.condition);
  if (!fit.undetermined.empty())
    out << fmt::format(
        "not determined by the training data (only in sums with others, or never exercised): "
        "{}\n",
        fmt::join(fit.undetermined, ", "));
  out << "residuals on the training points:\n";
  for (const auto& r : fit.residuals)
    out << fmt::format("  {:<50} measured {:8.1f} ns  fitted {:8.1f} ns  {:+6.2f} %\n", r.label,
                       r.measured_ns, r.fitted_ns,
                       100 * (r.fitted_ns - r.measured_ns) / r.measured_ns);
  out << fmt::format("rms relative residual {:.2f} %\n", 100 * fit.rms_rel_residual());
}

int warn_undetermined(const Fit& fit, const std::vector<Point>& points) {
  // Held-out points whose prediction needs a parameter the data leave free:
  // one warning per set of such parameters (a study holds hundreds of
  // points, and they share a few sets), naming the first points.
  int relying = 0;
  std::map<std::vector<std::string>, std::vector<std::string>> by_params;
  for (const auto& p : points) {
    if (p.native() != (fit.source == "native") || fit.split.trains(p)) continue;
    const auto r = fit.relies_on(features_for(fit, p));
    if (r.empty()) continue;
    ++relying;
    by_params[r].push_back(p.label());
  }
  for (const auto& [params, labels] : by_params) {
    constexpr size_t kNamed = 3;
    const std::vector<std::string> named(labels.begin(),
                                         labels.begin() + std::min(labels.size(), kNamed));
    spdlog::warn(
        "{} held-out point(s) rely on {}, which the training data do not determine: "
        "{}{}",
        labels.size(), fmt::join(params, ", "), fmt::join(named, "; "),
        labels.size() > kNamed ? fmt::format("; and {} more", labels.size() - kNamed)
                               : std::string());
  }
  return relying;
}

}  // namespace simloop::measure
