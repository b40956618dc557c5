#include "sim/tools/measure/link_order_study.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <set>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "sim/config/experiment.h"
#include "sim/layout/build.h"
#include "sim/layout/link_map.h"
#include "sim/support/input_error.h"
#include "sim/support/text.h"
#include "sim/support/yaml_input.h"
#include "sim/tools/measure/build_files.h"
#include "sim/tools/measure/icache_check.h"

namespace simloop::measure {

namespace {

using config::ConfigError;

// The path a profile was taken on, as `simloop measure profile` heads it
// ("payload N, dest D, align A, copy C;"): "" if the text has no such head
// (a profile made by hand says nothing).
std::string profiled_path(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line) && line.starts_with("#")) {
    const size_t at = line.find("payload ");
    const size_t end = line.find(';', at);
    if (at != std::string::npos && end != std::string::npos && line.find(", dest ", at) < end)
      return line.substr(at, end - at);
  }
  return "";
}

// A profile of another path replays code this path does not run: refused,
// naming both.
void check_profiled_path(const OrderPath& p, const std::string& text, const std::string& profile,
                         const std::string& what) {
  const std::string head = profiled_path(text);
  if (head.empty()) return;
  const std::string want =
      fmt::format("payload {}, dest {}, align {}, copy {}", p.opt.payload, p.opt.path.get("dest"),
                  p.opt.path.get("align"), p.opt.path.get("copy"));
  if (head != want)
    throw ConfigError(fmt::format(
        "{}: a profile of {} (its head), but {} is {}: profile the build on this path "
        "(simloop measure profile BUILD -l {} --dest {} ...), or give the path the profile's "
        "payload and dest",
        profile, head, what, want, p.opt.payload, p.opt.path.get("dest")));
}

// The path's profile read, and its trace recorded (a program's made);
// `what` names the path in errors. `has_payload`, `has_path`: the path gave
// them; a harness's profile needs the payload, a program's refuses both (and
// is refused where `program_allowed` is false: an experiment's build).
OrderPath with_profile(OrderPath p, const std::string& profile, const std::string& what,
                       bool has_payload = true, bool has_path = true, bool program_allowed = true) {
  const std::string text = read_build_file(profile);
  p.program = profiled_program(text);
  // An experiment's build is a harness's: a program's profile has no path
  // through the stack to run it on.
  if (!p.program.empty() && !program_allowed)
    throw ConfigError(fmt::format(
        "{}: a profile of the program `{}`, which an experiment cannot run: advise on it with "
        "simloop layout --nm PROGRAM --map MAP --path name=N,profile={}",
        profile, p.program, profile));
  if (!p.program.empty()) {
    if (has_payload || has_path)
      throw ConfigError(fmt::format(
          "{}: {} is a profile of the program `{}`: a payload and a path through the stack mean "
          "nothing to it (give name and profile, and weight if you like)",
          what, profile, p.program));
    std::istringstream in(text);
    try {
      p.profile = load_profile(in, profile);
    } catch (const std::runtime_error& e) {
      throw ConfigError(e.what());
    }
    p.profile_file = profile;
    p.trace = program_trace();
    return p;
  }
  if (!has_payload)
    throw ConfigError(fmt::format(
        "{}: payload is required: {} is a harness's profile (a program's says `program:` in its "
        "head, as `simloop measure profile --program` writes it)",
        what, profile));
  if (auto why = p.opt.path.payload_problem(p.opt.payload, p.opt.stack); !why.empty())
    throw ConfigError(fmt::format("{}: payload {}: {}", what, p.opt.payload, why));
  check_profiled_path(p, text, profile, what);
  std::istringstream in(text);
  try {
    p.profile = load_profile(in, profile);
    p.profile_file = profile;
    p.trace = harness_trace(p.opt);
  } catch (const std::runtime_error& e) {
    throw ConfigError(e.what());
  }
  return p;
}

OrderPath whole_path(const ProfiledPath& w) {
  OrderPath p;
  p.opt.warmup = 1000;  // as parse_path
  p.name = w.name;
  p.opt.payload = w.payload;
  p.opt.path = w.path;
  return with_profile(std::move(p), w.profile, fmt::format("path {}", w.name), true, true,
                      /*program_allowed=*/false);
}

