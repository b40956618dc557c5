// A sweep's plan and its files' names: the points a sweep expands to,
// their hashes, the results' columns, and the manifest's text (what
// run_sweep, resume and merge all read and write).
#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <map>

#include "sim/engine/columns.h"
#include "sim/support/yaml_input.h"
#include "sim/tools/sweep/runner.h"

namespace simloop::sweep {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {
// A configuration as dot paths and values.
void flatten(const json& j, const std::string& prefix, std::map<std::string, json>& out) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) flatten(v, prefix.empty() ? k : prefix + "." + k, out);
    return;
  }
  out[prefix] = j;
}

// What identifies a configuration's results: all of it but where results go
// and the free-text description.
json identity_of(json config) {
  config.erase("output");
  config.erase("description");
  return config;
}

}  // namespace

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

namespace {
constexpr std::string_view kPointsMember = ",\n  \"points\": ";
constexpr std::string_view kManifestEnd = "\n}\n";
}  // namespace

std::string manifest_text(const json& m, std::string_view points) {
  std::string text = m.dump(2);  // ends with "\n}"
  text.resize(text.size() - 2);
  text += kPointsMember;
  text += points;
  text += kManifestEnd;
  return text;
}

std::string_view manifest_points_text(std::string_view text) {
  if (!text.ends_with(kManifestEnd)) return {};
  // A newline and two spaces before a member name occur only between the
  // top level's members: inside strings JSON escapes newlines.
  const size_t at = text.rfind(kPointsMember);
  if (at == std::string_view::npos) return {};
  const size_t from = at + kPointsMember.size();
  const std::string_view seg = text.substr(from, text.size() - kManifestEnd.size() - from);
  if (seg.empty() || seg.front() != '[' || seg.back() != ']' || !json::accept(seg)) return {};
  return seg;
}

json read_json(const fs::path& p, bool point_configs) {
  return parse_manifest(read_text(p), p.string(), point_configs);
}

fs::path manifest_of(const fs::path& csv) {
  fs::path m = csv;
  m.replace_extension(".json");
  return m;
}

fs::path lock_of(const fs::path& csv) {
  fs::path m = csv;
  m.replace_extension(".lock");
  return m;
}

std::vector<std::string> header_of(const Plan& p) {
  std::vector<std::string> h = {"point", "repeat", "point_hash"};
  for (const auto& k : p.spec.keys) h.push_back(k);
  // A metric that only repeats a swept key's value (align for options.align)
  // is left out: the swept key's column says it. Metrics that can differ
  // from the setting (packets: those sent before a fault) stay.
  static const std::map<std::string, std::string> kRepeats = {{"workload.payload", "payload"},
                                                              {"workload.dest", "dest"},
                                                              {"options.align", "align"},
                                                              {"options.copy", "copy"}};
  std::set<std::string> said;
  for (const auto& k : p.spec.keys)
    if (const auto it = kRepeats.find(k); it != kRepeats.end()) said.insert(it->second);
  // The columns of every stack and machine a point chooses, not only the
  // base's: a Linux point of a BSD study has its own (cycles_skb, ...).
  std::vector<const config::Experiment*> runs = {&p.base};
  for (const auto& [choice, x] : p.chosen) runs.push_back(&x);
  // A column of one stack goes where that stack's row has it: after the
  // column before it there (cycles_skb where cycles_mbuf is).
  const auto keys_end = static_cast<std::ptrdiff_t>(h.size());
  for (const config::Experiment* x : runs) {
    std::ptrdiff_t at = static_cast<std::ptrdiff_t>(h.size());
    const report::Row row = engine::result_row(*x, engine::SimResult{});
    for (const auto& [k, v] : row.cells()) {
      if (said.count(k) != 0 ||
          std::find(h.begin(), h.begin() + keys_end, k) != h.begin() + keys_end)
        continue;  // a swept key's column says it
      const auto it = std::find(h.begin() + keys_end, h.end(), k);
      if (it != h.end()) {
        at = (it - h.begin()) + 1;
      } else {
        h.insert(h.begin() + at, k);
        ++at;
      }
    }
  }
  for (const char* k : {"status", "error", "process_s"}) h.push_back(k);
  return h;
}

std::vector<std::string> changed_keys(const json& a, const json& b,
                                      const std::set<std::string>& ignore) {
  std::map<std::string, json> fa, fb;
  flatten(identity_of(a), "", fa);
  flatten(identity_of(b), "", fb);
  std::vector<std::string> out;
  for (const auto& [k, v] : fa) {
    if (ignore.count(k) != 0) continue;
    const auto it = fb.find(k);
    if (it == fb.end() || it->second != v) out.push_back(k);
  }
  for (const auto& [k, v] : fb)
    if (ignore.count(k) == 0 && fa.count(k) == 0) out.push_back(k);
  return out;
}

std::string effective_status(const json& m, const fs::path& csv) {
  const auto st = m.find("status");
  const std::string s = st != m.end() && st->is_string() ? st->get<std::string>() : "";
  if (s == "running" && !StoreLock::held(lock_of(csv))) return "stopped";
  return s;
}

