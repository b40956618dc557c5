// What `simloop layout` finds on a real build: from its nm map, ld.lld's
// link map and callgrind profiles of one or more paths, the I1 misses the
// build has as linked (with `simloop icache`'s model), and those of other
// function orders for ld.lld's --symbol-ordering-file: the hot functions in
// call order (from each path and from all) and in C3's clusters, orders
// given as files, and an order searched for fewer misses on every path.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sim/report/table.h"
#include "sim/stack/workload/path.h"
#include "sim/tools/measure/link_order.h"

namespace simloop::measure {

// A path given whole rather than as text (an experiment's own), with the
// file of the build's profile on it.
struct ProfiledPath {
  std::string name, profile;
  int payload = 0;
  workload::Path path;
};

struct LinkOrderStudyOptions {
  std::string nm;      // the build's symbol map, or the build itself
  std::string map;     // its ld.lld link map; empty: the build as linked, no other order
  std::string owners;  // the "symbol owner" file
  // The file was given (not the harness's default): a program's paths then
  // take it instead of their loops as the owners.
  bool owners_given = false;
  std::vector<std::string> i1;  // geometries as --I1 gives them, "SIZE,ASSOC,LINE"
  // The paths: those given whole first, then those given as --path text,
  // "name=N,profile=FILE,payload=B,path=SPEC[,weight=W]".
  std::vector<ProfiledPath> whole_paths;
  std::vector<std::string> paths;
  std::vector<std::string> orders;  // --order "NAME=FILE": orders to predict as given
  bool search = true;               // with a map: search an order
  OrderSearchOptions search_options;
  // Warnings (code never fetched, symbols that overlap, names an order
  // file has that the build lacks), as they come: what follows may fail.
  std::function<void(const std::string&)> warn = [](const std::string&) {};
};

// An order and its predicted misses (OrderProblem's cells: by path, then
// geometry).
struct NamedOrder {
  std::string name;
  std::vector<std::string> order;  // empty: the build's own link
  std::vector<double> cells;
};

struct LinkOrderStudy {
  OrderProblem pb;
  // The default link first, then (with a map) the call orders, C3, the
  // orders given and the advice.
  std::vector<NamedOrder> orders;
  std::optional<OrderResult> advice;
  // The fillers the advice places between functions, and their bytes.
  size_t advice_fillers = 0;
  uint64_t advice_filler_bytes = 0;
};

// Throws config::ConfigError on bad input (an option's text, a file that
// cannot be read or is wrong, two paths of one name, a build none of whose
// owned symbols ran), naming the option or the file.
LinkOrderStudy link_order_study(const LinkOrderStudyOptions& o);

// The predictions as rows: order, path, i1, predicted_i1_misses_per_packet.
std::vector<report::Row> predicted_rows(const LinkOrderStudy& s);

}  // namespace simloop::measure