// "name=N,profile=FILE,payload=B,path=SPEC[,weight=W]".
OrderPath parse_path(const std::string& spec) {
  OrderPath p;
  p.opt.warmup = 1000;  // as `simloop icache` and `measure cachegrind` run it
  std::string profile;
  bool has_payload = false;
  std::vector<std::string> parts;
  for (size_t from = 0;;) {
    const size_t comma = spec.find(',', from);
    parts.push_back(spec.substr(from, comma - from));
    if (comma == std::string::npos) break;
    from = comma + 1;
  }
  std::set<std::string> seen;
  for (const auto& kv : parts) {
    const auto eq = kv.find('=');
    const std::string key = kv.substr(0, eq),
                      value = eq == std::string::npos ? "" : kv.substr(eq + 1);
    auto bad = [&](const std::string& why) {
      return ConfigError(fmt::format("--path '{}': {}: {}", spec, key, why));
    };
    if (eq == std::string::npos || value.empty()) throw bad("expected key=value");
    if (!seen.insert(key).second) throw bad("given twice; give each key once");
    if (key == "name") {
      // It names the path's order file in --out-dir: a name, not a path.
      if (const std::string why = config::name_problem(value); !why.empty()) throw bad(why);
      p.name = value;
    } else if (key == "profile") {
      profile = value;
    } else if (key == "payload") {
      uint64_t v = 0;
      if (!support::parse_u64(value, &v) || v > workload::Path::kMaxPayload)
        throw bad(fmt::format("expected bytes from 0 to {}", workload::Path::kMaxPayload));
      p.opt.payload = static_cast<int>(v);
      has_payload = true;
    } else if (key == "path") {
      try {
        // A destination alone keeps the other fields at their defaults.
        if (value.find('/') == std::string::npos)
          p.opt.path.set("dest", value);
        else
          p.opt.path = workload::Path::parse(value);
      } catch (const std::exception& e) {
        throw bad(e.what());
      }
    } else if (key == "weight") {
      char* end = nullptr;
      p.weight = std::strtod(value.c_str(), &end);
      if (end != value.c_str() + value.size() || !(p.weight > 0) || !std::isfinite(p.weight))
        throw bad("expected a positive number");
    } else {
      throw bad("unknown key (expected name, profile, payload, path, weight)");
    }
  }
  if (p.name.empty() || profile.empty())
    throw ConfigError(fmt::format(
        "--path '{}': name and profile are required (and payload, for a harness's profile)", spec));
  return with_profile(std::move(p), profile, fmt::format("--path '{}'", spec), has_payload,
                      seen.count("path") != 0);
}

// The build's symbols and, with a map, where its sections are.
void read_build(const LinkOrderStudyOptions& o, OrderProblem* pb) {
  try {
    std::istringstream nm(read_nm_map(o.nm));
    pb->symbols = models::parse_nm(nm, o.nm);
  } catch (const models::LayoutError& e) {
    throw ConfigError(e.what());  // names the file and line
  }
  if (std::none_of(pb->symbols.begin(), pb->symbols.end(),
                   [](const models::NmSymbol& s) { return s.text; }))
    throw ConfigError(fmt::format(
        "{}: no code symbols (an empty file, or the nm of a stripped build): nothing to predict",
        o.nm));
  if (o.map.empty()) return;
  try {
    std::istringstream map(read_build_file(o.map));
    pb->map = models::parse_lld_map(map, o.map);
  } catch (const models::LayoutError& e) {
    throw ConfigError(e.what());  // names the map and its line
  }
  try {
    models::place_sections(pb->map, pb->symbols, {});  // the map is a plain link
  } catch (const models::LayoutError& e) {
    throw ConfigError(fmt::format("{}: {}", o.map, e.what()));
  }
  if (const std::string why = models::map_mismatch(pb->map, pb->symbols); !why.empty())
    throw ConfigError(fmt::format("--nm {} and --map {}: {}", o.nm, o.map, why));
}

// The paths, each checked against the build; then the warnings about the
// build's symbols that the owners and the profiles rely on.
void add_paths(const LinkOrderStudyOptions& o, OrderProblem* pb) {
  std::vector<OrderPath> given;
  for (const auto& w : o.whole_paths) given.push_back(whole_path(w));
  for (const auto& spec : o.paths) given.push_back(parse_path(spec));
  // A program's paths are its loops, which own all the code they run; a
  // harness's paths go by the stack's owners. One kind at a time.
  const size_t programs = static_cast<size_t>(std::count_if(
      given.begin(), given.end(), [](const OrderPath& p) { return !p.program.empty(); }));
  if (programs != 0 && programs != given.size())
    throw ConfigError(
        "the paths mix profiles of a program (measure profile --program) and of a harness: "
        "advise one build at a time");
  if (programs == 0) {
    pb->owners = read_owners(o.owners);
  } else {
    std::set<std::string> loops;
    for (const auto& p : given) loops.merge(program_loops(p.profile));
    pb->owners = program_owners(loops, o.owners, o.owners_given, given.front().profile_file);
    // A function called less than once in a hundred iterations looks like
    // a loop too; each is replayed every iteration.
    if (!o.owners_given && loops.size() > 1)
      o.warn(fmt::format(
          "{} functions run every iteration without being called each time, and each is taken "
          "as a loop replayed every iteration: {} (one called now and then also looks so: give "
          "--owners with the loop alone as user_loop if that is wrong)",
          loops.size(), fmt::join(loops, ", ")));
  }
  std::set<std::string> named;
  for (const auto& [sym, owner] : pb->owners) named.insert(sym);
  for (auto& path : given) {
    if (const std::string why = config::name_problem(path.name); !why.empty())
      throw ConfigError(
          fmt::format("path '{}': its name {}", config::printable(path.name, 80), why));
    for (const auto& other : pb->paths)
      if (other.name == path.name)
        throw ConfigError(
            fmt::format("two paths are named '{}': give each its own name", path.name));
    pb->paths.push_back(std::move(path));
    const auto& p = pb->paths.back();
    for (const auto& [sym, ranges] : p.profile.hot) named.insert(sym);
    try {
      const auto linked =
          models::layout_from_nm(pb->symbols, pb->owners, 1.0, &p.profile.hot, &p.profile.walks);
      const std::string what = fmt::format("{}, path {}", o.nm, p.name);
      // As `run` refuses the same files: nothing owned ran, nothing to predict.
      if (linked.by_owner.empty())
        throw ConfigError(
            !p.program.empty()
                ? fmt::format("{}: the loop of {} is not in this build: is it the nm of the "
                              "program `{}`?",
                              o.nm, p.profile_file, p.program)
                : fmt::format("{}: no symbol of {} is in this build (or ran on path {}): is "
                              "it a simloop-harness build?",
                              o.nm, o.owners, p.name));
      for (const auto& w :
           {models::absent_warning(linked, what), models::unfetched_warning(linked, what)})
        if (!w.empty()) o.warn(w);
    } catch (const models::LayoutError& e) {
      // A profile that does not fit the build's symbols: the profile is
      // what is named (the symbols are the build's own).
      throw ConfigError(
          fmt::format("{}: {} (path {}, nm {})", p.profile_file, e.what(), p.name, o.nm));
    }
  }
  for (const auto& w : models::nm_warnings(pb->symbols, named))
    o.warn(fmt::format("{}: {}", o.nm, w));
}

