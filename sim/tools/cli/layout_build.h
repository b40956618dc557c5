// `simloop layout` on a real build (--nm with --map and --path): see
// layout_build_cmd.cc.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/tools/cli/commands.h"
#include "sim/tools/measure/link_order_study.h"

namespace simloop::cli {

struct LayoutBuildArgs {
  std::string nm, map, owners, out_dir;
  std::vector<std::string> paths;  // name=,profile=,payload=,path=[,weight=]
  // Paths given whole rather than as --path text (an experiment's own),
  // before the --path ones.
  std::vector<measure::ProfiledPath> whole_paths;
  std::vector<std::string> orders;  // NAME=FILE: orders to predict as given
  std::vector<std::string> i1 = {"16384,1,64", "16384,2,64", "32768,2,64"};
  double budget_s = 600;  // a cap on max_evals, the budget
  int max_evals = 2000;
  uint64_t seed = 1;
  bool no_search = false;
};

int layout_build_cmd(const LayoutBuildArgs& a);

}  // namespace simloop::cli
