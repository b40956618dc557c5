// simloop run / check / config-reference / output-reference: experiments from YAML.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <set>

#include "sim/config/data_files.h"
#include "sim/config/experiment.h"
#include "sim/config/host_profiles.h"
#include "sim/engine/columns.h"
#include "sim/engine/detail.h"
#include "sim/engine/simulation.h"
#include "sim/engine/trace.h"
#include "sim/engine/undetermined.h"
#include "sim/layout/layout.h"
#include "sim/report/safe_file.h"
#include "sim/support/host.h"
#include "sim/support/text.h"
#include "sim/support/yaml_input.h"
#include "sim/tools/cli/commands.h"
#include "sim/tools/measure/native.h"
#include "sim/tools/sweep/runner.h"
#include "version.h"

namespace simloop::cli {

namespace fs = std::filesystem;

namespace {

// What a trace costs on disk, measured on the shipped experiments (a wire
// run with interrupts): windows longer than kTraceWarnPackets are warned
// about with their size; every kTraceProgressBytes written is logged.
constexpr double kTraceBytesPerPacket = 2500;
constexpr int64_t kTraceWarnPackets = 100000;
constexpr uint64_t kTraceProgressBytes = uint64_t{64} << 20;

// "FROM:TO" of --trace-window; exit status 2 for anything else.
engine::TraceWindow parse_window(const std::string& s);

config::Experiment load(const std::string& file, const std::vector<std::string>& sets,
                        const std::vector<std::string>& unset) {
  return load_user_experiment(file, sets, unset);
}

// An experiment's sweep section and every point's configuration, checked as
// `simloop sweep` checks them (one validation for run, check and sweep):
// the number of points, 0 without a sweep section. Bad input is a UserError
// with exit status 2 and sweep's own located message.
size_t check_sweep_section(const config::Experiment& x, const std::vector<std::string>& sets) {
  if (!x.has_sweep) return 0;
  sweep::Options o;
  o.experiment = x.source;
  o.sets = sets;
  o.unset = x.unset;
  try {
    return sweep::make_plan(o).size();
  } catch (const config::ConfigError& e) {
    throw UserError(e.what(), 2);
  }
}

std::string breakdown(const config::Experiment& x, const engine::SimResult& r) {
  const double per = r.packets > 0 ? 1.0 / static_cast<double>(r.packets) : 0;
  const double cpp = r.cycles_per_packet();
  std::string out = "cycles per packet by stage:\n";
  for (size_t s = 0; s < models::kStageCount; ++s) {
    const auto stage = static_cast<models::Stage>(s);
    const double c = r.cycles[s] * per;
    // A stage that would print as 0.0 (a wire run's wait for its last
    // frame) is left out; the CSV and JSON keep it.
    if (std::abs(c) < 0.05) continue;
    // A stage that is not what its name says (a fitted profile's fixed
    // cost) is named for what it is.
    const config::StageMeaning m = config::stage_meaning(x, models::stage_name(stage));
    const std::string note =
        stage == models::Stage::sleep
            ? "  (CPU idle: the sender asleep after ENOBUFS, for send space, or for "
              "its last frames to leave)"
        : stage == models::Stage::idle ? "  (CPU idle: unexplained)"
        : !m.note.empty()              ? fmt::format("  ({})", m.note)
                                       : "";
    const std::string name = m.label.empty() ? std::string(models::stage_name(stage)) : m.label;
    out +=
        fmt::format("  {:<10} {:9.1f}  {:5.1f} %{}\n", name, c, cpp > 0 ? 100 * c / cpp : 0, note);
  }
  out += fmt::format("  {:<10} {:9.1f}\n", "total", cpp);
  return out;
}

// One run of a sweep, alone: point `point` of the sweep whose manifest is
// beside `csv`, with the seed of its repeat `repeat`. The point's settings
// come from the sweep's definition in the manifest, and are set over the
// experiment file as the sweep set them; if the file has changed since (the
// point's hash differs), they are set over the base configuration the
// manifest stored instead.
config::Experiment from_sweep(const std::string& csv, size_t point, size_t repeat) {
  const fs::path mpath = sweep::manifest_of(csv);
  nlohmann::json m;
  sweep::KnownPoints known;
  sweep::Spec spec;
  try {
    const std::string text = sweep::read_text(mpath);
    m = sweep::parse_manifest(text, mpath.string(), false);
    known = sweep::known_points(m, mpath.string(), text);
  } catch (const sweep::StoreError& e) {
    throw UserError(e.what(), 2);
  }
  if (point >= known.hashes.size())
    throw UserError(fmt::format("{}: --point {}: the sweep has points 0 to {}", mpath.string(),
                                point, known.hashes.empty() ? 0 : known.hashes.size() - 1),
                    2);
  if (repeat >= static_cast<size_t>(known.repeats))
    throw UserError(fmt::format("{}: --repeat {}: the sweep has repeats 0 to {}", mpath.string(),
                                repeat, known.repeats - 1),
                    2);
  const nlohmann::json base = m.value("config", nlohmann::json());
  if (m.value("point_hash_rule", nlohmann::json()) != nlohmann::json(sweep::kPointHashRule) ||
      !base.is_object() || !m.value("sweep_yaml", nlohmann::json()).is_string())
    throw UserError(fmt::format("{}: written by another simloop (its points are not described "
                                "as this one describes them); run it with that version",
                                mpath.string()),
                    2);
  try {
    spec = sweep::spec_of(YAML::Load(m["sweep_yaml"].get<std::string>()), mpath.string());
  } catch (const std::exception& e) {
    throw UserError(fmt::format("{}: sweep: {}", mpath.string(), e.what()), 2);
  }
  if (spec.size() != known.hashes.size())
    throw UserError(fmt::format("{}: its sweep has {} points but it lists {}", mpath.string(),
                                spec.size(), known.hashes.size()),
                    2);
  sweep::Point pt = spec.point(point);
  pt.hash = known.hashes.text(point);
  const uint64_t seed =
      sweep::run_seed(base.value("seed", nlohmann::json(1)).get<uint64_t>(), pt, repeat);
  std::vector<std::string> sets, unset;
  for (const auto& s : m.value("sets", nlohmann::json::array()))
    if (s.is_string()) sets.push_back(s.get<std::string>());
  for (const auto& s : m.value("unset", nlohmann::json::array()))
    if (s.is_string()) unset.push_back(s.get<std::string>());
  const std::string file = m.value("experiment_file", "");
  std::vector<std::string> changed = {"the experiment file"};
  config::Experiment x;
  if (!file.empty() && fs::is_regular_file(file)) {
    try {
      const config::Experiment then = config::load_experiment(file, sets, unset);
      const nlohmann::json now = config::to_json(then);
      if (sweep::hex64(sweep::PointHasher(spec, now, sweep::profile_refs(then))(pt)) == pt.hash) {
        x = config::load_over(then, sets, pt.as_sets());
        changed.clear();
      } else {
        changed = sweep::changed_keys(now, base, {});
        if (changed.empty()) changed = {"its point hash"};
      }
    } catch (const config::ConfigError& e) {
      changed = {e.what()};
    }
  }
  if (!changed.empty()) {
    spdlog::warn("{} changed since the sweep ({}); running the configuration the sweep stored",
                 file.empty() ? "the experiment" : file, fmt::join(changed, ", "));
    // The stored base is a complete experiment (JSON is YAML); the point's
    // settings go over it as they went over the file.
    const report::TempFile tmp(fs::temp_directory_path(), fmt::format("simloop-point-{}-", point),
                               ".yaml", base.dump(2) + "\n");
    try {
      x = config::load_experiment(tmp.path(), pt.as_sets());
    } catch (const config::ConfigError& e) {
      throw UserError(fmt::format("{}: point {}: the stored configuration does not load: {}",
                                  mpath.string(), point, e.what()),
                      2);
    }
  }
  x.seed = seed;
  spdlog::info("point {} repeat {} of {} (seed {})", point, repeat, csv, seed);
  return x;
}

int run_cmd(const std::string& file, const std::vector<std::string>& sets,
            const std::vector<std::string>& unset, const std::string& outdir,
            const std::string& sweep_csv, int64_t point, int64_t repeat, bool long_csv,
            const std::string& trace_file, const std::string& trace_window, bool strict) {
  config::Experiment x;
  if (!sweep_csv.empty()) {
    if (!file.empty() || !sets.empty() || !unset.empty())
      throw UserError(
          "--from-sweep takes no experiment file, --set or --unset: the sweep's manifest "
          "says what ran",
          2);
    if (point < 0) throw UserError("--from-sweep needs --point N", 2);
    x = from_sweep(sweep_csv, static_cast<size_t>(point), static_cast<size_t>(repeat));
  } else {
    if (point >= 0) throw UserError("--point needs --from-sweep CSV", 2);
    x = load(file, sets, unset);
    // A file `check` and `sweep` refuse is refused here too; run simulates
    // the base configuration.
    check_sweep_section(x, sets);
  }
  if (!outdir.empty()) x.output.dir = outdir;
  spdlog::info("experiment {} ({}): machine {}, stack {}, {} B to {}", x.name, x.source.string(),
               x.machine_name, x.stack_name, x.workload.payload,
               config::dest_name(x.workload.dest));
  if (x.code)
    for (const auto& w : {models::absent_warning(*x.code, "layout.build"),
                          models::unfetched_warning(*x.code, "layout.build")})
      if (!w.empty()) spdlog::warn(w);
  if (x.code)
    for (const auto& w : x.code->notes) spdlog::warn("layout.build: {}", w);
  // An output that is a link is refused before the run, not after it.
  const fs::path dir = x.output.dir;
  for (const auto& [want, p] : {std::pair{x.output.csv, dir / (x.name + ".csv")},
                                std::pair{x.output.json, dir / (x.name + ".json")},
                                std::pair{!trace_file.empty(), fs::path(trace_file)},
                                std::pair{long_csv, dir / (x.name + "-long.csv")}})
    if (want) report::refuse_link(p);
  engine::route_simgrid_log_to_spdlog();
  std::optional<report::AtomicFile> trace_out;
  std::optional<engine::Tracer> tracer;
  std::optional<report::WriteError> trace_failed;
  engine::TraceWindow window;
  if (!trace_window.empty()) {
    if (trace_file.empty()) throw UserError("--trace-window needs --trace FILE.json", 2);
    window = parse_window(trace_window);
    // A window the run never reaches would write a trace of nothing.
    if (x.workload.duration_s <= 0 && window.from >= x.workload.packets)
      throw UserError(
          fmt::format("--trace-window {}: the run sends {} packets (workload.packets), "
                      "so FROM must be below {}",
                      config::printable(trace_window, 80), x.workload.packets, x.workload.packets),
          2);
  }
  if (!trace_file.empty()) {
    // Stalls placed where their fetches happen, not where a replayed
    // sequence settles: the same results, bit for bit (tests hold it).
    x.engine.icache_replay = false;
    // Written as it is made (memory does not grow with the window), put in
    // place whole when the run ends, and never left half-written.
    trace_out.emplace(trace_file);
    const int64_t packets = window.to - window.from;
    if (packets > kTraceWarnPackets)
      spdlog::warn(
          "--trace-window {}:{}: {} packets make a trace of about {:.0f} MB (about {} KB a "
          "packet)",
          window.from, window.to, packets,
          static_cast<double>(packets) * kTraceBytesPerPacket / 1e6, kTraceBytesPerPacket / 1000);
    // A write that fails inside the simulation is kept and thrown once it
    // returns: an exception must not cross SimGrid's actor (it aborts).
    tracer.emplace(
        window, x.machine.clock_hz, *x.stack.fns, x.name,
        [&trace_out, &trace_failed, next = kTraceProgressBytes](std::string_view s) mutable {
          if (trace_failed) return;
          try {
            trace_out->write(s);
          } catch (const report::WriteError& e) {
            trace_failed.emplace(e);
            return;
          }
          if (trace_out->bytes() >= next) {
            spdlog::info("trace: {} MB written", trace_out->bytes() >> 20);
            next += kTraceProgressBytes;
          }
        });
  }
  engine::SimResult r;
  try {
    r = engine::simulate(x, tracer ? &*tracer : nullptr);
  } catch (const std::invalid_argument& e) {
    throw UserError(e.what(), 2);  // a --cfg item SimGrid refused
  }
  if (trace_failed) throw *trace_failed;
  // Costs the profiles leave undetermined that the run used: said once, or
  // with --strict refused before any result (or the trace) is written.
  if (strict && !r.undetermined.empty()) throw UserError(engine::undetermined_refusal(x, r), 2);
  if (const std::string why = engine::undetermined_warning(x, r); !why.empty())
    spdlog::warn("{}", why);
  const report::Row row = engine::result_row(x, r);
  // A trace sent to standard output (`--trace /dev/stdout | gzip`) has it to
  // itself: the table and the names of files written go to standard error.
  std::ostream& say = !trace_file.empty() && report::own_descriptor(trace_file) == STDOUT_FILENO
                          ? std::cerr
                          : std::cout;

  // The summary's columns the run has (a stack without a choice has no column of it).
  std::vector<std::string> shown;
  for (const char* c : {"experiment", "payload", "dest", "align", "copy", "packets", "kpps",
                        "ns_per_packet", "cycles_per_packet", "interrupt_pct", "outcome"})
    if (row.find(c) != nullptr) shown.emplace_back(c);
  say << report::format_table({row}, shown);
  say << breakdown(x, r);
  for (size_t d = 0; d < net::kDropCount; ++d)
    if (r.drops[d] != 0)
      say << fmt::format("dropped: {} ({})\n", r.drops[d],
                         x.stack.fns->drop_word(net::drop_name(static_cast<net::Drop>(d))));
  if (r.enobufs != 0)
    say << fmt::format("ENOBUFS: {} times, {:.3f} s asleep\n", r.enobufs, r.sleep_s);
  if (!r.detail.empty()) say << fmt::format("run ended: {}\n", r.detail);
  const double wall_pps = r.wall_s > 0 ? static_cast<double>(r.packets) / r.wall_s : 0;
  spdlog::info("simulated {} packets in {:.3f} s of wall time ({:.0f} packets/s)", r.packets,
               r.wall_s, wall_pps);

  if (x.output.csv) {
    const auto p = dir / (x.name + ".csv");
    report::write_file_atomic(p, report::to_csv({row}));
    say << "wrote " << p.string() << "\n";
  }
  if (x.output.json) {
    const auto p = dir / (x.name + ".json");
    report::write_file_atomic(p, run_document(x, r).dump(2) + "\n");
    say << "wrote " << p.string() << "\n";
  }
  if (tracer) {
    tracer->finish();
    if (trace_failed) throw *trace_failed;
    trace_out->commit();
    say << "wrote " << trace_file << "\n";
    if (r.packets <= window.from)
      spdlog::warn(
          "--trace-window {}:{}: the run ended after {} packets, before the window; the "
          "trace holds no packet",
          window.from, window.to, r.packets);
    spdlog::info("trace of packets {}:{}: {} events, {} bytes", window.from, window.to,
                 tracer->events(), trace_out->bytes());
  }
  if (long_csv) {
    const auto p = dir / (x.name + "-long.csv");
    report::write_file_atomic(p, report::to_csv(engine::long_rows(x, r)));
    say << "wrote " << p.string() << "\n";
  }
  return r.outcome == "ok" ? 0 : 3;
}

engine::TraceWindow parse_window(const std::string& s) {
  engine::TraceWindow w;
  const auto colon = s.find(':');
  try {
    if (colon == std::string::npos) throw std::invalid_argument("no colon");
    size_t used = 0;
    w.from = std::stoll(s.substr(0, colon), &used);
    if (used != colon) throw std::invalid_argument("from");
    const std::string to = s.substr(colon + 1);
    w.to = std::stoll(to, &used);
    if (used != to.size()) throw std::invalid_argument("to");
  } catch (const std::exception&) {
    throw UserError(
        fmt::format("--trace-window '{}': expected FROM:TO, packet indices (e.g. 0:1000)",
                    config::printable(s, 80)),
        2);
  }
  if (w.from < 0 || w.to <= w.from)
    throw UserError(
        fmt::format("--trace-window '{}': expected 0 <= FROM < TO", config::printable(s, 80)), 2);
  return w;
}

}  // namespace

nlohmann::json run_document(const config::Experiment& x, const engine::SimResult& r) {
  nlohmann::json j;
  j["simloop_version"] = SIMLOOP_VERSION;
  j["git_revision"] = SIMLOOP_GIT_REV;
  j["seed"] = x.seed;
  j["result"] = report::to_json(engine::result_row(x, r));
  const nlohmann::json detail = engine::detail_json(r);
  j["functions"] = detail["functions"];
  j["icache_sets"] = detail["icache_sets"];
  j["undetermined_costs"] = engine::undetermined_json(r);
  j["config"] = config::to_json(x);
  // The host the machine was measured on is in config.machine.host; this
  // is the one that ran the simulation.
  const support::HostFacts here = support::this_host();
  j["simulated_on"] = {{"fingerprint", here.fingerprint()},
                       {"cpu", here.cpu},
                       {"clock_mhz", here.clock_mhz},
                       {"kernel", here.kernel},
                       {"caches", here.caches}};
  if (!x.machine_host.empty()) j["machine_host"] = x.machine_host.fingerprint();
  return j;
}

namespace {

// The experiment a misspelt or shortened name most likely meant: the
// working directory's *.yaml and the shipped experiments, as a user names
// them (seed-athlon finds experiments/seed-athlon.yaml).
std::string nearest_experiment(const std::string& given, const fs::path& root) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(".", ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".yaml") names.push_back(it->path().filename().string());
  for (const auto& f : config::shipped_files(root, "experiments")) names.push_back(f.name);
  if (std::string near = support::suggest(given, names); !near.empty()) return near;
  // A name without its directory or .yaml: matched against the files' stems.
  std::vector<std::string> stems;
  for (const auto& n : names) stems.push_back(fs::path(n).stem().string());
  const std::string stem = support::suggest(fs::path(given).stem().string(), stems);
  for (size_t i = 0; i < stems.size(); ++i)
    if (!stem.empty() && stems[i] == stem) return names[i];
  return "";
}

}  // namespace