Point Plan::point(size_t index) const {
  Point p = spec.point(index);
  p.hash = hex64(hashes.at(index));
  return p;
}

namespace {
// What one setting adds to a point's hash.
std::string hash_part(const std::string& key, const std::string& value) {
  return key + "=" + value + ";";
}
}  // namespace

std::map<std::string, std::string> profile_refs(const config::Experiment& base) {
  std::map<std::string, std::string> out;
  for (const std::string key : {"machine", "stack"})
    if (const std::string& ref = config::profile_ref(base, key); !ref.empty()) out[key] = ref;
  return out;
}

PointHasher::PointHasher(const Spec& spec, const json& base_config,
                         const std::map<std::string, std::string>& base_refs)
    : spec_(spec) {
  seed_ = fnv1a(hex64(fnv1a(identity_of(base_config).dump())) + "|");
  for (const auto& key : spec.keys) {
    if (config::is_profile_choice(key)) {
      // The configuration holds the profile's fields, not its name: the
      // name the base chose it by is its value.
      if (const auto r = base_refs.find(key); r != base_refs.end()) base_text_[key] = r->second;
      continue;
    }
    // The base's value of a key, where it has one (a key of the other
    // stack has none): a setting equal to it is no change.
    std::string path = "/" + key;
    std::replace(path.begin(), path.end(), '.', '/');
    const json::json_pointer ptr(path);
    if (base_config.contains(ptr))
      if (const auto t = canonical_text(key, base_config.at(ptr))) base_text_[key] = *t;
  }
  parts_.resize(spec.axes.size());
  for (size_t a = 0; a < spec.axes.size(); ++a) {
    const Axis& ax = spec.axes[a];
    for (const auto& t : ax.tuples) {
      std::vector<std::string> parts;
      for (size_t k = 0; k < ax.keys.size(); ++k) {
        const auto b = base_text_.find(ax.keys[k]);
        parts.push_back(b != base_text_.end() && b->second == t[k] ? ""
                                                                   : hash_part(ax.keys[k], t[k]));
      }
      parts_[a].push_back(std::move(parts));
    }
    for (size_t k = 0; k < ax.keys.size(); ++k) order_.emplace_back(a, k);
  }
  std::sort(order_.begin(), order_.end(), [&](const auto& x, const auto& y) {
    return spec.axes[x.first].keys[x.second] < spec.axes[y.first].keys[y.second];
  });
}

uint64_t PointHasher::operator()(size_t index) const {
  size_t at[32];  // one per axis, without a vector per call
  if (spec_.axes.size() > std::size(at)) return (*this)(spec_.point(index));
  spec_.tuples_of(index, at);
  uint64_t h = seed_;
  for (const auto& [a, k] : order_) h = fnv1a(parts_[a][at[a]][k], h);
  return h;
}

uint64_t PointHasher::operator()(const Point& p) const {
  std::vector<const Setting*> sorted;
  for (const auto& s : p.settings) sorted.push_back(&s);
  std::sort(sorted.begin(), sorted.end(),
            [](const Setting* x, const Setting* y) { return x->key < y->key; });
  uint64_t h = seed_;
  for (const Setting* s : sorted) {
    const auto b = base_text_.find(s->key);
    if (b == base_text_.end() || b->second != s->value) h = fnv1a(hash_part(s->key, s->value), h);
  }
  return h;
}

namespace {

// A swept key that a stack of the sweep's stack axis does not take: every
// point on that stack must leave it out (~), so the key goes in the zip with
// stack, with ~ there; in a grid beside the stack axis, each such point would
// run the same configuration once per value of the key.
void check_keys_of_one_stack(const Spec& spec, const std::map<std::string, config::Experiment>& on,
                             const std::string& file) {
  for (size_t sa = 0; sa < spec.axes.size(); ++sa) {
    const Axis& sx = spec.axes[sa];
    const auto sk = std::find(sx.keys.begin(), sx.keys.end(), "stack");
    if (sk == sx.keys.end()) continue;
    const size_t si = static_cast<size_t>(sk - sx.keys.begin());
    for (size_t a = 0; a < spec.axes.size(); ++a)
      for (size_t k = 0; k < spec.axes[a].keys.size(); ++k) {
        const std::string& key = spec.axes[a].keys[k];
        if (config::is_profile_choice(key)) continue;
        for (const auto& t : sx.tuples) {
          const auto x = on.find("stack=" + t[si]);
          if (x == on.end() || config::key_applies(x->second, key)) continue;
          const std::string_view kind = x->second.stack.fns->stack();
          if (a != sa)
            throw config::ConfigError(fmt::format(
                "{}: sweep: {}: the {} stack ({}) does not take it, and in a grid beside the stack "
                "axis each of its points would run once per value of {}; sweep {} in the zip "
                "with stack instead, with ~ (left out) at the {} points",
                file, key, kind, t[si], key, key, t[si]));
          const size_t at = static_cast<size_t>(&t - sx.tuples.data());
          if (spec.axes[a].tuples[at][k] != kLeftOut)
            throw config::ConfigError(fmt::format(
                "{}: sweep: zip: {}={} beside stack={}: the {} stack does not take {}; give ~ "
                "(left out) there",
                file, key, spec.axes[a].tuples[at][k], t[si], kind, key));
        }
      }
  }
}

}  // namespace

