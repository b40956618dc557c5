#include "sim/engine/explain.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "models/cycle_account.h"
#include "models/fn_ledger.h"
#include "models/optional_models.h"
#include "sim/config/experiment.h"
#include "sim/stack/net/fn_table.h"

namespace simloop::engine {

using nlohmann::json;

namespace {

// Where an error is: a result file as a whole (FILE:1:1), or the named run.
std::string at(const std::string& side) {
  return side.find(' ') == std::string::npos ? side + ":1:1" : side;
}

double number(const json& doc, const std::string& side, const json::json_pointer& p) {
  if (!doc.contains(p) || !doc.at(p).is_number())
    throw ExplainError(
        fmt::format("{}: the result has no number at {} (expected a result JSON written by "
                    "`simloop run` of this version)",
                    at(side), p.to_string()));
  return doc.at(p).get<double>();
}

struct Side {
  std::string label;
  double kpps, cpp, hz;
  std::map<std::string, double> stage;                      // by models::Stage name
  std::map<std::string, std::string> word;                  // the stack's word for each stage
  std::map<std::string, std::map<std::string, double>> fn;  // function -> kind -> cycles
  std::map<std::string, double> misses;                     // function -> misses
  std::vector<std::string> order;                           // functions, as the result lists them
  std::string stack;                                        // the stack that ran ("" unknown)
  std::map<std::string, net::PathRole> role;                // function -> its part of the path
  std::map<int64_t, std::pair<double, double>> sets;        // set -> (misses, stall)
  std::map<int64_t, std::vector<std::string>> symbols;
  double interrupts = 0, interrupt_pct = 0, sleep_s = 0, enobufs = 0, packets = 0;
  // Costs left undetermined (`~`, priced 0) that the run used: key -> its
  // entry of the result's undetermined_costs (a result of an older version
  // lists none).
  std::map<std::string, json> undetermined;
  std::vector<std::string> undetermined_order;  // as the result lists them
};

Side read_side(const json& d, const std::string& label) {
  Side s;
  s.label = label;
  using P = json::json_pointer;
  s.kpps = number(d, label, P("/result/kpps"));
  s.cpp = number(d, label, P("/result/cycles_per_packet"));
  if (s.kpps <= 0 || s.cpp <= 0)
    throw ExplainError(fmt::format("{}: the run sent no packets (kpps {}): nothing to explain",
                                   at(label), s.kpps));
  s.hz = s.kpps * 1e3 * s.cpp;
  s.packets = number(d, label, P("/result/packets"));
  // The stack that ran names the stage columns (a result of a stack this
  // build does not have, by the stages' own names).
  const net::FnTable* fns = config::fn_table_of(d.value("config", json::object()));
  if (fns != nullptr) {
    s.stack = fns->stack();
    for (size_t f : models::ledger_fns(*fns))
      s.role[std::string(models::ledger_fn_name(*fns, f))] = models::ledger_fn_role(*fns, f);
  }
  for (size_t i = 0; i < models::kStageCount; ++i) {
    const auto stage = static_cast<models::Stage>(i);
    const std::string st(models::stage_name(stage));
    s.word[st] = fns != nullptr ? std::string(fns->stage_word(st)) : st;
    // A result written before its stack had words of its own: the stage's name.
    P at("/result/cycles_" + s.word[st]);
    if (!d.contains(at) && d.contains(P("/result/cycles_" + st))) at = P("/result/cycles_" + st);
    // An optional model's stage is there only when the model was on.
    if (!d.contains(at) && models::model_stage(stage)) {
      s.stage[st] = 0;
      continue;
    }
    s.stage[st] = number(d, label, at);
  }
  s.interrupts = number(d, label, P("/result/interrupts"));
  s.interrupt_pct = number(d, label, P("/result/interrupt_pct"));
  s.sleep_s = number(d, label, P("/result/sleep_s"));
  s.enobufs = number(d, label, P("/result/enobufs"));
  if (!d.contains("functions") || !d["functions"].is_array())
    throw ExplainError(fmt::format(
        "{}: the result has no per-function detail (/functions): rerun it with this version",
        at(label)));
  for (const auto& f : d["functions"]) {
    if (!f.contains("function") || !f["function"].is_string())
      throw ExplainError(fmt::format("{}: an entry of /functions has no name", at(label)));
    const std::string name = f["function"];
    if (s.fn.count(name) == 0) s.order.push_back(name);
    for (size_t k = 0; k < models::kCostKindCount; ++k) {
      const std::string kind(models::cost_kind_name(static_cast<models::CostKind>(k)));
      if (!f.contains(kind) || !f[kind].is_number())
        throw ExplainError(
            fmt::format("{}: /functions/{} has no number {}", at(label), name, kind));
      s.fn[name][kind] = f[kind].get<double>();
    }
    s.misses[name] = f.value("i1_misses_per_packet", 0.0);
  }
  for (const auto& u : d.value("undetermined_costs", json::array()))
    if (u.is_object() && u.contains("key") && u["key"].is_string()) {
      s.undetermined[u["key"].get<std::string>()] = u;
      s.undetermined_order.push_back(u["key"].get<std::string>());
    }
  for (const auto& st : d.value("icache_sets", json::array())) {
    const int64_t set = st.value("set", int64_t{-1});
    s.sets[set] = {st.value("misses_per_packet", 0.0), st.value("stall_per_packet", 0.0)};
    s.symbols[set] = st.value("symbols", std::vector<std::string>{});
  }
  return s;
}

// The name of a function's part of the path on side `s` ("other": one its
// stack does not say, as in a result of a stack this build does not have).
std::string role_of(const Side& s, const std::string& fn) {
  const auto it = s.role.find(fn);
  return it == s.role.end() || it->second == net::PathRole::unset
             ? "other"
             : std::string(net::path_role_name(it->second));
}

// The difference part by part of the path (net::PathRole), in path order:
// each side's functions in each part, with their cycles per packet. Every
// function of each side is in one row, so the rows sum to the functions'.
json role_rows(const Side& a, const Side& b, double per_cycle) {
  std::vector<std::string> names;
  for (size_t r = 1; r < net::kPathRoleCount; ++r)
    names.emplace_back(net::path_role_name(static_cast<net::PathRole>(r)));
  names.emplace_back("other");
  json rows = json::array();
  for (const auto& name : names) {
    json row = {{"role", name}, {"a_functions", json::array()}, {"b_functions", json::array()}};
    double ta = 0, tb = 0;
    for (const auto& [side, key, total] :
         {std::tuple{&a, "a_functions", &ta}, std::tuple{&b, "b_functions", &tb}})
      for (const auto& fn : side->order) {
        if (role_of(*side, fn) != name) continue;
        double c = 0;
        for (const auto& [kind, v] : side->fn.at(fn)) c += v;
        *total += c;
        row[key].push_back({{"function", fn}, {"cycles", c}});
      }
    if (row["a_functions"].empty() && row["b_functions"].empty()) continue;
    row["a"] = ta;
    row["b"] = tb;
    row["delta"] = tb - ta;
    row["kpps"] = per_cycle * (tb - ta);
    rows.push_back(std::move(row));
  }
  return rows;
}

// The role rows as text: each role's difference, then each side's
// functions in it with their cycles per packet.
std::string roles_text(const json& roles, const json& stacks) {
  std::string out =
      fmt::format("\nby role across stacks (cycles per packet; A's {} functions, B's {})\n",
                  stacks[0].get<std::string>(), stacks[1].get<std::string>());
  constexpr size_t kWidth = 100;
  // A difference that prints as 0.0 prints without a sign of its rounding.
  auto shown = [](const json& v) {
    return std::abs(v.get<double>()) < 0.05 ? 0.0 : v.get<double>();
  };
  for (const auto& r : roles) {
    out += fmt::format("  {:<20} {:10.1f} {:10.1f} {:+10.1f} {:+9.1f} kpps\n",
                       r["role"].get<std::string>(), r["a"].get<double>(), r["b"].get<double>(),
                       shown(r["delta"]), shown(r["kpps"]));
    for (const auto& [side, key] : {std::pair{"A", "a_functions"}, std::pair{"B", "b_functions"}}) {
      std::string line = fmt::format("    {}  ", side);
      if (r[key].empty()) line += "(none)";
      bool first = true;  // on its line
      for (const auto& f : r[key]) {
        const std::string item =
            fmt::format("{} {:.1f}", f["function"].get<std::string>(), f["cycles"].get<double>());
        if (!first && line.size() + 2 + item.size() > kWidth) {
          out += line + "\n";
          line = "       ";
          first = true;
        }
        line += (first ? "" : "  ") + item;
        first = false;
      }
      out += line + "\n";
    }
  }
  return out;
}

}  // namespace

json explain(const json& a_doc, const json& b_doc, const std::string& label_a,
             const std::string& label_b) {
  const Side a = read_side(a_doc, label_a);
  const Side b = read_side(b_doc, label_b);
  // d kpps for a change of `dc` cycles per packet (at A's clock).
  const double per_cycle = -a.hz / (a.cpp * b.cpp) / 1e3;
  // Clocks derived from rates carry rounding: equal within 1e-9 is equal.
  const double clock_kpps = std::abs(b.hz - a.hz) > 1e-9 * a.hz ? (b.hz - a.hz) / b.cpp / 1e3 : 0.0;
  auto side_json = [](const Side& s, const json& doc) {
    return json{
        {"label", s.label}, {"experiment", doc.value(json::json_pointer("/result/experiment"), "")},
        {"kpps", s.kpps},   {"cycles_per_packet", s.cpp},
        {"clock_hz", s.hz}, {"packets", s.packets}};
  };
  json e;
  e["a"] = side_json(a, a_doc);
  e["b"] = side_json(b, b_doc);
  e["delta"] = {{"kpps", b.kpps - a.kpps}, {"cycles_per_packet", b.cpp - a.cpp}};
  e["clock_kpps"] = clock_kpps;

  json stages = json::array();
  for (size_t i = 0; i < models::kStageCount; ++i) {
    const std::string st(models::stage_name(static_cast<models::Stage>(i)));
    const double d = b.stage.at(st) - a.stage.at(st);
    // Each side's stack's word: both, where they differ.
    const std::string& wa = a.word.at(st);
    const std::string& wb = b.word.at(st);
    stages.push_back({{"stage", wa == wb ? wa : wa + "/" + wb},
                      {"a", a.stage.at(st)},
                      {"b", b.stage.at(st)},
                      {"delta", d},
                      {"kpps", per_cycle * d}});
  }
  e["stages"] = stages;

  std::set<std::string> names;
  for (const auto& [n, k] : a.fn) names.insert(n);
  for (const auto& [n, k] : b.fn) names.insert(n);
  json fns = json::array();
  json parts = json::array();  // function x kind: the waterfall's parts
  // Keep A's order (its stack's, as its result lists them), then any other name.
  std::vector<std::string> order = a.order;
  for (const auto& n : names)
    if (std::find(order.begin(), order.end(), n) == order.end()) order.push_back(n);
  // The sides on which a function's own cost is undetermined ("A", "B",
  // "A and B"; "" for neither).
  auto undetermined_on = [&a, &b](const std::string& fn) {
    const std::string key = "stack.functions." + fn;
    const bool in_a = a.undetermined.count(key) != 0, in_b = b.undetermined.count(key) != 0;
    return in_a && in_b ? std::string("A and B") : in_a ? "A" : in_b ? "B" : "";
  };
  for (const auto& n : order) {
    auto get = [&n](const Side& s, const std::string& kind) {
      auto it = s.fn.find(n);
      if (it == s.fn.end()) return 0.0;
      auto k = it->second.find(kind);
      return k == it->second.end() ? 0.0 : k->second;
    };
    double ta = 0, tb = 0;
    json kinds = json::object();
    for (size_t k = 0; k < models::kCostKindCount; ++k) {
      const std::string kind(models::cost_kind_name(static_cast<models::CostKind>(k)));
      const double va = get(a, kind), vb = get(b, kind);
      ta += va;
      tb += vb;
      kinds[kind] = vb - va;
      if (vb != va)
        parts.push_back(
            {{"function", n}, {"kind", kind}, {"delta", vb - va}, {"kpps", per_cycle * (vb - va)}});
    }
    const double ma = a.misses.count(n) ? a.misses.at(n) : 0.0;
    const double mb = b.misses.count(n) ? b.misses.at(n) : 0.0;
    fns.push_back({{"function", n},
                   {"a", ta},
                   {"b", tb},
                   {"delta", tb - ta},
                   {"kpps", per_cycle * (tb - ta)},
                   {"kinds", kinds},
                   {"misses_a", ma},
                   {"misses_b", mb},
                   {"misses_delta", mb - ma}});
    if (const std::string on = undetermined_on(n); !on.empty()) fns.back()["undetermined"] = on;
    fns.back()["role"] = a.fn.count(n) != 0 ? role_of(a, n) : role_of(b, n);
  }
  e["functions"] = fns;
  e["stacks"] = {a.stack, b.stack};
  e["roles"] = role_rows(a, b, per_cycle);
  // Each cost left undetermined that a side used: how much a packet, per side.
  // In A's order (its schema's), then B's.
  std::vector<std::string> keys = a.undetermined_order;
  for (const auto& k : b.undetermined_order)
    if (a.undetermined.count(k) == 0) keys.push_back(k);
  json undetermined = json::array();
  for (const auto& k : keys) {
    json row = {{"key", k}};
    for (const auto& [name, side] : {std::pair{"a", &a}, std::pair{"b", &b}}) {
      const auto it = side->undetermined.find(k);
      if (it == side->undetermined.end()) {
        row[name] = nullptr;
        continue;
      }
      row[name] = it->second.value("per_packet", 0.0);
      row["unit"] = it->second.value("unit", "");
      if (it->second.contains("function")) row["function"] = it->second["function"];
    }
    undetermined.push_back(std::move(row));
  }
  e["undetermined"] = undetermined;
  std::stable_sort(parts.begin(), parts.end(), [](const json& x, const json& y) {
    return std::abs(x["kpps"].get<double>()) > std::abs(y["kpps"].get<double>());
  });
  e["parts"] = parts;

  std::set<int64_t> set_ids;
  for (const auto& [s, v] : a.sets) set_ids.insert(s);
  for (const auto& [s, v] : b.sets) set_ids.insert(s);
  json sets = json::array();
  for (int64_t s : set_ids) {
    const auto pa = a.sets.count(s) ? a.sets.at(s) : std::pair<double, double>{0, 0};
    const auto pb = b.sets.count(s) ? b.sets.at(s) : std::pair<double, double>{0, 0};
    std::set<std::string> syms;
    for (const Side* side : {&a, &b})
      if (side->symbols.count(s))
        syms.insert(side->symbols.at(s).begin(), side->symbols.at(s).end());
    sets.push_back({{"set", s},
                    {"misses_a", pa.first},
                    {"misses_b", pb.first},
                    {"misses_delta", pb.first - pa.first},
                    {"stall_delta", pb.second - pa.second},
                    {"kpps", per_cycle * (pb.second - pa.second)},
                    {"symbols", std::vector<std::string>(syms.begin(), syms.end())}});
  }
  std::stable_sort(sets.begin(), sets.end(), [](const json& x, const json& y) {
    return std::abs(x["stall_delta"].get<double>()) > std::abs(y["stall_delta"].get<double>());
  });
  e["icache_sets"] = sets;

  auto per_packet = [](double v, const Side& s) { return s.packets > 0 ? v / s.packets : 0.0; };
  e["events"] = {
      {"interrupts_per_packet", {per_packet(a.interrupts, a), per_packet(b.interrupts, b)}},
      {"interrupt_pct", {a.interrupt_pct, b.interrupt_pct}},
      {"enobufs", {a.enobufs, b.enobufs}},
      {"sleep_s", {a.sleep_s, b.sleep_s}},
      {"cycles_interrupt", {a.stage.at("interrupt"), b.stage.at("interrupt")}},
      {"cycles_sleep", {a.stage.at("sleep"), b.stage.at("sleep")}},
      {"cycles_idle", {a.stage.at("idle"), b.stage.at("idle")}}};

  // The waterfall: A's rate, the clock, the largest parts, the rest, B's rate.
  json steps = json::array();
  if (clock_kpps != 0) steps.push_back({{"label", "clock"}, {"kpps", clock_kpps}});
  constexpr size_t kBars = 12;
  double rest = 0;
  size_t rest_n = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const double k = parts[i]["kpps"].get<double>();
    if (i < kBars) {
      steps.push_back({{"label", fmt::format("{} {}", parts[i]["function"].get<std::string>(),
                                             parts[i]["kind"].get<std::string>())},
                       {"kpps", k}});
    } else {
      rest += k;
      ++rest_n;
    }
  }
  if (rest_n > 0)
    steps.push_back({{"label", fmt::format("{} other parts", rest_n)}, {"kpps", rest}});
  e["waterfall"] = {{"from", a.kpps}, {"to", b.kpps}, {"steps", steps}};
  return e;
}

