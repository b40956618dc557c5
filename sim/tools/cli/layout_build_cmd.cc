// simloop layout on a real build: its nm map, its ld.lld link map and
// callgrind profiles of one or more paths. Prints the build's predicted I1
// misses (`simloop icache`'s model) beside those of the function orders
// measure::link_order_study tries for ld.lld's --symbol-ordering-file, and
// writes them and the orders.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "sim/report/safe_file.h"
#include "sim/report/table.h"
#include "sim/tools/cli/layout_build.h"
#include "sim/tools/measure/harness_run.h"
#include "sim/tools/measure/link_order_study.h"

namespace simloop::cli {

namespace fs = std::filesystem;

namespace {

// A program's loops: the functions that own its code.
std::string loops(const measure::OrderProblem& pb) {
  std::vector<std::string> names;
  for (const auto& [sym, owner] : pb.owners) names.push_back(sym);
  return fmt::format("{}", fmt::join(names, ", "));
}

// The build, its paths, and a line per order and path: misses per geometry.
void print_orders(const measure::LinkOrderStudy& s, const LayoutBuildArgs& a) {
  const auto& pb = s.pb;
  std::cout << fmt::format(
      "build: {}{}\n", a.nm,
      a.map.empty() ? std::string(" (no --map: prediction only)")
                    : fmt::format(" (map {}: {} input sections in .text, "
                                  "{} hot functions can be ordered)",
                                  a.map, pb.map.text.size(), measure::hot_functions(pb).size()));
  for (const auto& p : pb.paths)
    std::cout << (p.program.empty()
                      ? fmt::format("path {}: payload {} B, {}, weight {}\n", p.name,
                                    p.opt.payload, p.opt.path.spec(), p.weight)
                      : fmt::format("path {}: the program `{}` (its loop: {}), weight {}\n",
                                    p.name, p.program, loops(pb), p.weight));
  std::cout << "predicted I1 misses per packet (fetch call-sites):\n";
  std::string head = fmt::format("  {:<24} {:<14}", "order", "path");
  for (const auto& geo : pb.geometries) head += fmt::format(" {:>12}", measure::geometry_spec(geo));
  std::cout << head << fmt::format(" {:>10}\n", "cost");
  const size_t g = pb.geometries.size();
  for (const auto& r : s.orders) {
    for (size_t p = 0; p < pb.paths.size(); ++p) {
      std::string line = fmt::format("  {:<24} {:<14}", r.name, pb.paths[p].name);
      for (size_t k = 0; k < g; ++k) line += fmt::format(" {:>12.2f}", r.cells[p * g + k]);
      std::cout << line
                << (p == 0 ? fmt::format(" {:>10.2f}", measure::order_cost(pb, r.cells))
                           : std::string())
                << "\n";
    }
  }
}

// How the search ended, with `done` if it ran until no move helped.
std::string budget_note(const measure::OrderResult& r, const std::string& done) {
  if (r.stopped_by_time)
    return fmt::format("the time cap (--budget) cut the search short after {} orders",
                       r.evaluations);
  if (r.stopped_by_budget)
    return fmt::format("the budget of {} orders (--max-evals) ran out", r.max_evaluations);
  return fmt::format("{} ({} orders evaluated)", done, r.evaluations);
}

// The first cell `cells` puts above `limit`, as "PATH at GEOMETRY (A > B)";
// "" if none.
std::string first_above(const measure::OrderProblem& pb, const std::vector<double>& cells,
                        const std::vector<double>& limit) {
  const size_t g = pb.geometries.size();
  for (size_t i = 0; i < cells.size() && i < limit.size(); ++i)
    if (cells[i] > limit[i] + 1e-9)
      return fmt::format("{} at {} ({:.2f} > {:.2f})", pb.paths[i / g].name,
                         measure::geometry_spec(pb.geometries[i % g]), cells[i], limit[i]);
  return "";
}

// Why the advice orders no function: said plainly, from what the search
// started from and how it ended.
std::string why_empty(const measure::LinkOrderStudy& s) {
  const auto& pb = s.pb;
  const auto& limit = s.orders.front().cells;
  const measure::OrderResult& advice = *s.advice;
  const double base = measure::order_cost(pb, limit);
  if (base <= 0) return "the default link has no predicted misses on any path and geometry";
  std::vector<std::string> why;
  for (const auto& st : advice.starts) {
    const std::string above = first_above(pb, st.cells, limit);
    if (!above.empty())
      why.push_back(fmt::format("{} puts {} above the default link{}", st.name, above,
                                st.repair_steps > 0 ? " even after its repair" : ""));
    else
      why.push_back(fmt::format("{}{} costs {:.2f}, the default link {:.2f}", st.name,
                                st.repair_steps > 0 ? " (repaired)" : "",
                                measure::order_cost(pb, st.cells), base));
  }
  why.push_back(budget_note(advice,
                            "no move of one function or filler from the default link "
                            "lowered the cost without raising a cell"));
  return fmt::format("{}", fmt::join(why, "; "));
}

void print_advice(const measure::LinkOrderStudy& s, uint64_t seed) {
  const measure::OrderResult& advice = *s.advice;
  const size_t fillers = s.advice_fillers;
  const std::string budget = fmt::format("{} orders evaluated of a budget of {} (seed {}, {})",
                                         advice.evaluations, advice.max_evaluations, seed,
                                         advice.stopped_by_time ? "cut short by the time cap: "
                                                                  "may differ on another machine"
                                                                : "deterministic");
  if (advice.order.empty()) {
    std::cout << fmt::format("advice: none, keep the default link; {}: {}\n", budget, why_empty(s));
  } else {
    std::cout << fmt::format(
        "advice: {} functions ordered{}, from {}; {}; no cell above the default link's\n",
        advice.order.size() - fillers,
        fillers == 0 ? std::string()
                     : fmt::format(" with {} filler{} between them ({} B)", fillers,
                                   fillers == 1 ? "" : "s", s.advice_filler_bytes),
        advice.start, budget);
    if (advice.stopped_by_budget)
      std::cout << "  the budget ran out while moves still helped: more --max-evals may find "
                   "fewer misses\n";
  }
  // The starts, as given and as repaired, and the cost of each order.
  const auto& pb = s.pb;
  const auto& limit = s.orders.front().cells;
  for (const auto& st : advice.starts) {
    const std::string above = first_above(pb, st.given_cells, limit);
    std::cout << fmt::format(
        "  start {}: cost {:.2f}{}\n", st.name, measure::order_cost(pb, st.given_cells),
        above.empty() ? std::string(", within the default link's cells")
        : st.within
            ? fmt::format(", {} above the default link; repaired in {} step{} to {:.2f}", above,
                          st.repair_steps, st.repair_steps == 1 ? "" : "s",
                          measure::order_cost(pb, st.cells))
            : fmt::format(", {} above the default link; not repaired within its share of the "
                          "budget",
                          above));
  }
  std::string costs;
  for (const auto& o : s.orders)
    costs += fmt::format("{}{} {:.2f}", costs.empty() ? "" : ", ", o.name,
                         measure::order_cost(pb, o.cells));
  // Each path's own call order on that path only: the per-path baseline.
  const size_t g = pb.geometries.size();
  double own = 0;
  size_t found = 0;
  for (size_t p = 0; p < pb.paths.size(); ++p)
    for (const auto& o : s.orders)
      if (o.name == "call order " + pb.paths[p].name) {
        ++found;
        for (size_t k = 0; k < g; ++k) own += pb.paths[p].weight * o.cells[p * g + k];
      }
  if (found == pb.paths.size())
    costs += fmt::format(", call order of each path on its own path {:.2f}", own);
  std::cout << "cost (misses summed over geometries, weighted over paths): " << costs << "\n";
}

// predicted.csv, and an order file for each call order and the advice.
void write_orders(const LayoutBuildArgs& a, const measure::LinkOrderStudy& s) {
  const std::string& out_dir = a.out_dir;
  const fs::path dir = out_dir;
  report::write_rows((dir / "predicted.csv").string(), measure::predicted_rows(s));
  for (const auto& r : s.orders) {
    if (!r.name.starts_with("advice") && !r.name.starts_with("call order") && r.name != "C3")
      continue;
    std::string file = r.name == "C3" ? "c3" : r.name;
    for (char& c : file)
      if (c == ' ') c = '-';
    std::string text;
    for (const auto& sym : r.order) text += sym + "\n";
    report::write_file_atomic(dir / (file + ".order"), text);
  }
  if (s.advice) {
    // How the advice was found, and every order's cost beside it.
    const measure::OrderResult& r = *s.advice;
    nlohmann::json costs = nlohmann::json::object();
    for (const auto& o : s.orders) costs[o.name] = measure::order_cost(s.pb, o.cells);
    nlohmann::json starts = nlohmann::json::array();
    for (const auto& st : r.starts)
      starts.push_back({{"name", st.name},
                        {"cost", measure::order_cost(s.pb, st.given_cells)},
                        {"within_default", st.within},
                        {"repair_steps", st.repair_steps},
                        {"cost_repaired", measure::order_cost(s.pb, st.cells)}});
    const nlohmann::json j = {{"order", r.order},
                              {"start", r.start},
                              {"seed", a.seed},
                              {"evaluations", r.evaluations},
                              {"max_evaluations", r.max_evaluations},
                              {"time_cap_s", a.budget_s},
                              {"stopped_by_time", r.stopped_by_time},
                              {"stopped_by_budget", r.stopped_by_budget},
                              {"starts", starts},
                              {"costs", costs}};
    report::write_file_atomic(dir / "advice.json", j.dump(2) + "\n");
  }
  std::cout << fmt::format(
      "wrote {}/predicted.csv{} and an order file per order (for ld.lld "
      "--symbol-ordering-file)\n",
      out_dir, s.advice ? ", advice.json" : "");
}

}  // namespace

int layout_build_cmd(const LayoutBuildArgs& a) {
  if (a.nm.empty()) throw UserError("a real build needs --nm (its nm map) as well as --path");
  if (a.paths.empty() && a.whole_paths.empty())
    throw UserError("--nm with --map needs at least one --path");
  if (a.map.empty() && !a.orders.empty())
    throw UserError("--order needs --map: the link map says how functions move");
  measure::LinkOrderStudyOptions o;
  o.nm = a.nm;
  o.map = a.map;
  o.owners = owners_file(a.owners);
  o.owners_given = !a.owners.empty();
  o.i1 = a.i1;
  o.whole_paths = a.whole_paths;
  o.paths = a.paths;
  o.orders = a.orders;
  o.search = !a.no_search;
  o.search_options = {.max_evaluations = a.max_evals, .budget_s = a.budget_s, .seed = a.seed};
  o.warn = [](const std::string& w) { spdlog::warn("{}", w); };
  const measure::LinkOrderStudy s = measure::link_order_study(o);
  print_orders(s, a);
  if (s.advice) print_advice(s, a.seed);
  if (!a.out_dir.empty()) write_orders(a, s);
  return 0;
}

}  // namespace simloop::cli
