#include "sim/tools/sweep/sweep.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "sim/config/experiment.h"
#include "sim/support/yaml_input.h"

namespace simloop::sweep {

namespace fs = std::filesystem;
using config::ConfigError;
using config::KeyType;

namespace {

using Where = config::YamlLoc;
constexpr auto where = config::yaml_loc;
constexpr auto shape = config::yaml_shape;

// The same shape as the loader's messages: file:line:col: key: message.
[[noreturn]] void fail(const Where& w, const std::string& key, const std::string& msg) {
  throw ConfigError(config::located(w, key, msg));
}

std::optional<double> as_number(const std::string& s) {
  if (s.empty()) return std::nullopt;
  try {
    size_t used = 0;
    const double v = std::stod(s, &used);
    if (used != s.size() || !std::isfinite(v)) return std::nullopt;
    return v;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// Numbers print in one canonical form, so that 1e9 and 1000000000 are the
// same point.
std::string canonical_number(double v, KeyType type) {
  if (type == KeyType::integer) return fmt::format("{}", static_cast<long long>(std::llround(v)));
  const double rounded = std::stod(fmt::format("{:.12g}", v));  // 0.1 + 0.2 is 0.3 here
  if (rounded == std::floor(rounded) && std::fabs(rounded) < 1e15)
    return fmt::format("{}", static_cast<long long>(rounded));
  return fmt::format("{}", rounded);
}

// Validates a value for `key` and returns its canonical text.
std::string canonical(const std::string& key, KeyType type, const std::string& text,
                      const Where& w) {
  config::check_value(key, text, w.file, w.line, w.col);
  if (type == KeyType::integer || type == KeyType::number) {
    const auto v = as_number(text);
    if (!v) fail(w, key, fmt::format("expected a number, got '{}'", text));
    return canonical_number(*v, type);
  }
  if (type == KeyType::boolean) return YAML::Load(text).as<bool>() ? "true" : "false";
  return text;
}

double range_number(const YAML::Node& map, const char* name, const std::string& key,
                    const std::string& file) {
  const YAML::Node n = map[name];
  if (!n) fail(where(file, map), key, fmt::format("a range needs '{}'", name));
  const auto v = n.IsScalar() ? as_number(n.Scalar()) : std::nullopt;
  if (!v) fail(where(file, n), key + "." + name, "expected a number, got " + shape(n));
  return *v;
}

// The values of one swept key: a list, or a range map.
std::vector<std::string> values_of(const std::string& key, const YAML::Node& node,
                                   const std::string& file) {
  const auto type = config::key_type(key);
  std::vector<std::string> out;
  if (node.IsSequence()) {
    if (node.size() == 0) fail(where(file, node), key, "the list of values is empty");
    if (node.size() > kMaxValues)
      fail(where(file, node), key, fmt::format("{} values; at most {}", node.size(), kMaxValues));
    for (const auto& v : node) {
      if (v.IsNull()) {  // ~: this value leaves the key as the experiment has it
        out.emplace_back(kLeftOut);
        continue;
      }
      if (!v.IsScalar()) fail(where(file, v), key, "expected a value, got " + shape(v));
      out.push_back(canonical(key, *type, v.Scalar(), where(file, v)));
    }
    return out;
  }
  if (!node.IsMap())
    fail(where(file, node), key,
         "expected a list of values or a range {start, stop, step} / {start, stop, num, scale}, "
         "got " +
             shape(node));
  if (*type != KeyType::integer && *type != KeyType::number)
    fail(where(file, node), key, "a range needs a numeric key; give a list of values");
  for (const auto& kv : node) {
    const std::string k = kv.first.Scalar();
    if (k != "start" && k != "stop" && k != "step" && k != "num" && k != "scale")
      fail(where(file, kv.first), key + "." + k,
           "unknown range key (allowed: start, stop, step, num, scale)");
  }
  const double start = range_number(node, "start", key, file);
  const double stop = range_number(node, "stop", key, file);
  std::vector<double> nums;
  if (node["step"]) {
    if (node["num"] || node["scale"])
      fail(where(file, node), key, "give either step, or num (with scale), not both");
    const double step = range_number(node, "step", key, file);
    const Where sw = where(file, node["step"]);
    if (step == 0) fail(sw, key + ".step", "must not be 0");
    if ((stop - start) / step < 0) fail(sw, key + ".step", "goes away from stop");
    const double n = std::floor((stop - start) / step + 1e-9) + 1;
    if (n > kMaxValues)
      fail(sw, key + ".step", fmt::format("gives {} values; at most {}", n, kMaxValues));
    for (int64_t i = 0; i < static_cast<int64_t>(n); ++i)
      nums.push_back(start + static_cast<double>(i) * step);
  } else if (node["num"]) {
    const YAML::Node nn = node["num"];
    const auto n = nn.IsScalar() ? as_number(nn.Scalar()) : std::nullopt;
    if (!n || *n < 1 || *n > kMaxValues || *n != std::floor(*n))
      fail(where(file, nn), key + ".num",
           fmt::format("expected an integer in [1, {}], got {}", kMaxValues, shape(nn)));
    bool log = false;
    if (const YAML::Node sc = node["scale"]) {
      if (!sc.IsScalar() || (sc.Scalar() != "log" && sc.Scalar() != "linear"))
        fail(where(file, sc), key + ".scale", "expected log or linear, got " + shape(sc));
      log = sc.Scalar() == "log";
    }
    if (log && (start <= 0 || stop <= 0))
      fail(where(file, node), key, "a log-spaced range needs start and stop > 0");
    const int count = static_cast<int>(*n);
    for (int i = 0; i < count; ++i) {
      const double f = count == 1 ? 0 : static_cast<double>(i) / (count - 1);
      nums.push_back(log ? start * std::pow(stop / start, f) : start + (stop - start) * f);
    }
  } else {
    fail(where(file, node), key, "a range needs step, or num (with scale: log or linear)");
  }
  for (double v : nums) {
    std::string text = canonical_number(v, *type);
    if (!out.empty() && out.back() == text) continue;  // integer rounding of close values
    config::check_value(key, text, file, where(file, node).line, where(file, node).col);
    out.push_back(std::move(text));
  }
  return out;
}

void check_key(const std::string& key, const Where& w) {
  if (!config::key_type(key)) {
    std::string msg = "no such key";
    const std::string near = config::closest_key(key);
    if (!near.empty()) msg += fmt::format("; did you mean '{}'?", near);
    fail(w, key, msg + " (see docs/config-reference.md)");
  }
  if (key == "name" || key.rfind("output.", 0) == 0)
    fail(w, key, "cannot be swept: it says where results go");
}

struct Condition {
  std::string key, op, value;
  Where w;
};

Condition parse_condition(const YAML::Node& n, const std::string& file,
                          const std::vector<std::string>& keys) {
  const Where w = where(file, n);
  if (!n.IsScalar())
    fail(w, "sweep.filter", "expected a condition 'KEY OP VALUE', got " + shape(n));
  const std::string s = n.Scalar();
  size_t at = std::string::npos, len = 0;
  for (const char* op : {"<=", ">=", "==", "!=", "<", ">"}) {
    const size_t p = s.find(op);
    if (p != std::string::npos && (p < at || (p == at && std::strlen(op) > len))) {
      at = p;
      len = std::strlen(op);
    }
  }
  if (at == std::string::npos)
    fail(w, "sweep.filter", fmt::format("'{}' has no comparison (<, <=, >, >=, ==, !=)", s));
  auto trim = [](std::string t) {
    const auto b = t.find_first_not_of(" \t");
    const auto e = t.find_last_not_of(" \t");
    t = b == std::string::npos ? "" : t.substr(b, e - b + 1);
    if (t.size() >= 2 && (t.front() == '"' || t.front() == '\'') && t.back() == t.front())
      t = t.substr(1, t.size() - 2);
    return t;
  };
  Condition c{trim(s.substr(0, at)), s.substr(at, len), trim(s.substr(at + len)), w};
  if (std::find(keys.begin(), keys.end(), c.key) == keys.end())
    fail(w, "sweep.filter",
         fmt::format("'{}' is not a swept key (swept: {})", c.key, fmt::join(keys, ", ")));
  if (c.value.empty()) fail(w, "sweep.filter", fmt::format("'{}' has nothing to compare with", s));
  const auto type = *config::key_type(c.key);
  const bool numeric = type == KeyType::integer || type == KeyType::number;
  if (numeric && !as_number(c.value))
    fail(w, "sweep.filter", fmt::format("{} is a number; '{}' is not", c.key, c.value));
  if (!numeric && c.op != "==" && c.op != "!=")
    fail(w, "sweep.filter", fmt::format("{} is not a number: compare it with == or !=", c.key));
  return c;
}

bool holds(const Condition& c, const std::string& value) {
  const auto a = as_number(value), b = as_number(c.value);
  if (a && b) {
    if (c.op == "<") return *a < *b;
    if (c.op == "<=") return *a <= *b;
    if (c.op == ">") return *a > *b;
    if (c.op == ">=") return *a >= *b;
    if (c.op == "==") return *a == *b;
    return *a != *b;
  }
  return c.op == "==" ? value == c.value : value != c.value;
}

Axis read_axes(const YAML::Node& map, const std::string& what, const std::string& file,
               std::vector<std::string>& keys, std::vector<Axis>& axes) {
  if (!map.IsMap() || map.size() == 0)
    fail(where(file, map), "sweep." + what, "expected a map of key: values, got " + shape(map));
  Axis zip;
  for (const auto& kv : map) {
    const std::string key = kv.first.Scalar();
    const Where kw = where(file, kv.first);
    check_key(key, kw);
    if (std::find(keys.begin(), keys.end(), key) != keys.end())
      fail(kw, key, "is swept twice (in grid and zip)");
    keys.push_back(key);
    const auto values = values_of(key, kv.second, file);
    if (what == "grid") {
      Axis a;
      a.keys = {key};
      for (const auto& v : values) a.tuples.push_back({v});
      axes.push_back(std::move(a));
    } else {
      if (!zip.keys.empty() && values.size() != zip.tuples.size())
        fail(kw, key,
             fmt::format("has {} values but {} has {}: zip takes lists of the same length",
                         values.size(), zip.keys.front(), zip.tuples.size()));
      if (zip.keys.empty()) zip.tuples.resize(values.size());
      zip.keys.push_back(key);
      for (size_t i = 0; i < values.size(); ++i) zip.tuples[i].push_back(values[i]);
    }
  }
  return zip;
}

nlohmann::json to_json(const YAML::Node& n) {
  if (n.IsMap()) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& kv : n) j[kv.first.Scalar()] = to_json(kv.second);
    return j;
  }
  if (n.IsSequence()) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& v : n) j.push_back(to_json(v));
    return j;
  }
  if (n.IsScalar()) return n.Scalar();
  return nullptr;
}

}  // namespace

