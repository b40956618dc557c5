// simloop explain: why two runs differ.
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "models/cycle_account.h"
#include "sim/engine/explain.h"
#include "sim/report/table.h"
#include "sim/support/text.h"
#include "sim/tools/cli/child.h"
#include "sim/tools/cli/commands.h"

namespace simloop::cli {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

bool is_result_json(const std::string& file) {
  return fs::path(file).extension() == ".json";
}

// A result document from disk; a syntax error names file, line and column.
json read_result(const std::string& file) {
  const std::string text =
      read_input_file(file, "a result JSON written by simloop run", size_t{64} << 20);
  try {
    json j = json::parse(text);
    if (!j.is_object() || !j.contains("result"))
      throw UserError(
          fmt::format("{}:1:1: expected a result JSON written by simloop run (an object with "
                      "\"result\")",
                      file));
    return j;
  } catch (const json::parse_error& e) {
    const auto at = support::json_error_position(text, e.byte);
    throw UserError(
        fmt::format("{}:{}:{}: not valid JSON (expected a result JSON written by "
                    "simloop run)",
                    file, at.line, at.col));
  }
}

// Runs `x` in a child process (SimGrid keeps global state) and returns the
// document `simloop run` would write.
json run_in_child(const config::Experiment& x) {
  const ChildResult c = json_from_child([&x] {
    engine::route_simgrid_log_to_spdlog();
    return run_document(x, engine::simulate(x));
  });
  if (!c.doc) throw std::runtime_error(fmt::format("the simulation of {} crashed", x.name));
  if (c.doc->contains("error")) throw std::runtime_error((*c.doc)["error"].get<std::string>());
  return *c.doc;
}

// A stage that is not what its name says on a side (a fitted profile's fixed
// cost, config::stage_meaning) gets its label and a note saying so.
void name_fitted_stages(json& e, const std::vector<json>& docs) {
  const json none = json::object();
  // The stages in models::Stage order; each named in its sides' own words.
  for (size_t i = 0; i < e["stages"].size() && i < models::kStageCount; ++i) {
    json& s = e["stages"][i];
    const std::string st(models::stage_name(static_cast<models::Stage>(i)));
    const auto ma = config::stage_meaning(docs[0].value("config", none), st);
    const auto mb = config::stage_meaning(docs[1].value("config", none), st);
    if (ma.note.empty() && mb.note.empty()) continue;
    if (ma.label == mb.label && !ma.label.empty()) s["label"] = ma.label;
    s["note"] = ma.note == mb.note ? ma.note
                : mb.note.empty()  ? "A: " + ma.note
                : ma.note.empty()  ? "B: " + mb.note
                                   : "A: " + ma.note + "; B: " + mb.note;
  }
}

// A configuration as dot paths and values.
void flatten(const json& j, const std::string& prefix, std::map<std::string, json>& out) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) flatten(v, prefix.empty() ? k : prefix + "." + k, out);
    return;
  }
  out[prefix] = j;
}

std::string text_of(const json* v) {
  if (v == nullptr) return "-";
  if (v->is_string()) return v->get<std::string>().empty() ? "\"\"" : v->get<std::string>();
  if (v->is_number_float()) return report::format_value(v->get<double>());
  return v->dump();
}

