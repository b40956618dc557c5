// simloop layout on a real build: its nm map, its ld.lld link map and
// callgrind profiles of one or more paths. Predicts the build's I1 misses
// with `simloop icache`'s model, and searches a function order for ld.lld's
// --symbol-ordering-file with fewer misses on every path, beside the
// baselines (hot functions in call order, from each path and from all).
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <set>
#include <sstream>

#include "sim/layout/build.h"
#include "sim/layout/link_map.h"
#include "sim/report/safe_file.h"
#include "sim/report/table.h"
#include "sim/support/text.h"
#include "sim/support/yaml_input.h"
#include "sim/tools/cli/layout_build.h"
#include "sim/tools/measure/icache_check.h"
#include "sim/tools/measure/link_order.h"

namespace simloop::cli {

namespace fs = std::filesystem;

namespace {

measure::OrderPath with_profile(measure::OrderPath p, const std::string& profile,
                                const std::string& what);

// "name=N,profile=FILE,payload=B,path=SPEC[,weight=W]".
measure::OrderPath parse_path(const std::string& spec) {
  measure::OrderPath p;
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
      return UserError(fmt::format("--path '{}': {}: {}", spec, key, why));
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
  if (p.name.empty() || profile.empty() || !has_payload)
    throw UserError(fmt::format("--path '{}': name, profile and payload are required", spec));
  return with_profile(std::move(p), profile, fmt::format("--path '{}'", spec));
}

// The path's profile read, and its trace recorded; `what` names the path in errors.
measure::OrderPath with_profile(measure::OrderPath p, const std::string& profile,
                                const std::string& what) {
  if (auto why = p.opt.path.payload_problem(p.opt.payload, p.opt.stack); !why.empty())
    throw UserError(fmt::format("{}: payload {}: {}", what, p.opt.payload, why));
  std::istringstream in(read_build_file(profile));
  try {
    p.profile = measure::load_profile(in, profile);
    p.profile_file = profile;
    p.trace = measure::harness_trace(p.opt);
  } catch (const std::runtime_error& e) {
    throw UserError(e.what());
  }
  return p;
}

void write_order(const fs::path& file, const std::vector<std::string>& order) {
  std::string text;
  for (const auto& s : order) text += s + "\n";
  report::write_file_atomic(file, text);
}

}  // namespace

int layout_build_cmd(const LayoutBuildArgs& a) {
  if (a.nm.empty()) throw UserError("a real build needs --nm (its nm map) as well as --path");
  if (a.paths.empty() && a.whole_paths.empty())
    throw UserError("--nm with --map needs at least one --path");
  if (a.map.empty() && !a.orders.empty())
    throw UserError("--order needs --map: the link map says how functions move");
  measure::OrderProblem pb;
  const std::string owners_file =
      a.owners.empty() ? tree_file("configs/harness/owners.txt").string() : a.owners;
  pb.owners = read_owners(owners_file);
  for (const auto& s : a.i1) {
    try {
      pb.geometries.push_back(measure::parse_geometry(s));
    } catch (const std::invalid_argument& e) {
      throw UserError(fmt::format("--I1: {}", e.what()));
    }
  }
  try {
    std::istringstream nm(read_nm_map(a.nm));
    pb.symbols = models::parse_nm(nm, a.nm);
  } catch (const models::LayoutError& e) {
    throw UserError(e.what());  // names the file and line
  }
  if (!a.map.empty()) {
    try {
      std::istringstream map(read_build_file(a.map));
      pb.map = models::parse_lld_map(map, a.map);
    } catch (const models::LayoutError& e) {
      throw UserError(e.what());  // names the map and its line
    }
    try {
      models::place_sections(pb.map, pb.symbols, {});  // the map is a plain link
    } catch (const models::LayoutError& e) {
      throw UserError(fmt::format("{}: {}", a.map, e.what()));
    }
  }
  std::set<std::string> named;  // the functions owners and profiles rely on
  for (const auto& [sym, owner] : pb.owners) named.insert(sym);
  std::vector<measure::OrderPath> given;
  for (const auto& w : a.whole_paths) {
    measure::OrderPath p;
    p.opt.warmup = 1000;  // as parse_path
    p.name = w.name;
    p.opt.payload = w.payload;
    p.opt.path = w.path;
    given.push_back(with_profile(std::move(p), w.profile, fmt::format("path {}", w.name)));
  }
  for (const auto& spec : a.paths) given.push_back(parse_path(spec));
  for (auto& path : given) {
    if (const std::string why = config::name_problem(path.name); !why.empty())
      throw UserError(fmt::format("path '{}': its name {}", config::printable(path.name, 80), why));
    for (const auto& other : pb.paths)
      if (other.name == path.name)
        throw UserError(fmt::format("two paths are named '{}': give each its own name", path.name));
    pb.paths.push_back(std::move(path));
    const auto& p = pb.paths.back();
    for (const auto& [sym, ranges] : p.profile.hot) named.insert(sym);
    try {
      const auto linked =
          models::layout_from_nm(pb.symbols, pb.owners, 1.0, &p.profile.hot, &p.profile.walks);
      const std::string what = fmt::format("{}, path {}", a.nm, p.name);
      // As `run` refuses the same files: nothing owned ran, nothing to predict.
      if (linked.by_owner.empty())
        throw UserError(
            fmt::format("{}: no symbol of {} is in this build (or ran on path {}): is "
                        "it a simloop-harness build?",
                        a.nm, owners_file, p.name));
      for (const auto& w :
           {models::absent_warning(linked, what), models::unfetched_warning(linked, what)})
        if (!w.empty()) spdlog::warn(w);
    } catch (const models::LayoutError& e) {
      // A profile that does not fit the build's symbols: the profile is
      // what is named (the symbols are the build's own).
      throw UserError(
          fmt::format("{}: {} (path {}, nm {})", p.profile_file, e.what(), p.name, a.nm));
    }
  }

  for (const auto& w : models::nm_warnings(pb.symbols, named)) spdlog::warn("{}: {}", a.nm, w);
  struct Named {
    std::string name;
    std::vector<std::string> order;
    std::vector<double> cells;
  };
  std::vector<Named> rows;
  auto predict = [&](const std::vector<std::string>& order) {
    try {
      return measure::predict_order(pb, order);
    } catch (const models::LayoutError& e) {
      throw UserError(fmt::format("{}: {}", a.nm, e.what()));
    }
  };
  rows.push_back({"default link", {}, predict({})});
  const std::vector<double> limit = rows.front().cells;
  std::optional<measure::OrderResult> advice;
  if (!a.map.empty()) {
    std::vector<std::pair<std::string, std::vector<std::string>>> starts;
    std::vector<size_t> all;
    for (size_t i = 0; i < pb.paths.size(); ++i) {
      all.push_back(i);
      starts.emplace_back("call order " + pb.paths[i].name, measure::call_order(pb, {i}));
    }
    if (pb.paths.size() > 1) starts.emplace_back("call order all", measure::call_order(pb, all));
    for (const auto& [name, order] : starts) rows.push_back({name, order, predict(order)});
    for (const auto& spec : a.orders) {
      const auto eq = spec.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
        throw UserError(fmt::format("--order '{}': expected NAME=FILE", spec));
      std::istringstream in(read_build_file(spec.substr(eq + 1)));
      const std::vector<std::string> order = models::load_order(in);
      try {
        if (const std::string w = models::check_order(order, pb.symbols); !w.empty())
          spdlog::warn("--order {}: {}", spec.substr(eq + 1), w);
      } catch (const models::LayoutError& e) {
        throw UserError(fmt::format("{}: {}", spec.substr(eq + 1), e.what()));
      }
      rows.push_back({spec.substr(0, eq), order, predict(order)});
    }
    if (!a.no_search) {
      measure::OrderSearchOptions so;
      so.budget_s = a.budget_s;
      so.max_evaluations = a.max_evals;
      so.seed = a.seed;
      advice = measure::search_order(pb, limit, starts, so);
      rows.push_back({"advice", advice->order, advice->cells});
    }
  }

  // The table: one line per order and path, misses per geometry.
  const size_t g = pb.geometries.size();
  std::cout << fmt::format(
      "build: {}{}\n", a.nm,
      a.map.empty() ? std::string(" (no --map: prediction only)")
                    : fmt::format(" (map {}: {} input sections in .text, "
                                  "{} hot functions can be ordered)",
                                  a.map, pb.map.text.size(), measure::hot_functions(pb).size()));
  for (const auto& p : pb.paths)
    std::cout << fmt::format("path {}: payload {} B, {}, weight {}\n", p.name, p.opt.payload,
                             p.opt.path.spec(), p.weight);
  std::cout << "predicted I1 misses per packet (fetch call-sites):\n";
  std::string head = fmt::format("  {:<24} {:<14}", "order", "path");
  for (const auto& geo : pb.geometries) head += fmt::format(" {:>12}", measure::geometry_spec(geo));
  std::cout << head << fmt::format(" {:>10}\n", "cost");
  std::vector<report::Row> csv;
  for (const auto& r : rows) {
    for (size_t p = 0; p < pb.paths.size(); ++p) {
      std::string line = fmt::format("  {:<24} {:<14}", r.name, pb.paths[p].name);
      for (size_t k = 0; k < g; ++k) {
        line += fmt::format(" {:>12.2f}", r.cells[p * g + k]);
        report::Row row;
        row.set("order", r.name)
            .set("path", pb.paths[p].name)
            .set("i1", measure::geometry_spec(pb.geometries[k]))
            .set("predicted_i1_misses_per_packet", r.cells[p * g + k]);
        csv.push_back(std::move(row));
      }
      std::cout << line
                << (p == 0 ? fmt::format(" {:>10.2f}", measure::order_cost(pb, r.cells))
                           : std::string())
                << "\n";
    }
  }
  if (advice) {
    size_t fillers = 0;
    uint64_t filler_bytes = 0;
    for (const auto& s : advice->order)
      if (measure::is_order_filler(s)) {
        ++fillers;
        for (const auto& sym : pb.symbols)
          if (sym.name == s) {
            filler_bytes += sym.size;
            break;
          }
      }
    std::cout << fmt::format(
        "advice: {} functions ordered{}, from {}; {} orders evaluated (seed {}, {}); no cell above "
        "the default link's\n",
        advice->order.size() - fillers,
        fillers == 0 ? std::string()
                     : fmt::format(" with {} filler{} between them ({} B)", fillers,
                                   fillers == 1 ? "" : "s", filler_bytes),
        advice->start, advice->evaluations, a.seed,
        advice->stopped_by_time ? "stopped by the time budget: may differ on a faster machine"
                                : "deterministic");
  }
  if (!a.out_dir.empty()) {
    const fs::path dir = a.out_dir;
    report::write_rows((dir / "predicted.csv").string(), csv);
    for (const auto& r : rows) {
      if (!r.name.starts_with("advice") && !r.name.starts_with("call order")) continue;
      std::string file = r.name;
      for (char& c : file)
        if (c == ' ') c = '-';
      write_order(dir / (file + ".order"), r.order);
    }
    std::cout << fmt::format(
        "wrote {}/predicted.csv and an order file per order (for ld.lld "
        "--symbol-ordering-file)\n",
        a.out_dir);
  }
  return 0;
}

}  // namespace simloop::cli