std::string explain_table(const json& e, size_t top) {
  const auto& a = e["a"];
  const auto& b = e["b"];
  std::string out;
  out +=
      fmt::format("A: {}\nB: {}\n\n", a["label"].get<std::string>(), b["label"].get<std::string>());
  out += fmt::format("{:<22} {:>10} {:>10} {:>10}\n", "", "A", "B", "B-A");
  out += fmt::format("{:<22} {:10.1f} {:10.1f} {:+10.1f}\n", "kpps", a["kpps"].get<double>(),
                     b["kpps"].get<double>(), e["delta"]["kpps"].get<double>());
  out += fmt::format("{:<22} {:10.1f} {:10.1f} {:+10.1f}\n", "cycles per packet",
                     a["cycles_per_packet"].get<double>(), b["cycles_per_packet"].get<double>(),
                     e["delta"]["cycles_per_packet"].get<double>());
  if (e["clock_kpps"].get<double>() != 0)
    out += fmt::format("{:<22} {:10.3g} {:10.3g}   clock: {:+.1f} kpps\n", "clock Hz",
                       a["clock_hz"].get<double>(), b["clock_hz"].get<double>(),
                       e["clock_kpps"].get<double>());

  // Rows of one split: the `top` largest by |delta|, then the rest in one row.
  // Differences that print as 0.0 cycles are not listed (the JSON keeps
  // them, and the parts there still sum exactly).
  const double noise = 0.05;
  auto split = [&out, top, noise](const json& rows, const std::string& key,
                                  const std::string& title, auto&& extra) {
    std::vector<const json*> v;
    for (const auto& r : rows)
      if (std::abs(r["delta"].get<double>()) > noise) v.push_back(&r);
    std::stable_sort(v.begin(), v.end(), [](const json* x, const json* y) {
      return std::abs((*x)["delta"].get<double>()) > std::abs((*y)["delta"].get<double>());
    });
    out += fmt::format("\nby {} (cycles per packet){}\n", title, extra(nullptr));
    double rest = 0, rest_k = 0;
    for (size_t i = 0; i < v.size(); ++i) {
      const json& r = *v[i];
      if (i >= top) {
        rest += r["delta"].get<double>();
        rest_k += r["kpps"].get<double>();
        continue;
      }
      out += fmt::format("  {:<20} {:10.1f} {:10.1f} {:+10.1f} {:+9.1f} kpps{}\n",
                         r.value("label", r[key].get<std::string>()), r["a"].get<double>(),
                         r["b"].get<double>(), r["delta"].get<double>(), r["kpps"].get<double>(),
                         extra(&r));
    }
    if (v.size() > top)
      out += fmt::format("  {:<20} {:>10} {:>10} {:+10.1f} {:+9.1f} kpps\n",
                         fmt::format("({} more)", v.size() - top), "", "", rest, rest_k);
    if (v.empty()) out += "  (no difference)\n";
  };
  // A stage that is not what its name says carries a label and a note (the
  // caller's: simloop explain names a fitted profile's fixed costs).
  split(e["stages"], "stage", "stage", [](const json* r) -> std::string {
    if (r == nullptr || !r->contains("note")) return "";
    return "  (" + (*r)["note"].get<std::string>() + ")";
  });
  // Across stacks no function is the other's: they line up by role.
  const json stacks = e.value("stacks", json::array());
  if (stacks.size() == 2 && stacks[0] != stacks[1] && stacks[0] != "" && stacks[1] != "")
    out += roles_text(e["roles"], stacks);
  split(e["functions"], "function", "function", [](const json* r) -> std::string {
    if (r == nullptr) return "; B-A by kind, I1 misses per packet A -> B";
    const std::string undetermined = r->contains("undetermined")
                                         ? fmt::format("  (cost undetermined on {}: priced 0)",
                                                       (*r)["undetermined"].get<std::string>())
                                         : "";
    std::string kinds;
    for (const auto& [k, v] : (*r)["kinds"].items())
      if (v.get<double>() != 0) kinds += fmt::format(" {} {:+.1f}", k, v.get<double>());
    std::string m;
    if ((*r)["misses_a"].get<double>() != 0 || (*r)["misses_b"].get<double>() != 0)
      m = fmt::format("  I1 {:.2f} -> {:.2f}", (*r)["misses_a"].get<double>(),
                      (*r)["misses_b"].get<double>());
    return " " + kinds + m + undetermined;
  });
  // Costs no measurement fixes (`~` in a profile): each run priced them 0,
  // so neither its rate nor the difference holds them.
  if (!e.value("undetermined", json::array()).empty()) {
    out += "\ncosts left undetermined (`~`) and priced 0 that the runs used, per packet\n";
    auto side = [](const json& v) {
      return v.is_null() ? std::string("-") : fmt::format("{:.4g}", v.get<double>());
    };
    for (const auto& u : e["undetermined"])
      out += fmt::format("  {:<20} {:>10} {:>10}  {}\n",
                         u.value("function", u["key"].get<std::string>()), side(u["a"]),
                         side(u["b"]), u.value("unit", ""));
  }

  const auto& sets = e["icache_sets"];
  size_t shown = 0;
  std::string srows;
  for (const auto& s : sets) {
    if (s["stall_delta"].get<double>() == 0 && s["misses_delta"].get<double>() == 0) continue;
    if (shown++ == top) break;
    std::string syms;
    for (const auto& y : s["symbols"]) {
      if (!syms.empty()) syms += ' ';
      syms += y.get<std::string>();
    }
    srows += fmt::format(
        "  set {:<5} misses {:6.2f} -> {:6.2f}  stall {:+8.1f}  {:+7.1f} kpps  {}\n",
        s["set"].get<int64_t>(), s["misses_a"].get<double>(), s["misses_b"].get<double>(),
        s["stall_delta"].get<double>(), s["kpps"].get<double>(), syms);
  }
  if (!srows.empty()) out += "\nL1 I-cache sets that gained or lost misses (per packet)\n" + srows;

  const auto& ev = e["events"];
  out += "\n";
  out += fmt::format("interrupts per packet  {:.3f} -> {:.3f} ({:.1f} % -> {:.1f} % of the time)\n",
                     ev["interrupts_per_packet"][0].get<double>(),
                     ev["interrupts_per_packet"][1].get<double>(),
                     ev["interrupt_pct"][0].get<double>(), ev["interrupt_pct"][1].get<double>());
  out += fmt::format(
      "ENOBUFS sleep          {:.0f} -> {:.0f} times, {:.4f} -> {:.4f} s "
      "({:.1f} -> {:.1f} cycles per packet)\n",
      ev["enobufs"][0].get<double>(), ev["enobufs"][1].get<double>(),
      ev["sleep_s"][0].get<double>(), ev["sleep_s"][1].get<double>(),
      ev["cycles_sleep"][0].get<double>(), ev["cycles_sleep"][1].get<double>());
  out += fmt::format("idle (unexplained)     {:.1f} -> {:.1f} cycles per packet\n",
                     ev["cycles_idle"][0].get<double>(), ev["cycles_idle"][1].get<double>());
  return out;
}

}  // namespace simloop::engine