// What B's configuration changes of A's, key by key (a run's configuration
// as its result JSON holds it): a machine or stack of another name is one
// line, with how many of its keys differ; each other key is its own line.
// A key one side does not have (a key of the other stack) shows as "-".
// The experiment's name, descriptions and output.* are left out.
json config_differences(const json& a, const json& b) {
  std::map<std::string, json> fa, fb;
  flatten(a, "", fa);
  flatten(b, "", fb);
  std::set<std::string> keys;
  for (const auto& [k, v] : fa) keys.insert(k);
  for (const auto& [k, v] : fb) keys.insert(k);
  auto at = [](const std::map<std::string, json>& m, const std::string& k) -> const json* {
    const auto it = m.find(k);
    return it == m.end() ? nullptr : &it->second;
  };
  auto differs = [&](const std::string& k) {
    const json *x = at(fa, k), *y = at(fb, k);
    return (x == nullptr) != (y == nullptr) || (x != nullptr && *x != *y);
  };
  json out = json::array();
  std::set<std::string> said;
  const bool stacks = differs("stack.kind");
  for (const std::string profile : {"machine", "stack"}) {
    if (!differs(profile + ".name")) continue;
    size_t more = 0;
    for (const auto& k : keys) {
      // Of another stack kind, the keys only one of them takes (options.copy,
      // options.linux.*) are the stack's too.
      const bool own =
          k.starts_with(profile + ".") ||
          (profile == "stack" && stacks && (at(fa, k) == nullptr) != (at(fb, k) == nullptr));
      if (own && differs(k)) {
        said.insert(k);
        if (k != profile + ".name" && k != profile + ".description") ++more;
      }
    }
    json line = {{"key", profile},
                 {"a", text_of(at(fa, profile + ".name"))},
                 {"b", text_of(at(fb, profile + ".name"))},
                 {"keys", more}};
    if (profile == "stack" && stacks)
      line["kind"] = {text_of(at(fa, "stack.kind")), text_of(at(fb, "stack.kind"))};
    out.push_back(line);
  }
  for (const auto& k : keys) {
    // What names or places a run, not what it runs: the A and B lines say it.
    if (said.contains(k) || !differs(k) || k.starts_with("output.") || k == "name" ||
        k == "description" || k.ends_with(".description"))
      continue;
    out.push_back({{"key", k}, {"a", text_of(at(fa, k))}, {"b", text_of(at(fb, k))}});
  }
  return out;
}

std::string differences_text(const json& diffs) {
  if (diffs.empty()) return "configuration: B's is A's in every key\n";
  size_t width = 0;
  for (const auto& d : diffs) width = std::max(width, d["key"].get<std::string>().size());
  std::string out = fmt::format("configuration: B differs from A in {} {}\n", diffs.size(),
                                diffs.size() == 1 ? "key" : "keys");
  for (const auto& d : diffs) {
    out += fmt::format("  {:<{}}  {} -> {}", d["key"].get<std::string>(), width,
                       d["a"].get<std::string>(), d["b"].get<std::string>());
    if (d.contains("kind"))
      out += fmt::format(" (the {} stack -> the {})", d["kind"][0].get<std::string>(),
                         d["kind"][1].get<std::string>());
    if (d.contains("keys") && d["keys"].get<size_t>() > 0)
      out += fmt::format(", and {} of its keys", d["keys"].get<size_t>());
    out += "\n";
  }
  return out;
}

// A warning when A's and B's machines are of other eras or their costs
// were made otherwise (machine.year, machine.costs, where both say): the
// difference is then of two hosts, not only of what was changed. "" if not.
std::string era_warning(const json& a, const json& b) {
  auto get = [](const json& c, const char* key) -> json {
    const json::json_pointer p(std::string("/machine/") + key);
    return c.contains(p) ? c.at(p) : json();
  };
  const json ya = get(a, "year"), yb = get(b, "year"), ca = get(a, "costs"), cb = get(b, "costs");
  const bool years = ya.is_number_integer() && yb.is_number_integer() && ya.get<int>() > 0 &&
                     yb.get<int>() > 0 && std::abs(ya.get<int>() - yb.get<int>()) >= 5;
  const bool costs =
      ca.is_string() && cb.is_string() && ca != "unknown" && cb != "unknown" && ca != cb;
  if (!years && !costs) return "";
  auto host = [&](const json& c, const json& y, const json& k) {
    const json name = get(c, "name");
    std::vector<std::string> what;
    if (y.is_number_integer() && y.get<int>() > 0) what.push_back(std::to_string(y.get<int>()));
    if (k.is_string() && k != "unknown") what.push_back(k.get<std::string>() + " costs");
    return fmt::format("{} ({})", name.is_string() ? name.get<std::string>() : "?",
                       fmt::join(what, ", "));
  };
  return fmt::format(
      "A's machine is {} and B's {}: B-A compares two hosts {}, not one change on one host",
      host(a, ya, ca), host(b, yb, cb),
      years && costs ? "of other eras, their costs made otherwise"
      : years        ? "of other eras"
                     : "whose costs were made otherwise");
}

struct Args {
  std::string a, b, output, plot;
  std::vector<std::string> sets, a_sets, b_sets;
  size_t top = 10;
};

std::string label_of(const std::string& file, const std::vector<std::string>& sets) {
  std::string l = file;
  for (const auto& s : sets) l += " --set " + s;
  return l;
}