std::optional<std::string> canonical_text(const std::string& key, const nlohmann::json& value) {
  const auto type = config::key_type(key);
  if (!type) return std::nullopt;
  if (value.is_boolean()) return value.get<bool>() ? "true" : "false";
  if (value.is_number() && (*type == KeyType::integer || *type == KeyType::number))
    return canonical_number(value.get<double>(), *type);
  if (value.is_string() && *type != KeyType::integer && *type != KeyType::number)
    return value.get<std::string>();
  return std::nullopt;
}

std::string Point::value_of(const std::string& key) const {
  for (const auto& s : settings)
    if (s.key == key) return s.value == kLeftOut ? "" : s.value;
  return "";
}

std::vector<std::string> Point::as_sets() const {
  std::vector<std::string> out;
  for (const auto& s : settings)
    if (s.value != kLeftOut) out.push_back(s.key + "=" + s.value);
  return out;
}

std::string hex64(uint64_t v) {
  return fmt::format("{:016x}", v);
}

namespace {
std::string settings_text(const Point& p) {
  std::string s;
  for (const auto& st : p.settings) {
    if (!s.empty()) s += ';';
    s += st.key + "=" + st.value;
  }
  return s;
}
}  // namespace

uint64_t run_seed(uint64_t base_seed, const Point& p, int repeat) {
  uint64_t z = fnv1a(fmt::format("{}|{}|{}", base_seed, settings_text(p), repeat));
  z += 0x9e3779b97f4a7c15ULL;  // splitmix64
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return z % (uint64_t{1} << 52);
}