fs::path experiment_path(const std::string& given) {
  if (given.empty()) return {};
  const fs::path root = config::data_root();
  const config::FoundFile f = config::find_input(given, root);
  std::error_code ec;
  if (f.in == config::FoundIn::as_given && !fs::exists(f.path, ec) && f.path.is_relative())
    if (const std::string near = nearest_experiment(given, root); !near.empty())
      throw UserError(fmt::format("{}: cannot read the file: no such file, here or in the data "
                                  "directory {}; did you mean '{}'? (simloop list shows them)",
                                  config::printable(given, 200), root.string(), near),
                      2);
  if (f.in == config::FoundIn::working_dir)
    spdlog::info("experiment {}: from the working directory", given);
  else if (f.in == config::FoundIn::data_dir)
    spdlog::info("experiment {}: not in the working directory; from the data directory: {}", given,
                 f.path.string());
  return f.path;
}

void warn_if_priced_elsewhere(const config::Experiment& x) {
  if (x.machine_costs != "measured" || x.machine_host.empty()) return;
  const support::HostFacts here = support::this_host();
  const std::vector<std::string> diff = support::host_differences(x.machine_host, here);
  if (diff.empty()) return;
  static std::set<std::string> said;  // each machine once a process
  if (!said.insert(x.machine_name + "|" + x.machine_host.fingerprint()).second) return;
  spdlog::warn(
      "machine {}: its costs were measured on host {} ({}), not on this one ({}): {}. Its "
      "predictions are for that host. To price this one, run `simloop calibrate host` (as root "
      "with perf; one to three minutes), then name its profiles (machine: host with stack: "
      "host-linux, or machine: host-bsd with stack: host-bsd; README: \"Your own machine\")",
      x.machine_name, x.machine_host.fingerprint(), x.machine_host.summary(), here.fingerprint(),
      fmt::join(diff, "; "));
}

