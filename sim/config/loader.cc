// Loading an experiment: its file and --set overrides read against the
// schema, machine and stack first, then the experiment's own keys, the
// checks across keys, and the code layout.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <map>
#include <type_traits>
#include <variant>

#include "models/l1d_copies.h"
#include "sim/config/loader_detail.h"
#include "sim/stack/stack_set.h"
#include "sim/support/text.h"

namespace simloop::config {

namespace fs = std::filesystem;

namespace detail {

void apply_map(Experiment& x, const YAML::Node& map, const std::string& prefix,
               const std::string& file, const std::vector<std::string>& skip, LeaveOut* leave) {
  const Schema& s = schema();
  const std::string section =
      prefix.empty() ? "the top level" : prefix.substr(0, prefix.size() - 1);
  if (!map.IsMap())
    fail(loc_of(file, map), section, "expected a map of keys, got " + scalar_text(map));
  // A stack map says which stack it is first: its other keys depend on it.
  if (prefix == "stack." && map["kind"]) {
    const YAML::Node kind = map["kind"];
    s.field("stack.kind")->set(x, kind, loc_of(file, kind));
  }
  for (const auto& kv : map) {
    const Loc kloc = loc_of(file, kv.first);
    if (!kv.first.IsScalar()) fail(kloc, section, "keys must be plain names");
    const std::string key = kv.first.Scalar();
    if (std::find(skip.begin(), skip.end(), key) != skip.end()) continue;
    const std::string path = prefix + key;
    if (leave != nullptr && leave->unset.contains(path)) continue;
    if (const Field* f = s.field(path)) {
      if (leave != nullptr && leave->other_stacks && !applies(*f, x)) {
        // The file's key of another stack than the one --set chose: the
        // file was written for that stack, and the choice is the user's.
        leave->left.insert(path);
        leave->notes.push_back(located(
            kloc, path,
            fmt::format("left out: {} runs the {} stack, which does not take it (a key of the {} "
                        "stack)",
                        leave->chosen_by, x.stack.fns->stack(), fmt::join(f->stacks, " and "))));
        continue;
      }
      check_applies(*f, x, kloc);
      f->set(x, kv.second, loc_of(file, kv.second));
    } else if (s.is_section(path)) {
      apply_map(x, kv.second, path + ".", file, {}, leave);
    } else {
      const auto allowed = s.children(prefix);
      std::string msg = fmt::format("unknown key '{}' in {}", printable(key), section);
      const std::string best = support::closest(key, allowed, 2);
      if (!best.empty()) msg += fmt::format("; did you mean '{}'?", best);
      msg += fmt::format(" (allowed: {})", fmt::join(allowed, ", "));
      fail(kloc, path, msg);
    }
  }
}

}  // namespace detail

using namespace detail;

namespace {

// A --set value, parsed as YAML (as in a file).
YAML::Node set_value(const std::string& key, const std::string& value) {
  // A plain word or number is the scalar YAML makes of it: made directly,
  // without a parser (a sweep's run sets a few of them; a parser costs more
  // than the rest of loading them). Anything else is parsed.
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; };
  const bool plain =
      !value.empty() &&
      (word(value[0]) ||
       (value[0] == '-' && value.size() > 1 &&
        (std::isdigit(static_cast<unsigned char>(value[1])) != 0 || value[1] == '.'))) &&
      std::all_of(value.begin(), value.end(),
                  [&](char c) { return word(c) || c == '.' || c == '-' || c == '+'; }) &&
      value != "null" && value != "Null" && value != "NULL";
  if (plain) {
    YAML::Node n(value);
    n.SetTag("?");  // as the parser tags a plain scalar
    return n;
  }
  try {
    return YAML::Load(value);
  } catch (const YAML::Exception& e) {
    throw ConfigError(fmt::format("--set {}: cannot parse the value: {}", printable(key, 120),
                                  printable(e.msg, 200)));
  }
}

// "did you mean" for a --set (or --unset) path that names no key.
[[noreturn]] void unknown_set_key(const std::string& key, const char* option = "--set") {
  const Schema& s = schema();
  if (s.is_section(key)) {
    const auto kids = s.children(key + ".");
    throw ConfigError(
        fmt::format("--set {}: is a section; set one of its keys ({}.{})", key, key,
                    kids.empty() ? "..." : fmt::format("{{{}}}", fmt::join(kids, ","))));
  }
  std::string msg = fmt::format("{} {}: no such key", option, printable(key, 120));
  if (const std::string near = closest_key(key); !near.empty())
    msg += fmt::format("; did you mean '{}'?", near);
  throw ConfigError(msg + " (see docs/config-reference.md)");
}

void check_consistency(const Experiment& x, const std::map<std::string, Loc>& where) {
  auto loc = [&](const std::string& key) {
    auto it = where.find(key);
    return it != where.end() ? it->second : Loc{x.source.string(), 1, 1};
  };
  const auto& w = x.workload;
  // What the stack refuses of the path, refused here (so that `check`
  // refuses what `run` does), naming the key and the file.
  if (const net::KeyProblem p =
          stacks::problem(stack_of(x), x.options, x.stack_options, w.dest, w.payload))
    fail(loc(p.key), p.key, p.message);
  if (x.interrupts.enabled && x.interrupts.moderation_interval_s == 0 &&
      x.interrupts.moderation_packets > x.options.nic_ring)
    fail(loc("interrupts.moderation.packets"), "interrupts.moderation.packets",
         fmt::format("{} is more than options.nic_ring ({}): the ring would fill before the first "
                     "interrupt",
                     x.interrupts.moderation_packets, x.options.nic_ring));
  models::for_each_model([&]<class M>(std::type_identity<M>) {
    const auto& c = std::get<typename M::Config>(x.models);
    for (const auto& k : M::kKeys) {
      if (!k.power_of_two) continue;
      const int64_t v = std::visit(
          [&c]<class F>(F f) -> int64_t {
            using C = typename M::Config;
            if constexpr (std::is_integral_v<typename support::FieldType<F, C>::type>)
              return static_cast<int64_t>(f(const_cast<C&>(c)));
            return 1;
          },
          k.field);
      if (v < 1 || !std::has_single_bit(static_cast<uint64_t>(v))) {
        const std::string key = fmt::format("{}.{}", M::kSection, k.name);
        fail(loc(key), key, fmt::format("expected a power of two, got {}", v));
      }
    }
  });
  if (x.cache_enabled) {
    // What the engine's cache model would refuse, refused here so that a
    // file `check` passes is a file `run` accepts.
    try {
      models::check_config(x.icache);
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();
      const std::string field = "machine.cache." + what.substr(0, what.find(' '));
      const std::string key = schema().field(field) != nullptr ? field : "machine.cache";
      fail(loc(key), key, what);
    }
  }
  if (const auto& m = x.machine; m.copy_l1d_bytes > 0)
    if (const std::string why =
            models::L1dCopies::problem(m.copy_l1d_bytes, m.copy_l1d_ways, m.line_bytes);
        !why.empty())
      fail(loc("machine.copy.l1d_bytes"), "machine.copy.l1d_bytes",
           fmt::format("{} ({} bytes, {} ways)", why, m.copy_l1d_bytes, m.copy_l1d_ways));
}

// Records where each leaf of a document was set, for cross-field errors.
void record_locations(const YAML::Node& n, const std::string& prefix, const std::string& file,
                      std::map<std::string, Loc>& where) {
  if (!n.IsMap()) return;
  for (const auto& kv : n) {
    if (!kv.first.IsScalar()) continue;
    const std::string path = prefix + kv.first.Scalar();
    if (schema().field(path) != nullptr) {
      where[path] = loc_of(file, kv.first);
    } else if (schema().is_section(path)) {
      where[path] = loc_of(file, kv.first);
      record_locations(kv.second, path + ".", file, where);
    }
  }
}

// An --unset path: a key or a section of the schema, not the machine or
// the stack an experiment needs.
void check_unset_key(const std::string& key) {
  if (is_profile_choice(key))
    throw ConfigError(fmt::format(
        "--unset {}: an experiment needs a {}; choose another with --set {}=NAME", key, key, key));
  if (schema().field(key) == nullptr && !schema().is_section(key)) unknown_set_key(key, "--unset");
}

// Refuses an --unset of a key the experiment file does not set: there is
// nothing to leave out, and a misspelt one would otherwise do nothing.
void check_unset_in(const YAML::Node& doc, const std::string& key, const std::string& file) {
  YAML::Node at = doc;  // const lookups below: the cached document is never changed
  std::string part, rest = key;
  for (size_t dot = 0; dot != std::string::npos;) {
    dot = rest.find('.');
    part = rest.substr(0, dot);
    rest = dot == std::string::npos ? "" : rest.substr(dot + 1);
    const YAML::Node& cur = at;
    if (!cur.IsMap() || !cur[part]) {
      std::string why = fmt::format("--unset {}: {} does not set it", key, printable(file, 120));
      const std::string top = key.substr(0, key.find('.'));
      if (is_profile_choice(top) && doc[top] && doc[top].IsScalar())
        why += fmt::format(" (its value is the {} profile {}'s; --set {}=VALUE overrides it)", top,
                           printable(doc[top].Scalar()), key);
      throw ConfigError(why);
    }
    at.reset(cur[part]);
  }
}

// The last steps of loading: the overrides (known keys), each over what
// came before, then the checks across keys and the code layout.
void finish(Experiment& x, const std::vector<std::pair<std::string, std::string>>& overrides,
            std::map<std::string, Loc>& where) {
  for (const auto& [key, value] : overrides) {
    const Field* field = schema().field(key);
    check_applies(*field, x, Loc{});
    field->set(x, set_value(key, value), Loc{});
    where[key] = Loc{};
  }
  check_consistency(x, where);
  build_code_layout(x, where);
}

}  // namespace

