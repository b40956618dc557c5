// simloop calibrate / simloop compare: fit a cost profile to some measured
// points, then predict the others and hold the predictions against them.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>

#include "sim/config/experiment.h"
#include "sim/engine/simulation.h"
#include "sim/stack/stack_set.h"
#include "sim/support/text.h"
#include "sim/support/yaml_input.h"
#include "sim/tools/calibrate/calibrate.h"
#include "sim/tools/calibrate/fit_report.h"
#include "sim/tools/cli/calibrate_kernel.h"
#include "sim/tools/cli/child.h"
#include "sim/tools/cli/commands.h"
#include "sim/tools/measure/compare.h"

namespace simloop::cli {

namespace fs = std::filesystem;

namespace {

struct Columns {
  std::vector<std::string> map, ignore;
  std::string time = "wall";
  void add(CLI::App* c) {
    c->add_option("--time", time,
                  "Which clock the rates are read in: wall (ns_per_packet and the other rates)\n"
                  "or cpu (cpu_ns_per_packet: the thread's CPU time, which other programs on a\n"
                  "loaded machine do not inflate)")
        ->check(CLI::IsMember({"wall", "cpu"}))
        ->capture_default_str();
    c->add_option("--columns", map,
                  "CANONICAL=NAME,...: the file's name for a column simloop reads, e.g.\n"
                  "kpps=Throughput,payload=Size (docs/measured-data.md lists the columns)")
        ->delimiter(',');
    c->add_option("--ignore-column", ignore,
                  "A column of the file to skip (every other unknown column is an error)");
  }
};

// Each file checked first as a CSV at all (readable, text, a header, rows
// of its width); the columns are checked by read_points.
std::vector<fs::path> paths_of(const std::vector<std::string>& v) {
  std::vector<fs::path> out;
  for (const auto& s : v) {
    check_results_csv(s, {}, {}, kMaxMeasuredCsvBytes,
                      "the most calibrate and compare read (pick the rows to fit first)");
    out.emplace_back(s);
  }
  return out;
}

std::vector<measure::Point> load_points(const std::vector<std::string>& files, measure::Stat stat,
                                        const Columns& c) {
  try {
    auto columns = measure::parse_columns(c.map, c.ignore);
    columns.cpu_time = c.time == "cpu";
    return measure::read_points(paths_of(files), stat, columns);
  } catch (const measure::InputError& e) {
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
    if (const auto near = support::closest(key, have, 2); !near.empty())
      msg += fmt::format("; did you mean '{}'?", near);
    throw UserError(msg + fmt::format(" (keys: {})", fmt::join(have, ", ")));
  }
}

struct CalibrateArgs {
  std::vector<std::string> measured;
  std::string source = "native";
  std::vector<std::string> train;
  std::string dir = "out";
  std::string name;
  std::string stat = "median";
  Columns columns;
  bool strict = false;
  int bootstrap = 200;
  double split_weight = 0.5;
  bool no_split = false;
  bool choose_split = false;
  std::string totals;  // --source linux: plain | perf; empty: plain where the rows have it
  bool l1d = false;    // --source linux: the L1d the copies see
};

// The sources --source takes: the two models' rows, and each stack measured
// on this machine's kernel (its split rows, function by function).
std::vector<std::string> calibrate_sources() {
  std::vector<std::string> v = {"native", "kernel"};
  for (auto& s : stacks::measured_on(net::Measured::kernel)) v.push_back(std::move(s));
  return v;
}

int calibrate_cmd(const CalibrateArgs& a) {
  // Required unless `calibrate host` runs instead (CLI11 would ask for them there too).
  if (a.measured.empty())
    throw UserError("calibrate: name the measured CSV(s) (or: calibrate host)");
  if (a.train.empty()) throw UserError("calibrate: --train is required");
  if (a.source != "native" && a.source != "kernel") {
    // A kernel-measured stack. Options of the other two models' fits only.
    if (!a.columns.map.empty() || !a.columns.ignore.empty() || a.columns.time != "wall" ||
        a.no_split || a.choose_split || a.strict)
      throw UserError(fmt::format(
          "--source {} reads measure kernel --split rows as they are: --columns, "
          "--ignore-column, --time, --no-split, --choose-split and --strict do not apply",
          a.source));
    return calibrate_kernel_cmd(
        {a.source, a.measured, a.train, a.stat, a.dir, a.name, a.totals, a.l1d});
  }
  if (a.l1d) throw UserError("--l1d: only --source linux fits the L1d the copies see");
  if (!a.totals.empty())
    throw UserError(
        "--totals: only --source linux reads perf's split (the rows of measure "
        "kernel --split)");
  if (a.choose_split && a.source != "native")
    throw UserError("--choose-split: only native points have per-function times (--source native)");
  // The profile's four files are <dir>/<name>...: a name, never a path.
  const std::string name = a.name.empty() ? a.source + "-calibrated" : a.name;
  if (const std::string why = config::name_problem(name); !why.empty())
    throw UserError(fmt::format("{} '{}': {}", a.name.empty() ? "the profile name" : "--name",
                                config::printable(name), why));
  const auto stat = *measure::parse_stat(a.stat);
  const auto points = load_points(a.measured, stat, a.columns);
  measure::FitOptions opt;
  opt.source = a.source;
  opt.stat = stat;
  opt.bootstrap = a.bootstrap;
  opt.split_weight = a.split_weight;
  opt.use_split = !a.no_split;
  measure::Fit fit;
  try {
    opt.split = measure::parse_split(a.train);
  } catch (const measure::InputError& e) {
    throw UserError(e.what());
  }
  check_train_keys(opt.split, points, a.measured);
  std::optional<measure::SplitChoice> choice;
  try {
    if (a.choose_split) {
      choice = measure::choose_split(points, opt);
      opt.use_split = choice->split;
    }
    fit = measure::calibrate(points, opt);
  } catch (const measure::InputError& e) {
    throw UserError(e.what());
  }
  fit.split_choice = choice;
  fit.measured = a.measured;

  measure::print_fit(std::cout, fit, points, a.stat);
  const int relying = measure::warn_undetermined(fit, points);
  if (relying > 0 && a.strict)
    throw UserError(fmt::format(
        "--strict: {} held-out point(s) rely on parameters the training data do not determine "
        "(see the warnings); train on points that exercise them. Nothing was written.",
        relying));

  auto j = fit.to_json();
  j["experiment"] = name + ".yaml";
  j["columns"] = a.columns.map;
  j["ignore_columns"] = a.columns.ignore;
  j["time"] = a.columns.time;
  const fs::path out = fs::path(a.dir) / (name + "-fit.json");
  try {
    measure::write_profile(fit, points, a.dir, name, {{out.filename().string(), j.dump(1) + "\n"}});
  } catch (const measure::InputError& e) {
    throw UserError(e.what());
  }
  spdlog::info("wrote {0}/{1}.yaml, {0}/{1}-machine.yaml, {0}/{1}-stack.yaml and {2}", a.dir, name,
               out.string());
  return 0;
}

struct CompareArgs {
  std::string fit;
  std::vector<std::string> measured;
  std::string out;
  std::vector<std::string> groups;
  std::string summary;
  Columns columns;
  std::string stat = "median";
};

// Prints the table and the summaries of a comparison; writes the CSV, each
// row saying what predicted it (`predictor`, which plots name).
void report_comparison(const std::vector<measure::Comparison>& cs, const CompareArgs& a,
                       const std::string& predictor) {
  std::cout << fmt::format("measured: {}\n", measure::sources_of(cs));
  std::cout << fmt::format("{:<52} {:>10} {:>10} {:>10} {:>8} {:>10} {:>9}  {}\n", "point", "set",
                           "measured", "predicted", "error", "constant", "interval", "relies on");
  for (const auto& c : cs)
    std::cout << fmt::format(
        "{:<52} {:>10} {:>10.1f} {:>10.1f} {:>+7.2f}% {:>+9.2f}% {:>9}  {}\n", c.point, c.set,
        c.measured, c.predicted, c.error_pct(), c.constant_error_pct(),
        c.hi > 0 ? fmt::format("{:.1f}-{:.1f}", c.lo, c.hi) : "",
        c.relies_on + (c.caveat.empty() || c.relies_on.empty() ? "" : "; ") + c.caveat);
  measure::Split groups;
  try {
    groups = measure::parse_split(a.groups, "--group");
  } catch (const measure::InputError& e) {
    throw UserError(e.what());
  }
  for (const std::string set : {"train", "validation"}) {
    const auto s = measure::summarize(cs, set);
    if (s.points == 0) continue;
    std::cout << fmt::format("{:<10} {}\n", set, measure::describe(s));
  }
  const auto extrapolated = std::count_if(cs.begin(), cs.end(), [](const measure::Comparison& c) {
    return c.caveat.find("extrapolated") != std::string::npos;
  });
  if (extrapolated > 0)
    std::cout << fmt::format(
        "{} held-out point(s) extrapolated past the training range (their caveat says how far)\n",
        extrapolated);
  std::vector<report::Row> summary;
  auto add_summary = [&](const std::string& group, const measure::ErrorSummary& s) {
    report::Row r;
    r.set("group", group)
        .set("points", int64_t{s.points})
        .set("median_abs_pct", s.median_abs_pct)
        .set("worst_pct", s.worst_signed_pct)
        .set("worst_point", s.worst_point)
        .set("mean_pct", s.mean_signed_pct)
        .set("constant_median_abs_pct", s.constant_median_abs_pct)
        .set("constant_worst_abs_pct", s.constant_worst_abs_pct)
        .set("beats_constant", std::string(s.beats_constant() ? "yes" : "no"))
        .set("relying", int64_t{s.relying});
    summary.push_back(std::move(r));
  };
  for (const std::string set : {"train", "validation"})
    if (auto s = measure::summarize(cs, set); s.points > 0) add_summary(set, s);
  // Each --group on its own: the held-out points whose KEY is one of its values.
  for (const auto& group : groups.allow) {
    const auto& [key, values] = group;
    // (group, not key and values: clang 14 cannot capture a structured binding)
    const auto s = measure::summarize(cs, "validation", [&group](const measure::Comparison& c) {
      for (const auto& [k, x] : c.keys)
        if (k == group.first) return group.second.count(x) > 0;
      return false;
    });
    const std::string name = fmt::format("{}={}", key, fmt::join(values, ","));
    std::cout << fmt::format("group {}: {}\n", name, measure::describe(s));
    if (s.points > 0) add_summary(name, s);
  }
  if (!a.summary.empty()) report::write_file_atomic(a.summary, report::to_csv(summary));
  if (!a.out.empty()) {
    std::vector<report::Row> rows;
    for (const auto& c : cs) rows.push_back(measure::comparison_row(c).set("predictor", predictor));
    report::write_file_atomic(a.out, report::to_csv(rows));
    spdlog::info("wrote {} (draw it with simloop plot {})", a.out, a.out);
  }
}

// ns per packet that `simloop run` predicts for one point of an experiment,
// simulated in a child process (SimGrid runs one simulation per process).
// Through the process pool, which flushes this process's buffered output
// before it forks: a child must not print it a second time.
double simulate_point(const fs::path& exp, const std::vector<std::string>& sets) {
  const ChildResult c = json_from_child([&]() -> nlohmann::json {
    const auto x = config::load_experiment(exp, sets);
    engine::route_simgrid_log_to_spdlog();
    const auto r = engine::simulate(x);
    if (r.outcome != "ok") return {{"error", fmt::format("{}: {}", r.outcome, r.detail)}};
    return {{"ns_per_packet", r.ns_per_packet()}};
  });
  std::string why = "the simulation died";
  if (c.doc && c.doc->contains("ns_per_packet")) return (*c.doc)["ns_per_packet"].get<double>();
  if (c.doc && c.doc->contains("error")) why = (*c.doc)["error"].get<std::string>();
  throw UserError(fmt::format("{} ({}): {}", exp.string(), fmt::join(sets, " "), why));
}

// compare EXPERIMENT.yaml MEASURED.csv: the experiment's own profile,
// simulated at each measured point's payload and path.
int compare_experiment(const CompareArgs& a) {
  if (a.measured.empty()) throw UserError("compare " + a.fit + ": name the measured CSV(s)");
  const fs::path exp = experiment_path(a.fit);
  config::Experiment x;
  try {
    x = config::load_experiment(exp);
  } catch (const config::ConfigError& e) {
    throw UserError(e.what());
  }
  // A measured point on the connected path (a connect()ed socket, send())
  // is simulated on that path where the experiment's stack has it
  // (workload.connected); elsewhere it is left out of the comparison (its
  // errors and the CSV the plot draws), its table line saying why.
  const bool connects = config::key_applies(x, "workload.connected");
  const auto points = load_points(a.measured, *measure::parse_stat(a.stat), a.columns);
  std::vector<measure::Comparison> cs;
  std::vector<std::string> left_out;
  for (const auto& p : points) {
    if (p.key("path", "unconnected") != "unconnected" && !connects) {
      left_out.push_back(p.label());
      continue;
    }
    measure::Comparison c;
    c.point = p.label();
    for (const auto& k : measure::point_keys())
      if (const std::string v = p.value(k); !v.empty()) c.keys.emplace_back(k, v);
    c.set = "validation";  // nothing was fitted to it
    c.source = p.source;
    c.measured = p.kpps();
    std::vector<std::string> sets = {fmt::format("workload.payload={}", p.payload()),
                                     "workload.dest=" + p.key("dest")};
    if (p.keys.count("align")) sets.push_back("options.align=" + p.key("align"));
    if (p.keys.count("copy")) sets.push_back("options.copy=" + p.key("copy"));
    if (p.keys.count("misalign")) sets.push_back("options.sockaddr_misalign=" + p.key("misalign"));
    if (p.keys.count("ether_mtu")) sets.push_back("options.ether_mtu=" + p.key("ether_mtu"));
    if (p.keys.count("max_linkhdr")) sets.push_back("options.max_linkhdr=" + p.key("max_linkhdr"));
    if (connects)
      sets.push_back(
          fmt::format("workload.connected={}",
                      p.key("path", "") == "connected" || p.key("path", "") == "veth-connected"));
    // What an experiment has no key for is simulated at the experiment's own
    // value: said beside the point, never silently.
    for (const char* k : {"service", "buffer_misalign"})
      if (p.keys.count(k))
        c.caveat +=
            fmt::format("{}not simulated: {}={}", c.caveat.empty() ? "" : "; ", k, p.key(k));
    c.predicted = 1e3 / (simulate_point(exp, sets) / 1e3);
    c.constant = 0;
    cs.push_back(c);
    spdlog::debug("{}: {} ({})", p.label(), p.source, p.where);
  }
  if (cs.empty())
    throw UserError(fmt::format(
        "compare {}: none of the {} measured point(s) can be simulated: the {} stack has no "
        "connected path (workload.connected)",
        a.fit, points.size(), x.stack.fns->stack()));
  std::cout << fmt::format("{} simulated against the measured points of {} (nothing fitted):\n",
                           a.fit, measure::sources_of(cs));
  std::cout << fmt::format("{:<52} {:>10} {:>10} {:>8}\n", "point", "measured", "predicted",
                           "error");
  for (const auto& c : cs)
    std::cout << fmt::format("{:<52} {:>10.1f} {:>10.1f} {:>+7.2f}%{}\n", c.point, c.measured,
                             c.predicted, c.error_pct(), c.caveat.empty() ? "" : "  " + c.caveat);
  for (const auto& label : left_out)
    std::cout << fmt::format(
        "{:<52} {:>10} {:>10} {:>8}  not simulated, left out: the {} stack "
        "has no connected path (workload.connected)\n",
        label, "-", "-", "-", x.stack.fns->stack());
  if (!a.out.empty()) {
    std::vector<report::Row> rows;
    for (const auto& c : cs)
      rows.push_back(measure::comparison_row(c).set(
          "predictor", fmt::format("simulated: {}, stack {}", x.name, x.stack_name)));
    report::write_file_atomic(a.out, report::to_csv(rows));
  }
  return 0;
}

// A fit written by simloop calibrate; refusals name the file (and the line
// and column of a syntax error).
std::pair<nlohmann::json, measure::Fit> read_fit(const std::string& path) {
  const std::string text = read_input_file(path, "a fit (NAME-fit.json)", size_t{64} << 20);
  const std::string name = config::printable(path, 200);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    const auto at = support::json_error_position(text, e.byte);
    throw UserError(fmt::format("{}:{}:{}: not JSON: expected a fit written by simloop calibrate",
                                name, at.line, at.col));
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
  if (fs::path(a.fit).extension() == ".yaml") return compare_experiment(a);
  const auto [j, fit] = read_fit(a.fit);
  std::vector<std::string> measured = a.measured;
  Columns columns = a.columns;
  if (measured.empty()) {
    measured = fit.measured;
    try {
      if (columns.map.empty()) columns.map = j.value("columns", std::vector<std::string>{});
      if (columns.ignore.empty())
        columns.ignore = j.value("ignore_columns", std::vector<std::string>{});
      // The fit's own clock, unless the command line names one.
      if (columns.time == "wall") columns.time = j.value("time", std::string("wall"));
      if (columns.time != "wall" && columns.time != "cpu")
        throw UserError(a.fit + ": 'time' must be wall or cpu");
    } catch (const nlohmann::json::exception&) {
      throw UserError(a.fit + ": 'columns' and 'ignore_columns' must be lists of strings");
    }
  }
  const auto points = load_points(measured, fit.stat, columns);

  // The costs as `simloop run` would load them, from the written YAML.
  std::vector<double> values = fit.values;
  if (fit.source == "native") {
    const auto named = j.find("experiment");
    if (named == j.end() || !named->is_string())
      throw UserError(a.fit + ": a native fit names its experiment (\"experiment\": NAME.yaml)");
    const fs::path exp = fs::path(a.fit).parent_path() / named->get<std::string>();
    try {
      const auto x = config::load_experiment(exp);
      if (x.machine.clock_hz != 1e9)
        throw UserError(exp.string() + ": expected clock_hz 1e9 (costs in ns)");
      for (size_t i = 0; i < fit.names.size(); ++i) {
        // An undetermined cost (`~`) is priced 0, as the run prices it.
        const auto v = config::get_value(x, fit.names[i]);
        values[i] = v.is_null() ? 0.0 : v.get<double>();
      }
    } catch (const config::ConfigError& e) {
      throw UserError(e.what());
    }
  }
  std::vector<measure::Comparison> cs;
  for (const auto& p : points) {
    if (p.native() != (fit.source == "native")) continue;
    measure::Comparison c;
    c.point = p.label();
    for (const auto& k : measure::point_keys())
      if (const std::string v = p.value(k); !v.empty()) c.keys.emplace_back(k, v);
    c.set = fit.split.trains(p) ? "train" : "validation";
    c.source = p.source;
    c.measured = p.kpps();
    measure::Features feat;
    try {
      feat = measure::features_for(fit, p);
    } catch (const measure::InputError& e) {
      throw UserError(e.what());
    }
    const double ns = measure::predict_ns(feat, values);
    c.predicted = ns > 0 ? 1e6 / ns : 0;
    c.constant = fit.constant_kpps;
    if (!fit.draws.empty()) {
      std::vector<double> k;
      for (const auto& d : fit.draws) k.push_back(1e6 / measure::predict_ns(feat, d));
      std::sort(k.begin(), k.end());
      c.lo = k[static_cast<size_t>(0.05 * static_cast<double>(k.size() - 1))];
      c.hi = k[static_cast<size_t>(0.95 * static_cast<double>(k.size() - 1))];
    }
    c.relies_on = fmt::format("{}", fmt::join(fit.relies_on(feat), " "));
    cs.push_back(c);
  }
  if (cs.empty()) throw UserError("no " + fit.source + " points in the measured files");
  measure::flag_extrapolation(cs, {"payload", "ether_mtu", "max_linkhdr"});
  std::string name = fs::path(a.fit).stem().string();
  if (name.size() > 4 && name.ends_with("-fit")) name.resize(name.size() - 4);
  report_comparison(cs, a, "calibrated profile " + name);
  return 0;
}

}  // namespace

void add_calibrate(CLI::App& app, std::vector<Command>& commands) {
  auto a = std::make_shared<CalibrateArgs>();
  auto* cal = app.add_subcommand(
      "calibrate",
      "Fit a cost profile to the training points of measured runs (non-negative least squares,\n"
      "relative error) and say which costs the data determine. native: every cost key of the\n"
      "configuration schema, from the ns per packet of the real stack and, where the rows have\n"
      "them (measure native --split), each function's self time. kernel (this machine's\n"
      "measure kernel, or any system's rows in the format of docs/measured-data.md): ns per\n"
      "packet = system calls x null syscall + send_fixed + send_per_byte x payload (+ the same\n"
      "for a receiver on the same CPU unless dest is wire). Writes DIR/NAME-machine.yaml,\n"
      "DIR/NAME-stack.yaml (clock_hz 1e9: costs in ns), an experiment DIR/NAME.yaml on the\n"
      "measured path for simloop run, and DIR/NAME-fit.json for simloop compare. linux (the\n"
      "rows of measure kernel --split): the simulated Linux stack's fixed cycles per call of\n"
      "each function and the copy's cycles per byte, from each function's perf self time over\n"
      "its calls per packet in the simulated stack on the same path; writes a kind: linux\n"
      "stack at the measured clock.");
  cal->add_option("measured", a->measured,
                  "Measured CSVs (simloop's own, or docs/measured-data.md), at most 8 MiB each");
  cal->add_option("--source", a->source,
                  "Which rows and model: native (source=native rows), kernel (all others) or\n"
                  "linux (measure kernel --split rows, function by function)")
      ->check(CLI::IsMember(calibrate_sources()))
      ->capture_default_str();
  cal->add_option("--train", a->train,
                  "KEY=V1,V2,...: a point trains the fit if its KEY is one of the values\n"
                  "(repeat for several keys; all must hold). Every other point is held out.\n"
                  "Required.");
  cal->add_option("--stat", a->stat,
                  "A point's value over its repeats, for every measured quantity alike: median,\n"
                  "or min (interference on a shared machine only adds time); compare uses the same")
      ->check(CLI::IsMember({"median", "min"}))
      ->capture_default_str();
  cal->add_option("--totals", a->totals,
                  "linux: each point's total time from the plain run (the thread CPU time of\n"
                  "the same loop with perf off, which measure kernel --split times beside each\n"
                  "profiled slice) or from perf's samples, perf's own overhead included.\n"
                  "Shares come from perf either way. Default: plain where every row has it")
      ->check(CLI::IsMember({"plain", "perf"}));
  cal->add_flag("--l1d", a->l1d,
                "linux: model the L1 data cache the copies see (machine.copy.l1d_*), at the\n"
                "geometry the rows' FILE.machine.json gives (measure kernel writes it), and fit\n"
                "the extra per byte a copy moves through lines it no longer held. Large\n"
                "datagrams gain (a copy slows once a datagram's buffers outgrow L1), small ones\n"
                "may lose: experiments/validation/hosts/hosts.md, section 1a. Off: one rate");
  cal->add_flag("--strict", a->strict,
                "Refuse (exit 2, nothing written) when a held-out point relies on a parameter the\n"
                "training data do not determine");
  cal->add_option("--bootstrap", a->bootstrap,
                  "Refits on resamples of each point's repeats, for 90 % intervals (0: none)")
      ->check(CLI::Range(0, 100000))
      ->capture_default_str();
  cal->add_option("--split-weight", a->split_weight,
                  "native: weight of each function's self time against the packet's total")
      ->check(CLI::Range(0.0, 100.0))
      ->capture_default_str();
  cal->add_flag("--no-split", a->no_split,
                "native: fit the totals only, ignoring per-function times");
  cal->add_flag("--choose-split", a->choose_split,
                "native: fit with per-function times or totals only, whichever predicts the\n"
                "training points better when each path, and each payload, is left out of the\n"
                "fit in turn (the held-out points play no part); says which and why")
      ->excludes("--no-split");
  a->columns.add(cal);
  cal->add_option("-o,--output-dir", a->dir, "Where to write the profile")->capture_default_str();
  cal->add_option("--name", a->name, "Profile name (default: SOURCE-calibrated)");
  // calibrate host first: main runs the first parsed command, and calibrate
  // is parsed too when its subcommand is.
  add_calibrate_host(*cal, commands);
  commands.push_back({cal, [a] { return calibrate_cmd(*a); }});

  auto c = std::make_shared<CompareArgs>();
  auto* cmp = app.add_subcommand(
      "compare",
      "Predict measured points and print predicted against measured kpps with signed and\n"
      "absolute error, beside a constant predictor (the mean of the training points), per point\n"
      "and for the training and held-out (validation) points. With a NAME-fit.json from\n"
      "simloop calibrate: its profile; with an EXPERIMENT.yaml: that experiment simulated at\n"
      "each measured point's payload and path (nothing fitted).");
  cmp->add_option("fit", c->fit, "A NAME-fit.json written by simloop calibrate, or an experiment")
      ->required();
  cmp->add_option("measured", c->measured,
                  "Measured CSVs, at most 8 MiB each (default: those the fit was made from)");
  cmp->add_option(
      "--group", c->groups,
      "KEY=V1,V2,...: also summarise the held-out points whose KEY is one of the values\n"
      "(repeat for several groups)");
  cmp->add_option("--summary", c->summary,
                  "Write the summaries (training, held-out, each group) to this CSV");
  cmp->add_option("--stat", c->stat, "With an experiment: the statistic over repeats")
      ->check(CLI::IsMember({"median", "min"}))
      ->capture_default_str();
  c->columns.add(cmp);
  cmp->add_option("-o,--output", c->out, "Write one row per point to this CSV");
  commands.push_back({cmp, [c] { return compare_cmd(*c); }});
}

}  // namespace simloop::cli
