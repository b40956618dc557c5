// The steps of loading an experiment that its files share inside
// sim/config (loader.cc, components.cc, code_layout.cc).
#pragma once

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "sim/config/experiment.h"
#include "sim/config/schema.h"

namespace simloop::config::detail {

// Applies a YAML map to `x`, under `prefix` ("" or "a.b."): every key must be
// a known field or section; keys in `skip` are left for the caller.
void apply_map(Experiment& x, const YAML::Node& map, const std::string& prefix,
               const std::string& file, const std::vector<std::string>& skip = {});

// Finds a named machine, stack or layout (`kind` is "machines", "stacks" or
// "layouts"), or with `kind` "" a file given by path, for the experiment
// `experiment`; refuses with `loc` and `key`.
std::filesystem::path resolve_ref(const std::filesystem::path& experiment, const std::string& kind,
                                  const std::string& ref, const Loc& loc, const std::string& key);

// A machine or stack: a name/path, or a map with an optional `use` base.
// `from_set`: the node is the value of --set machine=... (no position).
void apply_component(Experiment& x, const YAML::Node& node, const std::string& key,
                     const std::filesystem::path& file, bool from_set = false);

// Loads, transforms and links the code layout the I-cache model runs on;
// `where` is where each key was set, for its errors.
void build_code_layout(Experiment& x, const std::map<std::string, Loc>& where);

}  // namespace simloop::config::detail