// calibrate host writes two fits, each a machine with its stack: the
// Linux one (machine: host is its machine) and the BSD one. A machine of
// one with the stack of the other prices a stack with costs fitted beside
// another (the system call's and the copy's differ between the two).
void warn_if_fits_mixed(const config::Experiment& x) {
  const std::string& m = x.machine_ref;
  const std::string& s = x.stack_ref;
  if (config::host_profile_files("machines", m).empty() ||
      config::host_profile_files("stacks", s).empty())
    return;
  // By the files they resolved to: machine: host is the BSD fit's where
  // the Linux half was skipped.
  const bool linux_machine = x.machine_name == "host-linux-machine";
  const bool bsd_machine = x.machine_name == "host-bsd-machine";
  if (!((linux_machine && x.stack_name == "host-bsd-stack") ||
        (bsd_machine && x.stack_name == "host-linux-stack")))
    return;
  static std::set<std::string> said;
  if (!said.insert(m + "|" + s).second) return;
  spdlog::warn(
      "machine '{}' is the {} fit of this host's profile and stack '{}' the {} one: each stack "
      "was fitted with its own machine's system call and copy costs, so this pair mixes two "
      "fits; name machine: {} for stack: {}",
      m, linux_machine ? "Linux" : "BSD", s, linux_machine ? "BSD" : "Linux", s, s);
}

