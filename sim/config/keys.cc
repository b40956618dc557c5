// Questions about keys, answered from the schema: a configuration as JSON,
// a key's type and value, the cost keys calibration fits.
#include <fmt/format.h>

#include "sim/config/schema.h"
#include "sim/support/text.h"

namespace simloop::config {

using nlohmann::json;
using namespace detail;

json to_json(const Experiment& x) {
  json j = json::object();
  for (const auto& path : schema().order()) {
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
  f->set(scratch, node, loc);
}

std::vector<std::string> cost_keys() {
  std::vector<std::string> out;
  for (const auto& path : schema().order())
    if (schema().field(path)->cost) out.push_back(path);
  return out;
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

}  // namespace simloop::config
