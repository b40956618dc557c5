// simloop layout: predicted I-cache misses of a code layout, the sets that
// thrash, and a link order and padding with fewer misses.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstdint>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "sim/config/experiment.h"
#include "sim/layout/build.h"
#include "sim/report/table.h"
#include "sim/stack/net/inet.h"
#include "sim/support/text.h"
#include "sim/support/yaml_input.h"
#include "sim/tools/advise/layout_advice.h"
#include "sim/tools/cli/commands.h"
#include "sim/tools/cli/layout_build.h"
#include "sim/tools/measure/build_files.h"
#include "sim/tools/measure/harness_run.h"

namespace simloop::cli {

namespace fs = std::filesystem;

namespace {

constexpr const char* kDefaultExperiment = "experiments/seed/icache-baseline.yaml";
// The search budgets, in evaluations, unless --max-evals says: a kernel
// layout's replay is cheap, a build's function order is predicted on every
// path and geometry.
constexpr int kObjectEvals = 20000;
constexpr int kOrderEvals = 2000;

struct LayoutArgs {
  std::string file;
  std::vector<std::string> sets;
  std::string layout_file, nm_file, owners_file;
  double hot_fraction = 1.0;
  bool hot_fraction_given = false;
  bool i1_given = false;
  double budget_s = 600;  // a cap on the budget in evaluations
  int max_evals = -1;     // not given: kObjectEvals, or kOrderEvals for a build's order
  uint64_t seed = 1;
  uint64_t max_pad = 2048;
  bool no_search = false;
  int top = 10;
  std::string json_out;
  LayoutBuildArgs build;  // a real build: --map, --path, --I1, --out-dir
};

models::PathSpec path_spec(const config::Experiment& x) {
  models::PathSpec s;
  s.path = config::path_of(x);
  s.payload = x.workload.payload;
  s.receive = x.workload.receive;
  s.options = models::recorded_stack_options(x.options, x.stack_options);
  s.machine = x.machine;
  s.stack = x.stack;
  s.interrupts = x.interrupts;
  return s;
}

std::string conflict_table(const std::vector<models::SetConflict>& conflicts, int top, int assoc) {
  if (conflicts.empty()) return "  no L1 set holds more hot lines than it has ways\n";
  std::string out = fmt::format(
      "  {:>6}  {:>10}  {}\n", "set", "misses/pkt",
      fmt::format("hot lines (more than {} ways): address symbol (owner) misses/pkt", assoc));
  int shown = 0;
  for (const auto& sc : conflicts) {
    if (shown++ == top) {
      out += fmt::format("  ... {} more sets\n", conflicts.size() - static_cast<size_t>(top));
      break;
    }
    bool first = true;
    for (const auto& l : sc.lines) {
      const std::string who =
          fmt::format("{:#x} {} ({}) {:.2f}", l.addr, l.symbol, l.owner, l.misses_per_packet);
      if (first)
        out += fmt::format("  {:>6}  {:>10.2f}  {}\n", sc.set, sc.misses_per_packet, who);
      else
        out += fmt::format("  {:>6}  {:>10}  {}\n", "", "", who);
      first = false;
    }
  }
  return out;
}

nlohmann::json to_json(const models::Evaluation& e, double clock_hz, double cycles) {
  using models::kpps;
  nlohmann::json conflicts = nlohmann::json::array();
  for (const auto& sc : e.conflicts) {
    nlohmann::json lines = nlohmann::json::array();
    for (const auto& l : sc.lines)
      lines.push_back({{"address", fmt::format("{:#x}", l.addr)},
                       {"symbol", l.symbol},
                       {"owner", l.owner},
                       {"misses_per_packet", l.misses_per_packet}});
    conflicts.push_back(
        {{"set", sc.set}, {"misses_per_packet", sc.misses_per_packet}, {"lines", lines}});
  }
  return {{"l1_misses_per_packet", e.l1_misses_per_packet},
          {"l2_misses_per_packet", e.l2_misses_per_packet},
          {"stall_cycles_per_packet", e.stall_cycles_per_packet},
          {"cycles_per_packet", cycles + e.stall_cycles_per_packet},
          {"kpps", kpps(clock_hz, cycles + e.stall_cycles_per_packet)},
          {"conflicts", conflicts}};
}

// The experiment keys that make the experiment link the recommendation, if
// it can say it with its layout.* keys: checked by loading the experiment
// with them and comparing code maps. Empty if it cannot.
std::vector<std::string> experiment_keys(const models::SearchResult& r,
                                         const models::LinkedLayout& user,
                                         const config::Experiment& x, const fs::path& file,
                                         const LayoutArgs& a) {
  std::vector<std::string> keys;
  const auto& lo = x.layout;
  if (!a.layout_file.empty()) return keys;
  keys.push_back(fmt::format("layout.order={}", fmt::join(r.order, ",")));
  if (!lo.move_to_end.empty()) keys.push_back("layout.move_to_end=\"\"");
  if (r.padding.bytes > 0) {
    if (lo.pad_object.empty() || lo.pad_bytes == 0) {
      keys.push_back("layout.pad_object=" + r.padding.object);
      keys.push_back(fmt::format("layout.pad_bytes={}", r.padding.bytes));
      if (lo.pad_offset >= 0) keys.push_back("layout.pad_offset=-1");
    } else if (r.padding.object == lo.pad_object && lo.pad_offset < 0) {
      keys.push_back(fmt::format("layout.pad_bytes={}", r.padding.bytes + lo.pad_bytes));
    } else {
      // The experiment's own pad stays; the advice's goes at its object's end.
      keys.push_back(fmt::format("layout.more_pads={}{}{}:{}", lo.more_pads,
                                 lo.more_pads.empty() ? "" : ",", r.padding.object,
                                 r.padding.bytes));
    }
  }
  std::vector<std::string> all = a.sets;
  all.insert(all.end(), keys.begin(), keys.end());
  bool same = false;
  try {
    const config::Experiment y = config::load_experiment(file, all);
    same = y.code && models::code_map(*y.code, *x.stack.fns) ==
                         models::code_map(models::link_with(r.layout, user), *x.stack.fns);
  } catch (const config::ConfigError& e) {
    spdlog::debug("checking the recommended keys: {}", e.what());
  }
  if (!same) keys.clear();
  return keys;
}

// Prints the advice (and writes it as JSON with -o).
void print_advice(const models::Advice& adv, const config::Experiment& x, const fs::path& file,
                  const std::string& source, const LayoutArgs& a,
                  const models::LinkedLayout& user) {
  using models::kpps;
  const models::ICacheConfig& cache = x.icache;
  const models::PathTrace& trace = adv.trace;
  const models::Evaluation& before = adv.before;
  const double hz = x.machine.clock_hz;
  const double cpp = trace.cycles_per_packet;
  const std::string includes =
      trace.packets_per_interrupt > 0
          ? fmt::format(
                "stack, system call, user loop and interrupt cycles ({:.1f}/packet, one interrupt "
                "per {} "
                "packets) priced on the real path without stalls, plus the predicted stalls; the "
                "sender "
                "is assumed CPU-bound (no ENOBUFS sleeps, link not saturated)",
                trace.interrupt_cycles_per_packet, trace.packets_per_interrupt)
          : "stack, system call and user loop cycles priced on the real path without stalls, plus "
            "the predicted "
            "stalls; no interrupts on this path; the sender is assumed CPU-bound";

  std::cout << fmt::format("layout: {}\n", source);
  std::cout << fmt::format(
      "cache: L1 {} B {}-way {} B lines ({} sets){}, L2 {}; {} cycles per L2 hit, {} per memory "
      "access, {} more per L1 refill\n",
      cache.l1.size_bytes, cache.l1.assoc, cache.l1.line_bytes,
      cache.l1.size_bytes / cache.l1.assoc / cache.l1.line_bytes,
      cache.next_line_prefetch ? ", next-line prefetch" : "",
      cache.l2_enabled ? fmt::format("{} B {}-way {}", cache.l2.size_bytes, cache.l2.assoc,
                                     cache.l2_exclusive ? "exclusive" : "inclusive")
                       : std::string("off"),
      cache.l2_hit_cycles, cache.memory_cycles, cache.l1_refill_cycles);
  std::cout << fmt::format(
      "path: {} B to {}, {} code pieces per {} packets, {:.1f} cycles/packet without stalls\n",
      x.workload.payload, config::dest_name(x.workload.dest), trace.code.size(), trace.packets,
      cpp);
  if (x.variance.page_colouring)
    std::cout << "note: page colouring is ignored (identity page map); it only moves L2 sets\n";
  std::cout << fmt::format(
      "\npredicted per packet (steady state): {:.2f} L1 misses, {:.3f} L2 misses, {:.1f} stall "
      "cycles -> {:.1f} kpps\n",
      before.l1_misses_per_packet, before.l2_misses_per_packet, before.stall_cycles_per_packet,
      kpps(hz, cpp + before.stall_cycles_per_packet));
  std::cout << "colliding L1 sets, most misses first:\n"
            << conflict_table(before.conflicts, a.top, cache.l1.assoc);

  nlohmann::json j = {{"layout", source},
                      {"experiment", file.string()},
                      {"cycles_per_packet_without_stalls", cpp},
                      {"interrupt_cycles_per_packet", trace.interrupt_cycles_per_packet},
                      {"packets_per_interrupt", trace.packets_per_interrupt},
                      {"kpps_includes", includes},
                      {"before", to_json(before, hz, cpp)}};

  if (!adv.result) {
    if (!x.layout.build.nm.empty() && a.layout_file.empty()) {
      if (a.build.map.empty() && x.build_files.map.empty())
        std::cout << "\nno search: a real build's layout is searched as a function order, which "
                     "needs its link map (give --map, or set layout.build.map)\n";
    } else if (!a.nm_file.empty()) {
      std::cout << "\nno search: nm output does not say which section a symbol is in (give "
                   "--map and --path for a real build)\n";
    }
  } else {
    const models::SearchResult& r = *adv.result;
    const double k0 = kpps(hz, cpp + r.before.stall_cycles_per_packet);
    const double k1 = kpps(hz, cpp + r.after.stall_cycles_per_packet);
    const int evals = a.max_evals < 0 ? kObjectEvals : a.max_evals;
    std::cout << fmt::format(
        "\nsearch: {} layouts evaluated of a budget of {} (seed {}, {}){}\n", r.evaluations, evals,
        a.seed,
        r.stopped_by_time
            ? fmt::format("the time cap of {} s cut the budget short: the result may differ on "
                          "a faster or less busy machine",
                          a.budget_s)
            : std::string("deterministic"),
        r.after.l1_misses_per_packet == 0 ? ", no misses left" : "");
    const auto& moved = adv.moved;
    if (!adv.changed) {
      std::cout
          << "recommendation: keep the layout (no order or padding found with fewer misses)\n";
    } else {
      if (!moved.empty())
        std::cout << fmt::format("objects to move ({} of {}): {}\nrecommended link order:\n  {}\n",
                                 moved.size(), r.order.size(), fmt::join(moved, " "),
                                 fmt::join(r.order, " "));
      if (r.padding.bytes > 0)
        std::cout << fmt::format("recommended padding: {} bytes at the end of {}\n",
                                 r.padding.bytes, r.padding.object);
    }
    std::cout << fmt::format(
        "predicted per packet: L1 misses {:.2f} -> {:.2f}, stall cycles {:.1f} -> {:.1f}\n",
        r.before.l1_misses_per_packet, r.after.l1_misses_per_packet,
        r.before.stall_cycles_per_packet, r.after.stall_cycles_per_packet);
    std::cout << fmt::format("predicted rate: {:.1f} -> {:.1f} kpps ({:+.1f} kpps, {:+.2f} %)\n",
                             k0, k1, k1 - k0, k0 > 0 ? 100 * (k1 - k0) / k0 : 0);
    std::cout << fmt::format("  kpps = clock / cycles per packet; includes {}\n", includes);
    if (adv.changed && !r.after.conflicts.empty())
      std::cout << "colliding L1 sets left:\n"
                << conflict_table(r.after.conflicts, a.top, cache.l1.assoc);

    const std::vector<std::string> keys =
        adv.changed ? experiment_keys(r, user, x, file, a) : std::vector<std::string>{};
    if (!keys.empty()) {
      std::cout << fmt::format("to simulate it: simloop run {}", file.string());
      for (const auto& k : keys) std::cout << fmt::format(" --set '{}'", k);
      std::cout << "\n";
    } else if (adv.changed) {
      std::cout << (a.layout_file.empty()
                        ? "no experiment keys link this layout as advised (the experiment's "
                          "layout.* keys and its link perturbation cannot say it); apply the "
                          "order and padding above to the layout file\n"
                        : "no experiment keys: --layout replaces the experiment's layout; apply "
                          "the order and padding above to that file\n");
    }
    nlohmann::json rec = {{"order", r.order},
                          {"moved", moved},
                          {"changed", adv.changed},
                          {"evaluations", r.evaluations},
                          {"seed", a.seed},
                          {"stopped_by_time", r.stopped_by_time},
                          {"max_evaluations", a.max_evals < 0 ? kObjectEvals : a.max_evals},
                          {"time_cap_s", a.budget_s},
                          {"experiment_keys", keys}};
    rec["padding"] = r.padding.bytes > 0
                         ? nlohmann::json{{"object", r.padding.object}, {"bytes", r.padding.bytes}}
                         : nlohmann::json(nullptr);
    j["recommendation"] = rec;
    j["after"] = to_json(r.after, hz, cpp);
    j["gain_kpps"] = k1 - k0;
  }
  if (!a.json_out.empty()) {
    report::write_file_atomic(a.json_out, j.dump(2) + "\n");
    std::cout << fmt::format("wrote {}\n", a.json_out);
  }
}

// The layouts advised on: from nm (report only), a YAML file, or the
// experiment; with the user layout linked beside.
struct Layouts {
  std::optional<models::Layout> kernel;  // none from nm
  models::LinkedLayout user, input;
  std::string source;  // what the report calls it
};

// The layout.build key an option of a build stands for.
std::string build_key(std::string_view option) {
  if (option == "--nm") return "layout.build.nm";
  if (option == "--owners") return "layout.build.owners";
  return "layout.build.hot_fraction";
}

// A path as a --set value: absolute (the experiment's directory is not the
// working directory), quoted as YAML.
std::string yaml_path(const std::string& file) {
  std::string q = "\"";
  for (const char c : fs::absolute(file).string()) {
    if (c == '"' || c == '\\') q += '\\';
    q += c;
  }
  return q + "\"";
}

// Whether the experiment (or a --set) sets layout.build: then the build is
// its code layout. A file that cannot be read says no: loading it says why.
bool uses_build(const fs::path& file, const std::vector<std::string>& sets) {
  for (const auto& s : sets)
    if (s.starts_with("layout.build.")) return true;
  try {
    const YAML::Node doc = config::read_yaml_file(file);
    return doc.IsMap() && doc["layout"] && doc["layout"].IsMap() && doc["layout"]["build"];
  } catch (const config::ConfigError&) {
    return false;
  }
}

Layouts load_layouts(const config::Experiment& x, const fs::path& file, const LayoutArgs& a) {
  Layouts l;
  try {
    if (!x.layout.user.empty())
      l.user = models::link(models::load_layout_yaml(config::find_layout(x.source, x.layout.user)));
    if (!x.layout.build.nm.empty() && a.layout_file.empty()) {
      // As `simloop run` links it: the experiment's build, with --nm,
      // --owners and --hot-fraction in place of its keys.
      const auto& b = x.layout.build;
      std::string keys = "nm " + b.nm;
      for (const auto& [key, value] :
           {std::pair<const char*, const std::string&>{"profile", b.profile},
            {"owners", b.owners},
            {"map", b.map},
            {"order", b.order}})
        if (!value.empty()) keys += fmt::format(", {} {}", key, value);
      if (b.profile.empty()) keys += fmt::format(", hot_fraction {}", b.hot_fraction);
      l.input = *x.code;
      l.source = fmt::format("{} (layout.build: {})", file.string(), keys);
      return l;
    }
    if (!a.nm_file.empty()) {
      std::istringstream in(measure::read_nm_map(a.nm_file));
      l.input = models::layout_from_nm(in, measure::read_owners(a.owners_file), a.hot_fraction);
      if (l.input.by_owner.empty())
        throw UserError(
            fmt::format("{}: no symbol of {} is in this build: is it a build of the "
                        "functions the owners file names?",
                        a.nm_file, a.owners_file));
      l.source = fmt::format("nm output {} (owners {})", a.nm_file, a.owners_file);
      return l;
    }
    if (!a.layout_file.empty()) {
      l.kernel = models::load_layout_yaml(a.layout_file);
      l.source = a.layout_file;
    } else {
      if (x.layout.kernel.empty())
        throw UserError(fmt::format(
            "{}: no layout.kernel or layout.build; give one, or --layout/--nm", file.string()));
      l.kernel = config::transform_layout(
          models::load_layout_yaml(config::find_layout(x.source, x.layout.kernel)), x.layout);
      l.source = fmt::format("{} (layout.kernel {} with the experiment's layout.* keys)",
                             file.string(), x.layout.kernel);
    }
    l.input = models::link_with(*l.kernel, l.user);
    if (a.layout_file.empty() && x.code &&
        models::code_map(*x.code, *x.stack.fns) != models::code_map(l.input, *x.stack.fns))
      spdlog::warn(
          "the experiment links its layout differently ({}); advising on the layout without it",
          x.perturbation.empty() ? "unknown transform" : "link perturbation: " + x.perturbation);
  } catch (const models::LayoutError& e) {
    throw UserError(e.what(), 2);
  } catch (const config::ConfigError& e) {
    throw UserError(e.what(), 2);
  }
  return l;
}

// The experiment's build searched as a function order, on its own path
// (its layout.build.profile) and any --path, at its L1 geometry unless --I1
// says otherwise; layout.build.order is predicted beside.
int experiment_build_order(const LayoutArgs& a, const config::Experiment& x) {
  const models::BuildFiles& f = x.build_files;
  LayoutBuildArgs b = a.build;
  b.nm = f.nm.string();
  b.owners = f.owners.string();
  if (b.map.empty()) b.map = f.map.string();
  if (!f.order.empty()) b.orders.insert(b.orders.begin(), "layout.build.order=" + f.order.string());
  if (!a.i1_given) b.i1 = {measure::geometry_spec(x.icache.l1)};
  if (!f.profile.empty()) {
    if (x.workload.service == workload::Service::simulated)
      throw UserError(
          "the experiment's path is not a harness loop (workload.service simulated): a "
          "profile is replayed on `full` or `send-only`; set workload.service, or give the "
          "build's paths with --path");
    b.whole_paths.push_back({x.name, f.profile.string(), x.workload.payload, config::path_of(x)});
  } else if (b.paths.empty()) {
    throw UserError(
        "a function order is searched on profiled paths: set layout.build.profile (the "
        "experiment's path), or give --path");
  }
  b.budget_s = a.budget_s;
  b.max_evals = a.max_evals < 0 ? kOrderEvals : a.max_evals;
  b.seed = a.seed;
  b.no_search = a.no_search;
  std::cout << "\n";
  return layout_build_cmd(b);
}

int layout_cmd(const LayoutArgs& a) {
  const bool build_options = !a.build.map.empty() || !a.build.paths.empty();
  if (build_options && a.file.empty() && a.sets.empty()) {
    if (!a.layout_file.empty() || !a.json_out.empty())
      throw UserError(
          "a real build (--nm, --map, --path) takes no --layout or -o (see --out-dir); or give "
          "an experiment with layout.build");
    LayoutBuildArgs b = a.build;
    b.nm = a.nm_file;
    b.owners = a.owners_file;
    b.budget_s = a.budget_s;
    b.max_evals = a.max_evals < 0 ? kOrderEvals : a.max_evals;
    b.seed = a.seed;
    b.no_search = a.no_search;
    return layout_build_cmd(b);
  }
  fs::path file = experiment_path(a.file);
  if (file.empty()) file = tree_file(kDefaultExperiment);
  if (!a.layout_file.empty() && !a.nm_file.empty())
    throw UserError("give --layout or --nm, not both");
  // On an experiment with layout.build, --nm, --owners and --hot-fraction
  // stand for its keys: the experiment is loaded with them, as `simloop run
  // --set` would load it, so the build is read and linked as a run links it.
  const bool build = a.layout_file.empty() && uses_build(file, a.sets);
  std::vector<std::string> sets = a.sets;
  const std::pair<const char*, std::string> overrides[] = {
      {"--nm", a.nm_file.empty() ? "" : yaml_path(a.nm_file)},
      {"--owners", a.owners_file.empty() ? "" : yaml_path(a.owners_file)},
      {"--hot-fraction", a.hot_fraction_given ? fmt::format("{}", a.hot_fraction) : ""}};
  if (build)
    for (const auto& [option, value] : overrides)
      if (!value.empty()) sets.push_back(fmt::format("{}={}", build_key(option), value));
  config::Experiment x;
  try {
    x = config::load_experiment(file, sets);
  } catch (const config::ConfigError& e) {
    std::string msg = e.what();
    for (const auto& [option, value] : overrides) {
      // An error of a file given as an option names the option.
      const std::string from = fmt::format("--set {}: ", build_key(option));
      if (build && !value.empty() && msg.starts_with(from))
        msg = fmt::format("{}: {}", option, msg.substr(from.size()));
    }
    throw UserError(msg, 2);
  }
  if (!build && !a.nm_file.empty() && a.owners_file.empty())
    throw UserError("--nm needs --owners (or an experiment with layout.build)");
  if (build_options && !a.layout_file.empty())
    throw UserError("--map and --path advise the experiment's build: give no --layout");
  if (build_options && !build)
    throw UserError(fmt::format(
        "--map and --path advise a real build: {} has no layout.build (give --nm with them and "
        "no experiment, or an experiment with layout.build)",
        file.string()));
  Layouts l = load_layouts(x, file, a);

  models::AdviceRequest req;
  req.path = path_spec(x);
  req.cache = x.icache;
  req.fetch = x.fetch;
  req.input = std::move(l.input);
  req.kernel = std::move(l.kernel);
  req.user = l.user;
  req.search = !a.no_search;
  req.search_options.budget_s = a.budget_s;
  req.search_options.max_evaluations = a.max_evals < 0 ? kObjectEvals : a.max_evals;
  req.search_options.seed = a.seed;
  req.search_options.max_pad = a.max_pad;
  models::Advice advice;
  try {
    advice = models::advise_layout(req);
  } catch (const models::PathStopped& e) {
    throw UserError(e.what(), 3);  // as `simloop run` ends early on the same path
  }
  print_advice(advice, x, file, l.source, a, l.user);
  if (build && (!a.build.map.empty() || !x.build_files.map.empty()))
    return experiment_build_order(a, x);
  return 0;
}

}  // namespace

void add_layout(CLI::App& app, std::vector<Command>& commands) {
  auto a = std::make_shared<LayoutArgs>();
  auto* cmd = app.add_subcommand(
      "layout",
      "Predict a code layout's I-cache misses per packet, show which functions collide in which L1 "
      "sets,\n"
      "and search link orders and padding for a layout with fewer misses.\n\n"
      "The experiment gives the cache geometry and penalties (machine.cache.*), the workload "
      "(destination,\n"
      "payload, receiver), the stack options, the interrupts and the layout (layout.* keys, "
      "transforms\n"
      "included). The real stack runs once for the workload and the code it executes per packet "
      "is\n"
      "recorded (the sender's loop, system call entry and exit, every stack function, the netisr "
      "and\n"
      "receiver, transmit-completion interrupts at their share); each candidate layout is then "
      "evaluated\n"
      "by replaying that sequence through the I-cache model: two warm-up passes, then one measured "
      "pass of\n"
      "at least 20 packets (whole interrupt periods). These are the misses `simloop run` reports "
      "in steady\n"
      "state (page colouring aside: the replay uses the identity page map).\n\n"
      "An experiment with layout.build is advised on with the real build's layout as `simloop "
      "run` links it\n"
      "(its nm map, profile, owners, link map and order); --nm, --owners and --hot-fraction "
      "replace those\n"
      "keys. With its link map (layout.build.map, or --map) the build's function order is "
      "searched too,\n"
      "as with --nm, --map and --path: on the experiment's path (its layout.build.profile) and "
      "any --path,\n"
      "at its machine.cache.l1 unless --I1 is given, with layout.build.order predicted beside.\n\n"
      "Colliding sets are L1 sets that more distinct hot lines map to than the cache has ways; "
      "each is\n"
      "listed with its lines (address, symbol, owner) and the misses per packet they take.\n\n"
      "The search is a local search over the kernel layout (the user layout stays as it is): move "
      "one\n"
      "object to another position, swap it with another hot object, or pad one object at its end "
      "in\n"
      "16-byte steps up to --max-pad, starting from the objects in the colliding sets; it takes "
      "the first\n"
      "candidate with fewer stall cycles (then fewer misses) and repeats until nothing improves, "
      "no misses\n"
      "are left or --max-evals layouts were tried (--budget seconds cap that). It never recommends "
      "a "
      "layout\n"
      "worse than the input. Candidates are tried in an order shuffled by --seed, so the result "
      "is\n"
      "deterministic for a seed and --max-evals unless the time cap cuts in (the report says "
      "so).\n\n"
      "The predicted rate is kpps = clock / (cycles per packet without stalls + predicted stall "
      "cycles);\n"
      "the cycles without stalls come from pricing a few hundred packets of the real path with "
      "the\n"
      "experiment's cost tables (interrupt share included when the path has interrupts). When the\n"
      "experiment's layout.* keys can express the recommendation, the report prints the `simloop "
      "run`\n"
      "command that simulates it (checked to link to the same code map).\n\n"
      "Exit status: 0 success, 2 bad input, 4 -o could not be written.");
  cmd->add_option("experiment", a->file,
                  std::string("Experiment YAML file (default: ") + kDefaultExperiment + ")");
  cmd->add_option("--set", a->sets, "Override an experiment key: path.to.key=value (repeatable)");
  cmd->add_option("--layout", a->layout_file,
                  "A kernel layout YAML (configs/layouts format) instead of the experiment's "
                  "layout.kernel (or layout.build); the\n"
                  "experiment's layout.* transforms are not applied to it, its layout.user is "
                  "still linked beside");
  cmd->add_option(
      "--nm", a->nm_file,
      "A real binary's symbol map instead of a YAML layout: `nm -S --defined-only -n` lines\n"
      "with the PLT sections nm does not list (`simloop measure native --harness B -n 10 -o\n"
      "X.csv` writes X.csv.LAYOUT.nm), gzip-compressed or not, or, without an experiment, the\n"
      "binary itself. On an experiment with layout.build, its layout.build.nm. Else alone\n"
      "(needs --owners) a report only: nm does not say which section a symbol is in; with\n"
      "--map and --path, the real build's prediction and a function order (owners default to\n"
      "configs/harness/owners.txt)");
  cmd->add_option(
      "--owners", a->owners_file,
      "With --nm or layout.build (its layout.build.owners): a file of 'symbol owner' lines\n"
      "('#' comments) naming what runs each symbol: a stack function (sendto, udp_output,\n"
      "ip_output, ...) or syscall_entry, syscall_exit, user_loop");
  auto* hot_fraction = cmd->add_option("--hot-fraction", a->hot_fraction,
                                       "With --nm alone, or layout.build without a profile (its "
                                       "layout.build.hot_fraction): the\n"
                                       "part of each symbol that is hot, from its start")
                           ->check(CLI::Range(0.001, 1.0))
                           ->capture_default_str();
  cmd->add_option("--map", a->build.map,
                  "With --nm: the build's ld.lld link map (-Map); with --path, predicts the\n"
                  "build's misses as `simloop icache` does and searches a function order for\n"
                  "ld.lld --symbol-ordering-file (functions in sections of their own:\n"
                  "-ffunction-sections) with fewer misses on every path, placing fillers\n"
                  "(simloop_order_pad_* sections the build carries) between functions where\n"
                  "they help; baselines beside it: hot functions in call order (per path and\n"
                  "over all paths) and in C3 clusters (Pettis-Hansen over the profiles' calls).\n"
                  "The search starts from each baseline, repairing one that puts a cell above\n"
                  "the default link, and keeps the best; runtime libraries stay where the\n"
                  "linker puts them");
  cmd->add_option("--path", a->build.paths,
                  "With --nm: a path the build runs, "
                  "name=NAME,profile=FILE,payload=BYTES[,path=SPEC][,weight=W]\n"
                  "(FILE from `simloop measure profile` of the build on that path; SPEC a\n"
                  "destination, or DEST/ALIGN/COPY...); repeat for several: the search weighs "
                  "their misses and\n"
                  "makes none worse than the default link. A program of your own: "
                  "name=NAME,profile=FILE[,weight=W]\n"
                  "with FILE from `simloop measure profile --program` (no payload or path: its "
                  "loop runs the code)");
  cmd->add_option("--order", a->build.orders,
                  "With --map: also predict this function order, NAME=FILE (one symbol a line,\n"
                  "as ld.lld --symbol-ordering-file reads it); repeatable");
  auto* i1 = cmd->add_option("--I1", a->build.i1,
                             "With --path: I1 geometries SIZE,ASSOC,LINE the search counts "
                             "misses at (on an experiment's\n"
                             "build: its machine.cache.l1)")
                 ->capture_default_str();
  cmd->add_option("--out-dir", a->build.out_dir,
                  "With --path: write predicted.csv and an order file per order (advice.order,\n"
                  "call-order-*.order) into this directory");
  cmd->add_option("--budget", a->budget_s,
                  "A cap in seconds on the search's budget (--max-evals); the report says when it "
                  "cut in,\nas the result may then depend on the machine's speed and load")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  cmd->add_option("--max-evals", a->max_evals,
                  fmt::format("The search's budget: candidates evaluated at most (default {} for "
                              "a kernel layout,\n{} for a build's function order); the same "
                              "inputs give the same result",
                              kObjectEvals, kOrderEvals))
      ->check(CLI::Range(0, 100000000));
  cmd->add_option("--seed", a->seed, "Seed of the order in which candidates are tried")
      ->capture_default_str();
  cmd->add_option("--max-pad", a->max_pad,
                  "Largest padding of one object the search tries, bytes (16-byte steps)")
      ->check(CLI::Range(uint64_t{0}, uint64_t{1} << 20))
      ->capture_default_str();
  cmd->add_flag("--no-search", a->no_search, "Only the report of the given layout");
  cmd->add_option("--top", a->top, "Colliding sets to show")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->add_option("-o,--output", a->json_out,
                  "Also write the report as JSON: misses before/after, collision tables, "
                  "recommended order and padding");
  commands.push_back({cmd, [a, hot_fraction, i1] {
                        a->hot_fraction_given = hot_fraction->count() > 0;
                        a->i1_given = i1->count() > 0;
                        return layout_cmd(*a);
                      }});
}

}  // namespace simloop::cli