Plan make_plan(const Options& o) {
  // Every point reads the same files, and so does every run (a fork of
  // this process): each is parsed once.
  config::cache_parsed_yaml(true);
  Plan p;
  p.base = config::load_experiment(o.experiment, o.sets, o.unset);
  p.spec = load_spec(o.experiment);
  for (const auto& k : p.spec.keys)
    if (k == "seed")
      throw config::ConfigError(
          fmt::format("{}: sweep: seed cannot be swept: use repeats, which derive a seed per run",
                      o.experiment.string()));
  p.config = config::to_json(p.base);
  const size_t n = p.spec.size();
  // A small sweep has every point's configuration checked now, not halfway
  // through; a large one each value of each key (load_spec) and each point
  // as it runs, where one the loader refuses is a row with status error.
  p.checked = n <= kCheckedPoints;
  std::set<std::string> noted;
  auto note = [&](const config::Experiment& x) {
    for (const auto& text : x.notes)
      if (noted.insert(text).second) p.notes.push_back(text);
  };
  note(p.base);
  // Each machine or stack a sweep chooses, over the base alone: a name that
  // finds no file is refused now, whatever the size of the sweep.
  for (const auto& a : p.spec.axes)
    for (size_t k = 0; k < a.keys.size(); ++k) {
      if (!config::is_profile_choice(a.keys[k])) continue;
      for (const auto& t : a.tuples) {
        if (t[k] == kLeftOut) continue;
        const std::string set = a.keys[k] + "=" + t[k];
        if (p.chosen.contains(set)) continue;
        try {
          config::Experiment x = config::load_over(p.base, o.sets, {set});
          note(x);
          p.chosen.emplace(set, std::move(x));
        } catch (const config::ConfigError& e) {
          throw config::ConfigError(
              fmt::format("{}: sweep: {}: {}", o.experiment.string(), set, e.what()));
        }
      }
    }
  check_keys_of_one_stack(p.spec, p.chosen, o.experiment.string());
  for (size_t i = 0; p.checked && i < n; ++i) {
    const Point pt = p.spec.point(i);
    try {
      note(config::load_over(p.base, o.sets, pt.as_sets()));
    } catch (const config::ConfigError& e) {
      throw config::ConfigError(fmt::format("{}: sweep point {} ({}): {}", o.experiment.string(), i,
                                            fmt::join(pt.as_sets(), " "), e.what()));
    }
  }
  // Run-to-run variance that some point turns on.
  for (const auto& a : p.spec.axes)
    for (size_t k = 0; k < a.keys.size(); ++k)
      for (const auto& t : a.tuples)
        if ((a.keys[k] == "variance.page_colouring" && t[k] == "true") ||
            (a.keys[k] == "variance.link_perturbation_bytes" && t[k] != "0"))
          p.points_vary = true;
  const PointHasher hash_of(p.spec, p.config, profile_refs(p.base));
  p.hashes.resize(n);
  for (size_t i = 0; i < n; ++i) p.hashes[i] = hash_of(i);
  // The sweep's hash: of its base, repeats, and each point's hash and
  // settings, hashed as they come rather than as one text.
  uint64_t h = fnv1a(identity_of(p.config).dump() + "\n" + std::to_string(p.spec.repeats) + "\n");
  std::vector<size_t> at;
  for (size_t i = 0; i < n; ++i) {
    h = fnv1a(hex64(p.hashes[i]) + ":", h);
    p.spec.tuples_of(i, at);
    for (size_t a = 0; a < p.spec.axes.size(); ++a)
      for (size_t k = 0; k < p.spec.axes[a].keys.size(); ++k) {
        h = fnv1a(p.spec.axes[a].keys[k], h);
        h = fnv1a("=", h);
        h = fnv1a(p.spec.axes[a].tuples[at[a]][k], h);
        h = fnv1a(";", h);
      }
    h = fnv1a("\n", h);
  }
  p.hash = hex64(h);
  const fs::path dir = o.output_dir.empty() ? fs::path(p.base.output.dir) : fs::path(o.output_dir);
  std::string stem = p.base.name + "-sweep";
  if (o.shard.n > 1) stem += fmt::format("-shard-{}-of-{}", o.shard.k, o.shard.n);
  p.csv = dir / (stem + ".csv");
  p.manifest = manifest_of(p.csv);
  p.lock = lock_of(p.csv);
  p.dropped = dir / (stem + "-dropped.csv");
  p.runs_dir = dir / (stem + "-runs");
  return p;
}

}  // namespace simloop::sweep
