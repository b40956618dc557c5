// Questions about keys, answered from the schema: a configuration as JSON,
// a key's type and value, the cost keys calibration fits.
#include <fmt/format.h>

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

std::optional<KeyType> key_type(const std::string& path) {
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

std::string closest_key(const std::string& path) {
  return support::closest(path, schema().order(), 3);
}

void check_value(const std::string& path, const std::string& value, const std::string& file,
                 int line, int col) {
  const Loc loc{file, line, col};
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

StageMeaning fitted_stage_meaning(bool fitted_fixed_costs, bool fitted_receive,
                                  std::string_view stage) {
  if (!fitted_fixed_costs) return {};
  if (stage == "socket")
    return {"send fixed",
            "the fitted fixed cost of sending, all on sendto; not the socket layer's own"};
  if (stage == "receive" && fitted_receive)
    return {"", "with the fitted fixed cost of receiving, all on soreceive"};
  return {};
}

StageMeaning stage_meaning(const Experiment& x, std::string_view stage) {
  const auto soreceive = x.stack.fns->find("soreceive");
  return fitted_stage_meaning(x.stack_fitted_fixed_costs,
                              soreceive && x.stack.fn_cycles[net::index(*soreceive)] > 0, stage);
}

StageMeaning stage_meaning(const nlohmann::json& config, std::string_view stage) {
  bool fitted = false;
  double rx = 0;
  try {
    const json::json_pointer f("/stack/fitted_fixed_costs"), r("/stack/functions/soreceive");
    if (config.is_object() && config.contains(f) && config.at(f).is_boolean())
      fitted = config.at(f).get<bool>();
    if (config.is_object() && config.contains(r) && config.at(r).is_number())
      rx = config.at(r).get<double>();
  } catch (const json::exception&) {
    return {};  // not a configuration this version wrote: no meaning to add
  }
  return fitted_stage_meaning(fitted, rx > 0, stage);
}

}  // namespace simloop::config