Spec load_spec(const fs::path& experiment_file) {
  const std::string file = experiment_file.string();
  const YAML::Node doc = config::read_yaml_file(experiment_file);
  const YAML::Node sec = doc.IsMap() ? doc["sweep"] : YAML::Node();
  if (!sec)
    fail(where(file, doc), "sweep",
         "the experiment has no sweep section (see docs/config-reference.md)");
  Spec spec = spec_of(sec, file);
  // A swept machine or stack names a file, found from the experiment: one
  // that is not there is refused at its value.
  for (const char* part : {"grid", "zip"}) {
    const YAML::Node axes = sec[part];
    if (!axes || !axes.IsMap()) continue;
    for (const auto& kv : axes)
      if (config::is_profile_choice(kv.first.Scalar()) && kv.second.IsSequence())
        for (const auto& v : kv.second) {
          const Where w = where(file, v);
          config::find_profile(experiment_file, kv.first.Scalar(), v.Scalar(), w.file, w.line,
                               w.col);
        }
  }
  return spec;
}

Spec spec_of(const YAML::Node& sec, const std::string& file) {
  if (!sec.IsMap())
    fail(where(file, sec), "sweep",
         "expected a map (grid, zip, filter, repeats), got " + shape(sec));
  for (const auto& kv : sec) {
    const std::string k = kv.first.Scalar();
    if (k != "grid" && k != "zip" && k != "filter" && k != "repeats")
      fail(where(file, kv.first), "sweep." + k,
           "unknown key in sweep (allowed: grid, zip, filter, repeats)");
  }
  if (!sec["grid"] && !sec["zip"]) fail(where(file, sec), "sweep", "needs grid or zip (or both)");

  Spec spec;
  spec.definition = to_json(sec);
  YAML::Emitter text;
  text << sec;
  spec.text = text.c_str();
  std::vector<Axis>& axes = spec.axes;
  if (sec["grid"]) read_axes(sec["grid"], "grid", file, spec.keys, axes);
  if (sec["zip"]) axes.push_back(read_axes(sec["zip"], "zip", file, spec.keys, axes));

  if (const YAML::Node r = sec["repeats"]) {
    const auto v = r.IsScalar() ? as_number(r.Scalar()) : std::nullopt;
    if (!v || *v < 1 || *v > 1e6 || *v != std::floor(*v))
      fail(where(file, r), "sweep.repeats", "expected an integer in [1, 1000000], got " + shape(r));
    spec.repeats = static_cast<int>(*v);
  }
  std::vector<Condition> conds;
  if (const YAML::Node f = sec["filter"]) {
    if (f.IsScalar()) {
      conds.push_back(parse_condition(f, file, spec.keys));
    } else if (f.IsSequence()) {
      for (const auto& c : f) conds.push_back(parse_condition(c, file, spec.keys));
    } else {
      fail(where(file, f), "sweep.filter", "expected a list of conditions, got " + shape(f));
    }
  }
  // Each condition tests one key, so it keeps or drops whole tuples of
  // that key's axis: the points left are the product of what each axis
  // keeps, in the order they had.
  for (auto& a : axes)
    std::erase_if(a.tuples, [&](const std::vector<std::string>& t) {
      for (const auto& c : conds)
        for (size_t k = 0; k < a.keys.size(); ++k)
          if (a.keys[k] == c.key && !holds(c, t[k])) return true;
      return false;
    });
  double total = 1;
  for (const auto& a : axes) total *= static_cast<double>(a.tuples.size());
  if (total == 0)
    fail(where(file, sec["filter"] ? sec["filter"] : sec), "sweep.filter", "no point is left");
  if (total > static_cast<double>(kMaxPoints))
    fail(
        where(file, sec), "sweep",
        fmt::format("{:.0f} points; at most {} (split it into several sweeps)", total, kMaxPoints));
  return spec;
}

