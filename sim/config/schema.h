// The schema of experiments, inside sim/config: every key (its path, type,
// doc, bounds, and how it is set and read back) and every section. The one
// list of keys: loading, --set, sweeps, the reference page, calibration's
// cost keys and written profiles all go through it.
#pragma once

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <functional>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "sim/config/experiment.h"
#include "sim/support/key_spec.h"
#include "sim/support/yaml_input.h"

namespace simloop::config::detail {

using Loc = YamlLoc;
constexpr auto loc_of = yaml_loc;
constexpr auto scalar_text = yaml_shape;

[[noreturn]] void fail(const Loc& loc, const std::string& key, const std::string& msg);

enum class Kind { integer, number, boolean, text, choice };
std::string_view kind_name(Kind k);

struct Field {
  std::string path;
  Kind kind;
  std::string doc;
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
  std::vector<std::string> choices;
  std::function<void(Experiment&, const YAML::Node&, const Loc&)> set;
  std::function<nlohmann::json(const Experiment&)> get;
  bool cost = false;  // a per-event or per-byte price of the timing model (calibrated)
  // The stacks (net::FnTable names) the key applies to; empty: every stack.
  std::vector<std::string> stacks = {};
};

// A cost key that may be left undetermined: `~` (YAML's null) prices it 0
// and marks it in Experiment::undetermined, a number clears the mark, and
// it reads back as null while marked.
Field undeterminable(Field f);

// Whether `f` applies to the stack `x` runs.
bool applies(const Field& f, const Experiment& x);
// Fails (ConfigError at `loc`) unless `f` applies to the stack `x` runs.
void check_applies(const Field& f, const Experiment& x, const Loc& loc);

struct Section {
  std::string path;
  std::string doc;
};

// " in [lo, hi]", " >= lo" or "" for unbounded.
std::string range_text(double lo, double hi);

class Schema {
 public:
  Schema();
  const Field* field(const std::string& path) const {
    auto it = fields_.find(path);
    return it == fields_.end() ? nullptr : &it->second;
  }
  bool is_section(const std::string& path) const {
    return std::any_of(sections_.begin(), sections_.end(),
                       [&](const Section& s) { return s.path == path; });
  }
  // The keys allowed directly under `prefix` ("" or "a.b.").
  std::vector<std::string> children(const std::string& prefix) const {
    std::vector<std::string> out;
    auto add = [&](const std::string& path) {
      if (path.size() <= prefix.size() || path.compare(0, prefix.size(), prefix) != 0) return;
      std::string rest = path.substr(prefix.size());
      rest = rest.substr(0, rest.find('.'));
      if (std::find(out.begin(), out.end(), rest) == out.end()) out.push_back(rest);
    };
    for (const auto& f : order_) add(f);
    for (const auto& s : sections_) add(s.path);
    return out;
  }
  const std::vector<std::string>& order() const { return order_; }
  const std::vector<Section>& sections() const { return sections_; }

 private:
  void add(Field f) {
    if (f.cost) f = undeterminable(std::move(f));
    order_.push_back(f.path);
    fields_.emplace(f.path, std::move(f));
  }
  // The keys of a table declared beside its struct, under `prefix`
  // (schema.cc).
  template <class C, size_t N, class Acc>
  void add_keys(std::string_view prefix, const std::array<support::KeySpec<C>, N>& keys, Acc acc);
  // The keys that are the experiment's own, by section (schema.cc).
  void add_top_keys();
  void add_cache_keys();
  void add_stack_keys();
  void section(std::string path, std::string doc) {
    sections_.push_back({std::move(path), std::move(doc)});
  }

  std::map<std::string, Field> fields_;
  std::vector<std::string> order_;
  std::vector<Section> sections_;
};

// The schema, built once.
const Schema& schema();

}  // namespace simloop::config::detail