Experiment load_experiment(const fs::path& file, const std::vector<std::string>& sets,
                           const std::vector<std::string>& unset) {
  Experiment x;
  x.source = file;
  x.unset = unset;
  // Every --set is checked before the files are read, so a misspelt path
  // is named even if a file is wrong too.
  std::vector<std::pair<std::string, std::string>> overrides;
  std::map<std::string, YAML::Node> components;  // --set machine=NAME, --set stack=NAME
  for (const auto& s : sets) {
    const auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0)
      throw ConfigError(fmt::format("--set {}: expected path.to.key=value", printable(s, 120)));
    const std::string key = s.substr(0, eq);
    if (key == "machine" || key == "stack") {
      components[key] = set_value(key, s.substr(eq + 1));
      continue;
    }
    if (schema().field(key) == nullptr) unknown_set_key(key);
    overrides.emplace_back(key, s.substr(eq + 1));
  }
  LeaveOut leave;
  for (const auto& key : unset) {
    check_unset_key(key);
    leave.unset.insert(key);
  }
  const YAML::Node doc = read_yaml_file(file);
  const std::string f = file.string();
  if (!doc.IsMap())
    fail(loc_of(f, doc), "experiment",
         "expected a map of keys at the top level, got " + scalar_text(doc));
  for (const auto& key : unset) check_unset_in(doc, key, f);
  for (const char* required : {"machine", "stack"})
    if (!doc[required] && components.count(required) == 0)
      fail(loc_of(f, doc), required,
           fmt::format("missing required key '{}' (a name from configs/{}s, a path, or a map)",
                       required, required));
  // Machine and stack first, so that the experiment's own keys override them.
  for (const std::string key : {"machine", "stack"}) {
    const auto it = components.find(key);
    if (it == components.end()) {
      apply_component(x, doc[key], key, file, false, &leave);
      continue;
    }
    apply_component(x, it->second, key, file, true);
    // The file's map of fields was for the profile it named: it goes too.
    const YAML::Node mine = doc[key];
    std::vector<std::string> fields;
    if (mine && mine.IsMap())
      for (const auto& kv : mine)
        if (kv.first.IsScalar() && kv.first.Scalar() != "use") fields.push_back(kv.first.Scalar());
    if (!fields.empty())
      leave.notes.push_back(
          located(loc_of(f, mine), key,
                  fmt::format("left out: {}={} replaces the experiment's {} map, and its {} "
                              "with it",
                              key, printable(it->second.Scalar(), 120), key,
                              printable(fmt::format("{}", fmt::join(fields, ", ")), 120))));
  }
  if (const auto it = components.find("stack"); it != components.end()) {
    leave.other_stacks = true;
    leave.chosen_by = "stack=" + printable(it->second.Scalar(), 120);
  }
  // The sweep section is read by the sweep runner (sim/tools/sweep), not here.
  apply_map(x, doc, "", f, {"machine", "stack", "sweep"}, &leave);
  x.has_sweep = static_cast<bool>(doc["sweep"]);

  std::map<std::string, Loc> where;
  record_locations(doc, "", f, where);
  // What was left out has no place in the file to blame.
  std::erase_if(where, [&](const auto& kv) {
    const std::string& k = kv.first;
    return leave.left.contains(k) || std::any_of(unset.begin(), unset.end(), [&](const auto& u) {
             return k == u || k.starts_with(u + ".");
           });
  });
  x.notes = std::move(leave.notes);
  finish(x, overrides, where);
  return x;
}

Experiment load_over(const Experiment& base, const std::vector<std::string>& base_sets,
                     const std::vector<std::string>& sets) {
  // Overrides go last in load_experiment, over what the file and the base's
  // own overrides made: here they go over that result, kept. A set that is
  // not a plain key (machine=, stack=) or that fails is loaded the long
  // way, which also gives its message the file's lines.
  std::vector<std::pair<std::string, std::string>> overrides;
  for (const auto& s : sets) {
    const auto eq = s.find('=');
    if (eq == std::string::npos || schema().field(s.substr(0, eq)) == nullptr) break;
    overrides.emplace_back(s.substr(0, eq), s.substr(eq + 1));
  }
  if (overrides.size() == sets.size()) {
    try {
      Experiment x = base;
      // What build_code_layout makes, made again from the keys as they are
      // now (as a fresh load would).
      x.code.reset();
      x.build_files = {};
      x.perturbation.clear();
      std::map<std::string, Loc> where;
      finish(x, overrides, where);
      return x;
    } catch (const ConfigError&) {
    }
  }
  std::vector<std::string> all = base_sets;
  all.insert(all.end(), sets.begin(), sets.end());
  return load_experiment(base.source, all, base.unset);
}

}  // namespace simloop::config