config::Experiment load_user_experiment(const std::string& file,
                                        const std::vector<std::string>& sets,
                                        const std::vector<std::string>& unset) {
  const fs::path p = file.empty() ? tree_file(kDefaultRunExperiment) : experiment_path(file);
  if (file.empty()) spdlog::debug("the default experiment: {}", p.string());
  try {
    config::Experiment x = config::load_experiment(p, sets, unset);
    for (const auto& note : x.notes) spdlog::info("{}", note);
    warn_if_priced_elsewhere(x);
    warn_if_fits_mixed(x);
    return x;
  } catch (const config::ConfigError& e) {
    throw UserError(e.what(), 2);
  }
}

void add_run(CLI::App& app, std::vector<Command>& commands) {
  struct Args {
    std::string file;
    std::vector<std::string> sets, unset;
    std::string outdir, sweep_csv;
    int64_t point = -1, repeat = 0;
    bool long_csv = false, strict = false;
    std::string trace_file, trace_window;
    std::vector<std::string> simgrid_cfg;
  };
  auto a = std::make_shared<Args>();
  auto* run = app.add_subcommand(
      "run",
      "Simulate an experiment and predict its kpps, with a cycle breakdown per stage.\n"
      "Without EXPERIMENT, runs the default: the 2006 seed host (experiments/seed-athlon.yaml).\n"
      "Exit status: 0 ok, 2 bad configuration (with --strict, also a cost left undetermined that\n"
      "the run uses), 3 the run ended early (e.g. an alignment fault),\n"
      "4 a result could not be written (the message names the file and the system's reason).");
  run->add_option("experiment", a->file, "Experiment YAML file");
  run->add_option("--set", a->sets,
                  "Override a key: path.to.key=value, or choose a profile: machine=NAME, "
                  "stack=NAME (repeatable)");
  run->add_option("--unset", a->unset,
                  "Leave out a key (or section) the experiment file sets, as if not written "
                  "(repeatable)");
  run->add_option("-o,--output-dir", a->outdir,
                  "Directory for the CSV and JSON results (output.dir)");
  run->add_option("--from-sweep", a->sweep_csv,
                  "Rerun one run of a sweep alone: the results CSV (its manifest, .json, beside "
                  "it, holds every point's resolved configuration and seeds)");
  run->add_option("--point", a->point, "With --from-sweep: the point (the CSV's point column)")
      ->check(CLI::Range(int64_t{0}, int64_t{1000000}));
  run->add_option("--repeat", a->repeat, "With --from-sweep: the repeat (default 0)")
      ->check(CLI::Range(int64_t{0}, int64_t{1000000}));
  run->add_flag("--long", a->long_csv,
                "Also write <name>-long.csv: one row per function and metric (cycles per packet "
                "by kind of cost, I-cache misses per packet); see docs/output-reference.md");
  run->add_option("--trace", a->trace_file,
                  "Write a timeline of simulated time for a window of packets: Chrome/Perfetto "
                  "trace event JSON (open it in ui.perfetto.dev or chrome://tracing)");
  run->add_option("--trace-window", a->trace_window,
                  "With --trace: the packets FROM:TO (indices, TO excluded; default 0:1000)");
  run->add_flag("--strict", a->strict,
                "Refuse a run that uses a cost its profiles leave undetermined (`~`, priced 0): "
                "exit status 2, and nothing written (without it the run warns, and its JSON "
                "lists them under undetermined_costs)");
  run->add_option("--cfg", a->simgrid_cfg,
                  "A SimGrid configuration item, passed through: --cfg=tracing:yes "
                  "--cfg=tracing/filename:run.trace --cfg=tracing/actor:yes (SimGrid's own "
                  "Paje trace, for Vite or Viva); repeatable");
  commands.push_back({run, [a] {
                        engine::set_simgrid_config(a->simgrid_cfg);
                        return run_cmd(a->file, a->sets, a->unset, a->outdir, a->sweep_csv,
                                       a->point, a->repeat, a->long_csv, a->trace_file,
                                       a->trace_window, a->strict);
                      }});

  auto c = std::make_shared<Args>();
  auto* check = app.add_subcommand(
      "check", "Validate an experiment without running it; print the resolved configuration.");
  check->add_option("experiment", c->file, "Experiment YAML file")->required();
  check->add_option("--set", c->sets,
                    "Override a key: path.to.key=value, or choose a profile: machine=NAME, "
                    "stack=NAME (repeatable)");
  check->add_option("--unset", c->unset,
                    "Leave out a key (or section) the experiment file sets (repeatable)");
  commands.push_back({check, [c] {
                        const auto x = load(c->file, c->sets, c->unset);
                        // Whatever `sweep` would refuse, refused here too:
                        // the section and every point's configuration.
                        const size_t points = check_sweep_section(x, c->sets);
                        std::cout << config::to_json(x).dump(2) << "\n";
                        if (x.has_sweep && points > sweep::kCheckedPoints)
                          spdlog::info(
                              "{}: valid, with a sweep of {} points (each value checked; more "
                              "than {} points are not each loaded, a point the loader refuses "
                              "is a row with status error when it runs)",
                              c->file, points, sweep::kCheckedPoints);
                        else if (x.has_sweep)
                          spdlog::info("{}: valid, with a sweep of {} points", c->file, points);
                        else
                          spdlog::info("{}: valid", c->file);
                        return 0;
                      }});

  auto* oref = app.add_subcommand(
      "output-reference",
      "Print the reference of every output column: unit and meaning (Markdown).");
  commands.push_back({oref, [] {
                        std::cout << engine::output_reference_markdown();
                        return 0;
                      }});

  auto* ref = app.add_subcommand("config-reference",
                                 "Print the reference of every configuration key (Markdown).");
  commands.push_back({ref, [] {
                        std::cout << config::reference_markdown();
                        return 0;
                      }});
}

}  // namespace simloop::cli
