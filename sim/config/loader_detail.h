// The steps of loading an experiment that its files share inside
// sim/config (loader.cc, components.cc, code_layout.cc).
#pragma once

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "sim/config/experiment.h"
#include "sim/config/schema.h"

namespace simloop::config::detail {

// What the experiment file's own keys give way to: the keys (or sections)
// --unset removes, and, where --set chose the stack, the keys that stack
// does not take, which are left out with a note rather than refused.
struct LeaveOut {
  std::set<std::string> unset;
  bool other_stacks = false;
  std::string chosen_by;           // "stack=NAME", as the note says it
  std::set<std::string> left;      // the keys left out for the stack
  std::vector<std::string> notes;  // one per key left out
};

// Applies a YAML map to `x`, under `prefix` ("" or "a.b."): every key must be
// a known field or section; keys in `skip` are left for the caller, and
// what `leave` says is left out (the experiment file's keys only).
void apply_map(Experiment& x, const YAML::Node& map, const std::string& prefix,
               const std::string& file, const std::vector<std::string>& skip = {},
               LeaveOut* leave = nullptr);

// Finds a named machine, stack or layout (`kind` is "machines", "stacks" or
// "layouts"), or with `kind` "" a file given by path, for the experiment
// `experiment`; refuses with `loc` and `key`.
std::filesystem::path resolve_ref(const std::filesystem::path& experiment, const std::string& kind,
                                  const std::string& ref, const Loc& loc, const std::string& key);

// A machine or stack: a name/path, or a map with an optional `use` base.
// `from_set`: the node is the value of --set machine=... (no position).
// `leave`: what of the experiment's own map is left out.
void apply_component(Experiment& x, const YAML::Node& node, const std::string& key,
                     const std::filesystem::path& file, bool from_set = false,
                     LeaveOut* leave = nullptr);

// Loads, transforms and links the code layout the I-cache model runs on;
// `where` is where each key was set, for its errors.
void build_code_layout(Experiment& x, const std::map<std::string, Loc>& where);

}  // namespace simloop::config::detail