int explain_cmd(const Args& a) {
  const std::string b_file = a.b.empty() ? a.a : a.b;
  if (a.b.empty() && a.a_sets.empty() && a.b_sets.empty())
    throw UserError(
        "explain needs two runs: two experiment files, two result JSONs, or one experiment with "
        "--a-set/--b-set for each side",
        2);
  std::vector<std::pair<std::string, std::vector<std::string>>> sides = {{a.a, a.a_sets},
                                                                         {b_file, a.b_sets}};
  // Load and check everything before any simulation runs.
  std::vector<json> docs(2);
  std::vector<std::optional<config::Experiment>> xs(2);
  std::vector<std::string> labels(2);
  for (size_t i = 0; i < 2; ++i) {
    const auto& [file, own] = sides[i];
    if (is_result_json(file)) {
      if (!own.empty() || !a.sets.empty())
        throw UserError(fmt::format("{}: a result JSON takes no --set/--a-set/--b-set (it says "
                                    "what ran); give an experiment file to vary",
                                    file),
                        2);
      docs[i] = read_result(file);
      labels[i] = file;
    } else {
      auto sets = a.sets;
      sets.insert(sets.end(), own.begin(), own.end());
      xs[i] = load_user_experiment(file, sets);
      labels[i] = label_of(file, sets);
    }
  }
  for (size_t i = 0; i < 2; ++i)
    if (xs[i]) {
      spdlog::info("simulating {} ({})", i == 0 ? "A" : "B", labels[i]);
      docs[i] = run_in_child(*xs[i]);
    }
  json e;
  try {
    e = engine::explain(docs[0], docs[1], labels[0], labels[1]);
  } catch (const engine::ExplainError& err) {
    throw UserError(err.what(), 2);
  }
  name_fitted_stages(e, docs);
  const json none = json::object();
  const json ca = docs[0].value("config", none), cb = docs[1].value("config", none);
  e["config_differences"] = config_differences(ca, cb);
  if (const std::string w = era_warning(ca, cb); !w.empty()) {
    spdlog::warn("{}", w);
    e["warnings"] = json::array({w});
  }
  // What differs in the configuration, after the table's A and B lines
  // (its first paragraph), before what differs in the run.
  std::string table = engine::explain_table(e, a.top);
  const size_t head = table.find("\n\n");
  const std::string diffs = differences_text(e["config_differences"]);
  if (head == std::string::npos)
    table = diffs + "\n" + table;
  else
    table.insert(head + 2, diffs + "\n");
  std::cout << table;
  if (!a.output.empty()) {
    report::write_file_atomic(a.output, e.dump(2) + "\n");
    std::cout << "wrote " << a.output << "\n";
  }
  return 0;
}

}  // namespace

void add_explain(CLI::App& app, std::vector<Command>& commands) {
  auto a = std::make_shared<Args>();
  auto* c = app.add_subcommand(
      "explain",
      "Why two runs differ: the kpps and cycles per packet of B against A, split by stage, by "
      "function and kind of cost (per event, per byte, copies, misaligned accesses, I-cache "
      "stalls), the I-cache sets that gained or lost misses with their symbols, interrupts, idle "
      "time and ENOBUFS sleep. Every split sums to the total.\n"
      "A and B are experiment files (simulated here, each in its own process) or result JSONs "
      "written by simloop run; with one experiment, --a-set and --b-set make the two sides.\n"
      "Draw the waterfall with: simloop plot EXPLAIN.json (from -o).\n"
      "Exit status: 0 ok, 2 bad input, 4 -o could not be written.");
  c->add_option("A", a->a, "Experiment YAML or result JSON")->required();
  c->add_option("B", a->b, "Experiment YAML or result JSON (default: A, with --b-set)");
  c->add_option("--set", a->sets, "Override a key on both sides: path.to.key=value (repeatable)");
  c->add_option("--a-set", a->a_sets, "Override a key on side A only (repeatable)");
  c->add_option("--b-set", a->b_sets, "Override a key on side B only (repeatable)");
  c->add_option("-o,--output", a->output, "Write the whole explanation as JSON");
  c->add_option("--top", a->top, "Rows shown per split (the rest in one row; default 10)")
      ->check(CLI::Range(size_t{1}, size_t{1000}));
  commands.push_back({c, [a] { return explain_cmd(*a); }});
}

}  // namespace simloop::cli
