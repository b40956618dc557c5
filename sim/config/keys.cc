// Questions about keys, answered from the schema: a configuration as JSON,
// a key's type and value, the cost keys calibration fits.
#include <fmt/format.h>

#include "sim/config/key_values.h"
#include "sim/config/schema.h"
#include "sim/stack/stack_set.h"
#include "sim/support/text.h"

namespace simloop::config {

using nlohmann::json;
using namespace detail;

json to_json(const Experiment& x) {
  json j = json::object();
  for (const auto& path : schema().order()) {
    if (!applies(*schema().field(path), x)) continue;
    json* at = &j;
    std::string rest = path;
    for (auto dot = rest.find('.'); dot != std::string::npos; dot = rest.find('.')) {
      at = &(*at)[rest.substr(0, dot)];
      rest = rest.substr(dot + 1);
    }
    (*at)[rest] = schema().field(path)->get(x);
  }
  return j;
}

bool is_profile_choice(const std::string& path) {
  return path == "machine" || path == "stack";
}

const std::string& profile_ref(const Experiment& x, const std::string& key) {
  return key == "machine" ? x.machine_ref : x.stack_ref;
}

std::optional<KeyType> key_type(const std::string& path) {
  if (is_profile_choice(path)) return KeyType::text;
  const Field* f = schema().field(path);
  if (f == nullptr) return std::nullopt;
  switch (f->kind) {
    case Kind::integer:
      return KeyType::integer;
    case Kind::number:
      return KeyType::number;
    case Kind::boolean:
      return KeyType::boolean;
    case Kind::text:
      return KeyType::text;
    case Kind::choice:
      return KeyType::choice;
  }
  return std::nullopt;
}

std::vector<std::string> key_values(const std::string& path) {
  const Field* f = schema().field(path);
  if (f == nullptr) return {};
  if (f->kind == Kind::boolean) return {"true", "false"};
  if (f->kind == Kind::choice) return f->choices;
  return {};
}

std::string closest_key(const std::string& path) {
  std::vector<std::string> keys = schema().order();
  keys.insert(keys.end(), {"machine", "stack"});
  return support::closest(path, keys, 3);
}

void check_value(const std::string& path, const std::string& value, const std::string& file,
                 int line, int col) {
  const Loc loc{file, line, col};
  if (is_profile_choice(path)) {
    // A name or a path; which file it finds depends on the experiment, so
    // it is found when the experiment is loaded with it.
    if (value.empty() || value.find_first_of("\n\r") != std::string::npos)
      fail(loc, path,
           fmt::format("expected the name or path of a {}, got '{}'", path, printable(value)));
    return;
  }
  const Field* f = schema().field(path);
  if (f == nullptr) fail(loc, path, "no such key");
  YAML::Node node;
  try {
    node = YAML::Load(value);
  } catch (const YAML::Exception& e) {
    fail(loc, path, "cannot parse the value: " + printable(e.msg, 200));
  }
  Experiment scratch;
  // A key of one stack is checked against that stack.
  if (!f->stacks.empty()) scratch.stack.fns = stacks::find_fn_table(f->stacks.front());
  f->set(scratch, node, loc);
}

std::vector<std::string> cost_keys(std::string_view stack) {
  if (stack.empty()) stack = stacks::fn_tables().front()->stack();
  std::vector<std::string> out;
  for (const auto& path : schema().order()) {
    const Field* f = schema().field(path);
    if (f->cost && (f->stacks.empty() ||
                    std::find(f->stacks.begin(), f->stacks.end(), stack) != f->stacks.end()))
      out.push_back(path);
  }
  return out;
}

bool key_applies(const Experiment& x, const std::string& path) {
  const Field* f = schema().field(path);
  return f != nullptr && applies(*f, x);
}

std::vector<std::string> keys_under(const std::string& prefix) {
  std::vector<std::string> out;
  for (const auto& path : schema().order())
    if (path.compare(0, prefix.size(), prefix) == 0) out.push_back(path);
  return out;
}

nlohmann::json get_value(const Experiment& x, const std::string& path) {
  const Field* f = schema().field(path);
  if (f == nullptr) throw ConfigError(fmt::format("{}: no such key", path));
  return f->get(x);
}

void set_number(Experiment& x, const std::string& path, double value) {
  const Field* f = schema().field(path);
  if (f == nullptr) throw ConfigError(fmt::format("{}: no such key", path));
  if (f->kind != Kind::number && f->kind != Kind::integer)
    throw ConfigError(fmt::format("{}: not a number key", path));
  YAML::Node n;
  n = value;
  f->set(x, n, Loc{});
}

void set_undetermined(Experiment& x, const std::string& path) {
  const Field* f = schema().field(path);
  if (f == nullptr) throw ConfigError(fmt::format("{}: no such key", path));
  if (!f->cost) throw ConfigError(fmt::format("{}: not a cost, so never undetermined", path));
  f->set(x, YAML::Node(YAML::NodeType::Null), Loc{});
}

StageMeaning stage_meaning(const net::FnTable& fns, bool fitted_fixed_costs, bool fitted_receive,
                           std::string_view stage) {
  if (fitted_fixed_costs) {
    const auto send = fns.with_role(net::FnRole::syscall);
    const auto receive = fns.first_in("receive");
    if (stage == "socket" && send)
      return {"send fixed", fmt::format("the fitted fixed cost of sending, all on {}; not the "
                                        "socket layer's own",
                                        fns.name(*send))};
    if (stage == "receive" && fitted_receive && receive)
      return {"", fmt::format("with the fitted fixed cost of receiving, all on {}",
                              fns.name(*receive))};
  }
  if (const net::StageName* n = fns.stage_name(stage))
    return {std::string(n->label.empty() ? n->word : n->label), std::string(n->note)};
  return {};
}

const net::FnTable* fn_table_of(const nlohmann::json& config) {
  // A configuration of an older version names no stack: the first of the
  // list, the only one it had.
  const json::json_pointer kind("/stack/kind");
  try {
    if (!config.is_object() || !config.contains(kind)) return stacks::fn_tables().front();
    if (!config.at(kind).is_string()) return nullptr;
    return stacks::find_fn_table(config.at(kind).get<std::string>());
  } catch (const json::exception&) {
    return nullptr;  // not a configuration this version wrote
  }
}

namespace {

// Whether the receive stage's first function is priced (a fitted profile
// then holds the fixed cost of receiving there).
bool prices_receive(const net::FnTable& fns, const Experiment& x) {
  const auto receive = fns.first_in("receive");
  return receive && x.stack.fn_cycles[net::index(*receive)] > 0;
}

}  // namespace

StageMeaning stage_meaning(const Experiment& x, std::string_view stage) {
  return stage_meaning(*x.stack.fns, x.stack_fitted_fixed_costs, prices_receive(*x.stack.fns, x),
                       stage);
}

StageMeaning stage_meaning(const nlohmann::json& config, std::string_view stage) {
  if (!config.is_object()) return {};
  const net::FnTable* fns = fn_table_of(config);
  if (fns == nullptr) return {};  // a stack this build does not have
  bool fitted = false;
  double rx = 0;
  try {
    const json::json_pointer f("/stack/fitted_fixed_costs");
    if (config.contains(f) && config.at(f).is_boolean()) fitted = config.at(f).get<bool>();
    if (const auto receive = fns->first_in("receive")) {
      const json::json_pointer r("/stack/functions/" + std::string(fns->name(*receive)));
      if (config.contains(r) && config.at(r).is_number()) rx = config.at(r).get<double>();
    }
  } catch (const json::exception&) {
    return {};  // not a configuration this version wrote: no meaning to add
  }
  return stage_meaning(*fns, fitted, rx > 0, stage);
}

}  // namespace simloop::config