// An --order "NAME=FILE": its name and the order the file gives.
std::pair<std::string, std::vector<std::string>> read_order(const std::string& spec,
                                                            const LinkOrderStudyOptions& o,
                                                            const OrderProblem& pb) {
  const auto eq = spec.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
    throw ConfigError(fmt::format("--order '{}': expected NAME=FILE", spec));
  const std::string file = spec.substr(eq + 1);
  std::istringstream in(read_build_file(file));
  std::vector<std::string> order = models::load_order(in);
  try {
    if (const std::string w = models::check_order(order, pb.symbols); !w.empty())
      o.warn(fmt::format("--order {}: {}", file, w));
  } catch (const models::LayoutError& e) {
    throw ConfigError(fmt::format("{}: {}", file, e.what()));
  }
  return {spec.substr(0, eq), std::move(order)};
}

}  // namespace

LinkOrderStudy link_order_study(const LinkOrderStudyOptions& o) {
  LinkOrderStudy s;
  OrderProblem& pb = s.pb;
  for (const auto& spec : o.i1) {
    try {
      pb.geometries.push_back(parse_geometry(spec));
    } catch (const std::invalid_argument& e) {
      throw ConfigError(fmt::format("--I1: {}", e.what()));
    }
  }
  read_build(o, &pb);
  add_paths(o, &pb);
  auto predict = [&](const std::vector<std::string>& order) {
    try {
      return predict_order(pb, order);
    } catch (const models::LayoutError& e) {
      throw ConfigError(fmt::format("{}: {}", o.nm, e.what()));
    }
  };
  s.orders.push_back({"default link", {}, predict({})});
  if (o.map.empty()) return s;

  std::vector<std::pair<std::string, std::vector<std::string>>> starts;
  std::vector<size_t> all;
  for (size_t i = 0; i < pb.paths.size(); ++i) {
    all.push_back(i);
    starts.emplace_back("call order " + pb.paths[i].name, call_order(pb, {i}));
  }
  if (pb.paths.size() > 1) starts.emplace_back("call order all", call_order(pb, all));
  starts.emplace_back("C3", c3_order(pb));
  for (const auto& [name, order] : starts) s.orders.push_back({name, order, predict(order)});
  for (const auto& spec : o.orders) {
    auto [name, order] = read_order(spec, o, pb);
    auto cells = predict(order);
    s.orders.push_back({std::move(name), std::move(order), std::move(cells)});
  }
  if (!o.search) return s;
  // The default link's cells are the limit: no path and geometry may lose.
  s.advice = search_order(pb, s.orders.front().cells, starts, o.search_options);
  s.orders.push_back({"advice", s.advice->order, s.advice->cells});
  for (const auto& sym : s.advice->order)
    if (is_order_filler(sym)) {
      ++s.advice_fillers;
      for (const auto& nm : pb.symbols)
        if (nm.name == sym) {
          s.advice_filler_bytes += nm.size;
          break;
        }
    }
  return s;
}

std::vector<report::Row> predicted_rows(const LinkOrderStudy& s) {
  const auto& pb = s.pb;
  const size_t g = pb.geometries.size();
  std::vector<report::Row> rows;
  for (const auto& r : s.orders)
    for (size_t p = 0; p < pb.paths.size(); ++p)
      for (size_t k = 0; k < g; ++k) {
        report::Row row;
        row.set("order", r.name)
            .set("path", pb.paths[p].name)
            .set("i1", geometry_spec(pb.geometries[k]))
            .set("predicted_i1_misses_per_packet", r.cells[p * g + k]);
        rows.push_back(std::move(row));
      }
  return rows;
}

}  // namespace simloop::measure
