// simloop calibrate / simloop compare: fit a cost profile to some measured
// points, then predict the others and hold the predictions against them.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

#include "cli/commands.h"
#include "config/experiment.h"
#include "config/yaml_input.h"
#include "measure/calibrate.h"
#include "measure/compare.h"

namespace simloop::cli {

namespace fs = std::filesystem;

namespace {

struct CalibrateArgs {
  std::vector<std::string> measured;
  std::string source = "native";
  std::vector<std::string> train;
  std::string dir = "out";
  std::string name;
  std::string stat = "median";
};

// The measured points of CSVs written by simloop measure, each file checked
// first; every refusal is exit status 2 naming the file.
std::vector<measure::Point> points_of(const std::vector<std::string>& v, measure::Stat stat) {
  std::vector<fs::path> paths;
  for (const auto& s : v) {
    check_results_csv(s, {"source", "ns_per_packet"},
                      {"ns_per_packet", "null_syscall_ns", "payload"});
    paths.emplace_back(s);
  }
  try {
    return measure::read_points(paths, stat);
  } catch (const std::exception& e) {
    throw UserError(e.what());
  }
}

// Every --train key must be a column the points have.
void check_train_keys(const measure::Split& split, const std::vector<measure::Point>& points,
                      const std::vector<std::string>& files) {
  std::vector<std::string> have;
  for (const auto& p : points)
    for (const auto& [k, v] : p.keys)
      if (std::find(have.begin(), have.end(), k) == have.end()) have.push_back(k);
  for (const auto& [key, values] : split.allow) {
    if (std::find(have.begin(), have.end(), key) != have.end()) continue;
    std::string msg = fmt::format("--train {}: no such column in {}", config::printable(key),
                                  fmt::join(files, ", "));
    if (const auto near = config::closest_word(key, have); !near.empty())
      msg += fmt::format("; did you mean '{}'?", near);
    throw UserError(msg + fmt::format(" (keys: {})", fmt::join(have, ", ")));
  }
}

int calibrate_cmd(const CalibrateArgs& a) {
  const auto points = points_of(a.measured, *measure::parse_stat(a.stat));
  measure::Split split;
  try {
    split = measure::parse_split(a.train);
  } catch (const std::invalid_argument& e) {
    throw UserError(e.what());
  }
  check_train_keys(split, points, a.measured);
  measure::Fit fit;
  try {
    fit = measure::calibrate(points, a.source, split);
  } catch (const std::runtime_error& e) {
    throw UserError(e.what());
  }
  const std::string name = a.name.empty() ? a.source + "-calibrated" : a.name;
  std::cout << fmt::format("{} fit on {} training point(s) ({}), {} held out\n", a.source,
                           fit.training_points, fmt::join(split.specs(), "; "),
                           fit.held_out_points);
  std::cout << "fitted costs (ns):\n";
  for (size_t i = 0; i < fit.names.size(); ++i)
    std::cout << fmt::format("  {:<42} {:10.4f}\n", fit.names[i], fit.values[i]);
  std::cout << "residuals on the training points:\n";
  for (const auto& r : fit.residuals)
    std::cout << fmt::format("  {:<50} measured {:8.1f} ns  fitted {:8.1f} ns  {:+6.2f} %\n",
                             r.label, r.measured_ns, r.fitted_ns,
                             100 * (r.fitted_ns - r.measured_ns) / r.measured_ns);
  std::cout << fmt::format("rms relative residual {:.2f} %\n", 100 * fit.rms_rel_residual());

  auto j = fit.to_json();
  j["measured"] = a.measured;
  j["stat"] = a.stat;
  if (a.source == "native") {
    measure::write_native_profile(fit, a.dir, name);
    j["experiment"] = name + ".yaml";
    spdlog::info("wrote {0}/{1}.yaml, {0}/{1}-machine.yaml and {0}/{1}-stack.yaml", a.dir, name);
  } else {
    measure::write_kernel_profile(fit, points, a.dir, name);
    j["experiment"] = name + ".yaml";
    spdlog::info("wrote {0}/{1}.yaml, {0}/{1}-machine.yaml and {0}/{1}-stack.yaml", a.dir, name);
  }
  fs::create_directories(a.dir);
  const fs::path out = fs::path(a.dir) / (name + "-fit.json");
  report::write_file_atomic(out, j.dump(2) + "\n");
  spdlog::info("wrote {}", out.string());
  return 0;
}

struct CompareArgs {
  std::string fit;
  std::vector<std::string> measured;
  std::string out;
};

// A fit written by simloop calibrate; refusals name the file (and line
// and column of a syntax error).
std::pair<nlohmann::json, measure::Fit> read_fit(const std::string& path) {
  const std::string text = read_input_file(path, "a fit (NAME-fit.json)", size_t{64} << 20);
  const std::string name = config::printable(path, 200);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    int line = 1, col = 1;
    for (size_t i = 0; i + 1 < e.byte && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    throw UserError(fmt::format("{}:{}:{}: not JSON: expected a fit written by simloop calibrate",
                                name, line, col));
  }
  try {
    auto fit = measure::Fit::from_json(j);
    return {std::move(j), std::move(fit)};
  } catch (const std::exception& e) {
    throw UserError(fmt::format("{}:1:1: not a fit written by simloop calibrate ({})", name,
                                config::printable(e.what(), 200)));
  }
}

int compare_cmd(const CompareArgs& a) {
  const auto [j, fit] = read_fit(a.fit);
  std::vector<std::string> measured = a.measured;
  std::optional<measure::Stat> stat;
  try {
    if (measured.empty()) measured = j.value("measured", std::vector<std::string>{});
    stat = measure::parse_stat(j.value("stat", std::string("median")));
  } catch (const nlohmann::json::exception&) {
    throw UserError(a.fit + ": 'measured' must be a list of paths and 'stat' a string");
  }
  if (!stat) throw UserError(a.fit + ": stat must be median or min");
  const auto points = points_of(measured, *stat);

  // native: the costs as `simloop run` would load them, from the written YAML.
  models::MachineCosts machine;
  models::StackCosts stack;
  if (fit.source == "native") {
    const auto e = j.find("experiment");
    if (e == j.end() || !e->is_string())
      throw UserError(a.fit + ": a native fit names its experiment (\"experiment\": NAME.yaml)");
    const fs::path exp = fs::path(a.fit).parent_path() / e->get<std::string>();
    config::Experiment x;
    try {
      x = config::load_experiment(exp);
    } catch (const config::ConfigError& err) {
      throw UserError(err.what());
    }
    machine = x.machine;
    stack = x.stack;
    if (machine.clock_hz != 1e9)
      throw UserError(exp.string() + ": expected clock_hz 1e9 (costs in ns)");
  }
  std::vector<measure::Comparison> cs;
  for (const auto& p : points) {
    if (p.source != fit.source) continue;
    measure::Comparison c;
    c.point = p.label();
    for (const auto& k : {"payload", "dest", "align", "copy"})
      if (auto it = p.keys.find(k); it != p.keys.end()) c.keys.emplace_back(k, it->second);
    c.set = fit.split.trains(p) ? "train" : "validation";
    c.measured = p.kpps();
    const double ns = fit.source == "kernel"
                          ? measure::kernel_predict_ns(fit, p)
                          : measure::native_price(measure::native_features(p), machine, stack);
    c.predicted = ns > 0 ? 1e6 / ns : 0;
    cs.push_back(c);
  }
  if (cs.empty()) throw UserError("no " + fit.source + " points in the measured files");

  std::cout << fmt::format("{:<50} {:>10} {:>10} {:>10} {:>8} {:>8}\n", "point", "set", "measured",
                           "predicted", "error", "|error|");
  for (const auto& c : cs)
    std::cout << fmt::format("{:<50} {:>10} {:>10.1f} {:>10.1f} {:>+7.2f}% {:>7.2f}%\n", c.point,
                             c.set, c.measured, c.predicted, c.error_pct(), c.abs_error_pct());
  for (const std::string set : {"train", "validation"}) {
    const auto s = measure::summarize(cs, set);
    if (s.points == 0) continue;
    std::cout << fmt::format("{:<10} {:3} points: median |error| {:.2f} %, worst {:+.2f} % ({})\n",
                             set, s.points, s.median_abs_pct, s.worst_signed_pct, s.worst_point);
  }
  if (!a.out.empty()) {
    std::vector<report::Row> rows;
    for (const auto& c : cs) rows.push_back(measure::comparison_row(fit.source, c));
    report::write_file_atomic(a.out, report::to_csv(rows));
    spdlog::info("wrote {} (draw it with simloop plot {})", a.out, a.out);
  }
  return 0;
}

}  // namespace

void add_calibrate(CLI::App& app, std::vector<Command>& commands) {
  auto a = std::make_shared<CalibrateArgs>();
  auto* cal = app.add_subcommand(
      "calibrate",
      "Fit a cost profile to the training points of measured runs (non-negative least squares,\n"
      "relative error). native: per-event and per-byte costs of the real stack's timing model,\n"
      "written as DIR/NAME-machine.yaml and DIR/NAME-stack.yaml (clock_hz 1e9: costs in ns)\n"
      "with an experiment DIR/NAME.yaml for simloop run. kernel: ns per packet = 2 * null\n"
      "syscall + a + b * payload, written as the same three files (a null syscall on each\n"
      "system call, a on sendto, b over the bytes copied). Always writes DIR/NAME-fit.json\n"
      "for simloop compare.");
  cal->add_option("measured", a->measured, "CSVs written by simloop measure native/kernel")
      ->required();
  cal->add_option("--source", a->source, "Which measured rows to fit: native or kernel")
      ->check(CLI::IsMember({"native", "kernel"}))
      ->capture_default_str();
  cal->add_option("--train", a->train,
                  "KEY=V1,V2,...: a point trains the fit if its KEY is one of the values\n"
                  "(repeat for several keys; all must hold). Every other point is held out.")
      ->required();
  cal->add_option("--stat", a->stat,
                  "A point's value over its repeats: median, or min (interference on a shared\n"
                  "machine only adds time, so the minimum is the least disturbed); compare uses\n"
                  "the same")
      ->check(CLI::IsMember({"median", "min"}))
      ->capture_default_str();
  cal->add_option("-o,--output-dir", a->dir, "Where to write the profile")->capture_default_str();
  cal->add_option("--name", a->name, "Profile name (default: SOURCE-calibrated)");
  commands.push_back({cal, [a] { return calibrate_cmd(*a); }});

  auto c = std::make_shared<CompareArgs>();
  auto* cmp = app.add_subcommand(
      "compare",
      "Predict measured points with a calibrated profile and print predicted against measured\n"
      "kpps with signed and absolute error, per point and the median and worst of the held-out\n"
      "(validation) points and of the training points apart.");
  cmp->add_option("fit", c->fit, "A NAME-fit.json written by simloop calibrate")->required();
  cmp->add_option("measured", c->measured, "Measured CSVs (default: those the fit was made from)");
  cmp->add_option("-o,--output", c->out, "Write one row per point to this CSV");
  commands.push_back({cmp, [c] { return compare_cmd(*c); }});
}

}  // namespace simloop::cli
