#include "sim/tools/cli/calibrate_kernel.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <optional>

#include "sim/config/experiment.h"
#include "sim/report/safe_file.h"
#include "sim/support/yaml_input.h"
#include "sim/tools/calibrate/kernel_fit.h"
#include "sim/tools/cli/commands.h"

namespace simloop::cli {

namespace fs = std::filesystem;

namespace {

// The plain run's user time comes from getrusage, which a kernel with tick
// accounting splits between user and system by its ticks (4 ms at 250 Hz)
// over the thread's whole life: a point's own slices are too short to say
// its share, but the whole data set's plain time says the loop's. perf's
// user share is that of a thread perf slows, and an artefact of its
// sampling once put ten times the user time in a profile: a share the plain
// run contradicts is refused, not fitted. Returns what was checked.
constexpr double kUserShareSlack = 0.05;    // of the time: the ticks are coarse
constexpr double kUserShareMinSeconds = 2;  // of plain CPU time: 500 ticks at 250 Hz

std::string check_user_share(const measure::KernelMeasured& m) {
  double plain = 0, plain_user = 0, perf = 0, perf_user = 0;  // ns, summed over every repeat
  for (const auto& p : m.points)
    for (const auto& r : p.repeats) {
      const auto n = static_cast<double>(r.packets);
      plain += r.plain_cpu_ns * n;
      plain_user += r.plain_user_ns * n;
      perf += r.cpu_ns * n;  // scaled to the plain time: its shares are perf's
      perf_user += r.user_ns * n;
    }
  if (plain < kUserShareMinSeconds * 1e9 || perf <= 0)
    return fmt::format(
        "user share not checked: {:.2f} s of plain CPU time, under the {:.0f} s getrusage's "
        "ticks need",
        plain * 1e-9, kUserShareMinSeconds);
  const double perf_share = perf_user / perf, plain_share = plain_user / plain;
  if (std::abs(perf_share - plain_share) > kUserShareSlack)
    throw measure::InputError(fmt::format(
        "{}: perf puts {:.1f} % of the loop's time in user space, getrusage {:.1f} % over the "
        "same run without perf ({:.1f} s of it); more than {:.0f} points apart, the split "
        "cannot be trusted: measure again on a quieter machine, or fit to perf's totals with "
        "--totals perf",
        m.points.front().where, 100 * perf_share, 100 * plain_share, plain * 1e-9,
        100 * kUserShareSlack));
  return fmt::format(
      "user share: perf {:.1f} %, getrusage {:.1f} % over {:.1f} s (within {:.0f} points)",
      100 * perf_share, 100 * plain_share, plain * 1e-9, 100 * kUserShareSlack);
}

}  // namespace

int calibrate_kernel_cmd(const KernelCalibrateArgs& a) {
  const std::string name = a.name.empty() ? a.stack + "-calibrated" : a.name;
  if (const std::string why = config::name_problem(name); !why.empty())
    throw UserError(fmt::format("{} '{}': {}", a.name.empty() ? "the profile name" : "--name",
                                config::printable(name), why));
  const auto stat = *measure::parse_stat(a.stat);
  std::vector<fs::path> files(a.measured.begin(), a.measured.end());
  measure::KernelMeasured m;
  measure::KernelFit fit;
  std::string user_check;
  nlohmann::json j;
  try {
    std::optional<measure::KernelTotals> totals;
    if (a.totals == "plain") totals = measure::KernelTotals::plain;
    if (a.totals == "perf") totals = measure::KernelTotals::perf;
    m = measure::read_kernel_split(files, stat, a.stack, totals);
    if (a.l1d && m.l1d.bytes == 0)
      throw measure::InputError(fmt::format(
          "--l1d: {}.machine.json does not say the L1 data cache (measure kernel writes its l1d "
          "from sysfs; rows measured before it do not have it)",
          files.front().string()));
    if (!a.l1d) m.l1d = {};  // one rate per copied byte, as without the cache
    if (m.time_base == "plain") user_check = check_user_share(m);
    const auto split = measure::parse_split(a.train);
    for (const auto& [key, values] : split.allow)
      if (key != "path" && key != "payload" && key != "sendmmsg" && key != "segments" &&
          key != "nft_rules")
        throw measure::InputError(
            fmt::format("--train {}: the split rows' points have keys path, payload, sendmmsg, "
                        "segments and nft_rules only",
                        config::printable(key)));
    fit = measure::fit_kernel(m, split, stat);
    fit.measured = a.measured;
    j = measure::kernel_fit_json(fit, m);
  } catch (const measure::InputError& e) {
    throw UserError(e.what());
  }
  // The fit counts every call at full price; stack.in_call_factor is
  // experiments/validation/linux/knobs.py's to fit.
  if (std::any_of(j["points"].begin(), j["points"].end(), [](const nlohmann::json& q) {
        return q["set"] == "train" && q.value("sendmmsg", 1) > 1;
      }))
    spdlog::warn(
        "training points with sendmmsg > 1: their later messages run warm on the kernel, and "
        "this fit prices every call alike, so that saving goes into the functions' prices; "
        "the written stack charges later messages in full (no in_call_factor: see "
        "experiments/validation/linux/knobs.py)");
  std::cout << fmt::format(
      "{} fit on {} ({}), {:.6g} MHz, load average up to {:.2f}; training: {}; statistic: "
      "{}\n",
      a.stack, fit.cpu_model, fit.kernel, fit.clock_hz / 1e6, m.loadavg,
      fmt::join(fit.split.specs(), "; "), a.stat);
  if (m.time_base == "plain")
    std::cout << fmt::format(
        "time: perf's shares of the thread CPU time without perf (perf's own: {:+.1f} %); {}\n",
        100 * (m.perf_over_plain - 1), user_check);
  else
    std::cout << "time: perf's samples, perf's own overhead included (no plain run in the rows, "
                 "or --totals perf)\n";
  std::cout << "fitted cycles:\n";
  for (size_t i = 0; i < fit.names.size(); ++i)
    std::cout << fmt::format("  {:<40} {:10.2f}\n", fit.names[i], fit.values[i]);
  std::cout << fmt::format("  {:<40} {:10.2f}\n  {:<40} {:10.2f}\n", "system call (entry + exit)",
                           fit.syscall_cycles, "user space per packet", fit.user_cycles);
  for (const auto& [fn, caller] : fit.inlined_into)
    std::cout << fmt::format(
        "inlined into {} on this kernel ({}): {}\n", caller,
        fit.value("fixed:" + fn) > 0 ? "priced per call from its time" : "priced 0", fn);
  if (!fit.undetermined.empty())
    std::cout << fmt::format("not determined (0): {}\n", fmt::join(fit.undetermined, ", "));
  std::cout << fmt::format("{:<34} {:>10} {:>10} {:>10} {:>8} {:>10}  {}\n", "point", "set",
                           "cpu ns", "predicted", "error", "wall ns", "largest share difference");
  for (const auto& q : j["points"]) {
    const double meas = q["measured_cpu_ns"], pred = q["predicted_ns"];
    double worst = 0;
    std::string where;
    for (const auto& [k, s] : q["share"].items()) {
      const double d = 100 * (s["predicted"].get<double>() - s["measured"].get<double>());
      if (std::abs(d) > std::abs(worst)) worst = d, where = k;
    }
    std::cout << fmt::format(
        "{:<34} {:>10} {:>10.1f} {:>10.1f} {:>+7.2f}% {:>10.1f}  {:+.2f} ({})\n",
        fmt::format(
            "path={} payload={}{}{}{}", q["path"].get<std::string>(), q["payload"].get<int>(),
            q.value("sendmmsg", 1) != 1 ? fmt::format(" sendmmsg={}", q["sendmmsg"].get<int>())
                                        : std::string(),
            q.value("segments", 1) != 1 ? fmt::format(" segments={}", q["segments"].get<int>())
                                        : std::string(),
            q.contains("nft_rules") ? fmt::format(" nft_rules={}", q["nft_rules"].get<int>())
                                    : std::string()),
        q["set"].get<std::string>(), meas, pred, 100 * (pred - meas) / meas,
        q["measured_wall_ns"].get<double>(), worst, where);
  }
  j["experiment"] = name + ".yaml";
  const fs::path out = fs::path(a.dir) / (name + "-fit.json");
  try {
    measure::write_kernel_profile(fit, a.dir, name, {{out.filename().string(), j.dump(1) + "\n"}});
  } catch (const measure::InputError& e) {
    throw UserError(e.what());
  }
  spdlog::info("wrote {0}/{1}.yaml, {0}/{1}-machine.yaml, {0}/{1}-stack.yaml and {2}", a.dir, name,
               out.string());
  return 0;
}

}  // namespace simloop::cli