size_t Spec::size() const {
  size_t n = 1;
  for (const auto& a : axes) n *= a.tuples.size();
  return n;
}

void Spec::tuples_of(size_t index, size_t* at) const {
  for (size_t a = axes.size(); a-- > 0;) {
    at[a] = index % axes[a].tuples.size();
    index /= axes[a].tuples.size();
  }
}

Point Spec::point(size_t index) const {
  Point p;
  p.index = index;
  std::vector<size_t> at;
  tuples_of(index, at);
  for (size_t a = 0; a < axes.size(); ++a)
    for (size_t k = 0; k < axes[a].keys.size(); ++k)
      p.settings.push_back({axes[a].keys[k], axes[a].tuples[at[a]][k]});
  return p;
}

Shard parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  Shard s;
  try {
    if (slash == std::string::npos) throw std::invalid_argument("");
    size_t used = 0;
    s.k = std::stoi(text.substr(0, slash), &used);
    if (used != slash) throw std::invalid_argument("");
    s.n = std::stoi(text.substr(slash + 1), &used);
    if (used != text.size() - slash - 1) throw std::invalid_argument("");
  } catch (const std::exception&) {
    throw std::invalid_argument(fmt::format("--shard {}: expected K/N, e.g. 2/8", text));
  }
  if (s.n < 1 || s.k < 1 || s.k > s.n)
    throw std::invalid_argument(fmt::format("--shard {}: need 1 <= K <= N", text));
  return s;
}

}  // namespace simloop::sweep
