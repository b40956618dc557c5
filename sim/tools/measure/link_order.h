// Function orders for a real build: the I-cache misses a build would have
// if ld.lld placed its functions in another order (--symbol-ordering-file),
// predicted with the model `simloop icache` uses on the build itself, and a
// search for an order with fewer misses on several paths at once.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "models/icache.h"
#include "sim/layout/layout.h"
#include "sim/layout/link_map.h"
#include "sim/tools/advise/layout_advisor.h"
#include "sim/tools/measure/harness_run.h"

namespace simloop::measure {

// One path through the stack, with the profile of the build taken on it.
struct OrderPath {
  std::string name;
  double weight = 1;
  NativeOptions opt;
  CodeProfile profile;
  std::string profile_file;  // where the profile was read, for messages
  models::PathTrace trace;   // harness_trace(opt), or program_trace()
  // A program's profile (`measure profile --program`): its command line;
  // opt means nothing then, and its loop is the only owner.
  std::string program;
};

struct OrderProblem {
  std::vector<models::NmSymbol> symbols;  // the build's (parse_nm of nm_output)
  models::LinkMap map;
  std::multimap<std::string, std::string> owners;
  std::vector<OrderPath> paths;
  std::vector<models::CacheGeometry> geometries;
  models::FetchMode fetch = models::FetchMode::call_sites;
};

// Predicted I1 misses per packet, by path then geometry (index p * G + g),
// of the build relinked with `order` (empty: the build as it is, the same
// figures as `simloop icache` on its nm map).
std::vector<double> predict_order(const OrderProblem& pb, const std::vector<std::string>& order);

// Functions worth ordering: text symbols that run on some path (its
// profile), in a section that is not a runtime library's, one name per
// section, in address order.
std::vector<std::string> hot_functions(const OrderProblem& pb);

// Fillers the build offers (sections of never-run bytes named
// simloop_order_pad_*, as -DSIMLOOP_HARNESS_LINK_ORDER=ON harness builds
// link them), by size: an order may place them between functions to move
// what follows without moving anything else.
std::map<uint64_t, std::vector<std::string>> order_fillers(const OrderProblem& pb);
inline bool is_order_filler(const std::string& symbol) {
  return symbol.starts_with("simloop_order_pad_");
}

// Hot functions grouped in the order they are first called (depth first
// through the profile's walks from the sender's loop), for the paths given
// by index, the first path's calls first; hot functions no walk reaches
// follow in address order.
std::vector<std::string> call_order(const OrderProblem& pb, const std::vector<size_t>& paths);

// Pettis-Hansen function clustering as hfsort's C3 does it, over the call
// graph the profiles' walks give (an edge's weight: the caller's calls per
// packet times its calls to the callee, times the path's weight): hot
// functions by how often they run, most first, each appended to the
// cluster of its heaviest caller while the merged cluster stays within
// `cluster_bytes` (a page); the clusters then by density (instructions run
// per packet over bytes), densest first. Hot functions only, as call_order.
std::vector<std::string> c3_order(const OrderProblem& pb, uint64_t cluster_bytes = 4096);

struct OrderSearchOptions {
  // The budget, in orders evaluated (predict_order calls): the same inputs
  // give the same order however busy the machine is.
  int max_evaluations = 2000;
  // Seconds: only a cap on the budget; the result says when it cut in.
  double budget_s = 600;
  uint64_t seed = 1;
};

// A starting order of the search, as given and as repaired.
struct OrderStart {
  std::string name;
  std::vector<std::string> given;
  std::vector<double> given_cells;
  std::vector<std::string> order;  // repaired (the given order if it kept within the limit)
  std::vector<double> cells;
  bool within = false;   // `order` keeps every cell within the limit
  int repair_steps = 0;  // moves, drops and fillers the repair made
};

struct OrderResult {
  std::vector<std::string> order;
  std::vector<double> cells;  // predict_order(order)
  std::string start;          // which starting order it grew from
  int evaluations = 0;
  int max_evaluations = 0;         // the budget it had
  bool stopped_by_time = false;    // the time cap cut the budget short
  bool stopped_by_budget = false;  // the budget ran out before no move helped
  std::vector<OrderStart> starts;
};

// The weighted sum over paths of the misses summed over geometries.
double order_cost(const OrderProblem& pb, const std::vector<double>& cells);

// Local search for an order of the hot functions with the least cost such
// that no cell gets more misses than with `limit` (the default link's
// cells). Every one of `starts` (and the default link) is evaluated; one
// that puts a cell above the limit is repaired first (functions of the
// order dropped back to their place in the link or moved to its end, and
// fillers placed, whichever lowers the excess most, until none is left).
// From the best start within the limit: moves of one function to another
// place and drops of one function from the order, and the same for the
// build's fillers (one unused filler of each size may go anywhere), first
// improvement, in an order shuffled by the seed, until no move helps or
// the budget is spent. The result is never worse than a start within the
// limit. Deterministic for a budget unless the time cap cuts in.
OrderResult search_order(
    const OrderProblem& pb, const std::vector<double>& limit,
    const std::vector<std::pair<std::string, std::vector<std::string>>>& starts,
    const OrderSearchOptions& opt = {});

}  // namespace simloop::measure
