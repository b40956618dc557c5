#include "sim/config/schema.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <type_traits>
#include <variant>

#include "sim/stack/stack_set.h"

namespace simloop::config {

namespace detail {

using nlohmann::json;

[[noreturn]] void fail(const Loc& loc, const std::string& key, const std::string& msg) {
  throw ConfigError(located(loc, key, msg));
}

std::string_view kind_name(Kind k) {
  switch (k) {
    case Kind::integer:
      return "integer";
    case Kind::number:
      return "number";
    case Kind::boolean:
      return "boolean";
    case Kind::text:
      return "string";
    case Kind::choice:
      return "choice";
  }
  return "?";
}

std::string range_text(double lo, double hi) {
  if (std::isinf(lo) && std::isinf(hi)) return "";
  if (std::isinf(hi)) return fmt::format(" >= {}", lo);
  return fmt::format(" in [{}, {}]", lo, hi);
}

Field undeterminable(Field f) {
  f.set = [set = std::move(f.set), path = f.path](Experiment& x, const YAML::Node& n,
                                                  const Loc& loc) {
    if (!n.IsNull()) {
      set(x, n, loc);
      x.undetermined.erase(path);
      return;
    }
    // Priced 0 while undetermined: set as the key's own setter would (a
    // function of another stack is refused there).
    YAML::Node zero(0);
    set(x, zero, loc);
    x.undetermined[path] =
        loc.file.empty() ? "--set" : fmt::format("{}:{}:{}", loc.file, loc.line, loc.col);
  };
  f.get = [get = std::move(f.get), path = f.path](const Experiment& x) {
    return x.undetermined.count(path) != 0 ? json() : get(x);
  };
  return f;
}

bool applies(const Field& f, const Experiment& x) {
  return f.stacks.empty() ||
         std::find(f.stacks.begin(), f.stacks.end(), x.stack.fns->stack()) != f.stacks.end();
}

void check_applies(const Field& f, const Experiment& x, const Loc& loc) {
  if (applies(f, x)) return;
  fail(loc, f.path,
       fmt::format("applies to the {} stack only; this experiment runs the {} stack (stack.kind "
                   "of its stack profile)",
                   fmt::join(f.stacks, " and "), x.stack.fns->stack()));
}

namespace {

double parse_number(const YAML::Node& n, const Loc& loc, const std::string& key, bool integer,
                    double lo, double hi) {
  const std::string expected =
      fmt::format("expected {}{}", integer ? "an integer" : "a number", range_text(lo, hi));
  if (!n.IsScalar()) fail(loc, key, expected + ", got " + scalar_text(n));
  // A quoted scalar is a string, whatever it spells ("18", '2.4e9').
  if (n.Tag() == "!")
    fail(loc, key, expected + ", got the quoted string " + scalar_text(n) + " (drop the quotes)");
  double v;
  try {
    if (integer) {
      v = static_cast<double>(n.as<long long>());
    } else {
      v = n.as<double>();
    }
  } catch (const YAML::Exception&) {
    fail(loc, key, expected + ", got " + scalar_text(n));
  }
  if (!std::isfinite(v) || v < lo || v > hi) fail(loc, key, expected + ", got " + scalar_text(n));
  return v;
}

template <class Acc>
Field integer(std::string path, std::string doc, double lo, double hi, Acc acc) {
  Field f{std::move(path), Kind::integer, std::move(doc), lo, hi, {}, {}, {}};
  f.set = [acc, lo, hi, p = f.path](Experiment& x, const YAML::Node& n, const Loc& loc) {
    using T = std::decay_t<decltype(acc(x))>;
    acc(x) = static_cast<T>(parse_number(n, loc, p, true, lo, hi));
  };
  f.get = [acc](const Experiment& x) { return json(acc(const_cast<Experiment&>(x))); };
  return f;
}

template <class Acc>
Field number(std::string path, std::string doc, double lo, double hi, Acc acc) {
  Field f{std::move(path), Kind::number, std::move(doc), lo, hi, {}, {}, {}};
  f.set = [acc, lo, hi, p = f.path](Experiment& x, const YAML::Node& n, const Loc& loc) {
    acc(x) = parse_number(n, loc, p, false, lo, hi);
  };
  f.get = [acc](const Experiment& x) { return json(acc(const_cast<Experiment&>(x))); };
  return f;
}

template <class Acc>
Field boolean(std::string path, std::string doc, Acc acc) {
  Field f{std::move(path), Kind::boolean, std::move(doc), 0, 1, {}, {}, {}};
  f.set = [acc, p = f.path](Experiment& x, const YAML::Node& n, const Loc& loc) {
    bool v = false;
    bool ok = n.IsScalar();
    if (ok) {
      try {
        v = n.as<bool>();
      } catch (const YAML::Exception&) {
        ok = false;
      }
    }
    if (!ok) fail(loc, p, "expected true or false, got " + scalar_text(n));
    acc(x) = v;
  };
  f.get = [acc](const Experiment& x) { return json(acc(const_cast<Experiment&>(x))); };
  return f;
}

template <class Acc>
Field text(std::string path, std::string doc, Acc acc) {
  Field f{std::move(path), Kind::text, std::move(doc), 0, 0, {}, {}, {}};
  f.set = [acc, p = f.path](Experiment& x, const YAML::Node& n, const Loc& loc) {
    if (!n.IsScalar()) fail(loc, p, "expected a string, got " + scalar_text(n));
    acc(x) = n.Scalar();
  };
  f.get = [acc](const Experiment& x) { return json(acc(const_cast<Experiment&>(x))); };
  return f;
}

// An enumeration, stored through `to` and read back through `from`.
template <class To, class From>
Field choice(std::string path, std::string doc, const std::vector<std::string>& choices, To to,
             From from) {
  Field f{std::move(path), Kind::choice, std::move(doc), 0, 0, choices, {}, {}};
  f.set = [to, choices, p = f.path](Experiment& x, const YAML::Node& n, const Loc& loc) {
    const std::string expected = fmt::format("expected one of {}", fmt::join(choices, ", "));
    if (!n.IsScalar()) fail(loc, p, expected + ", got " + scalar_text(n));
    if (std::find(choices.begin(), choices.end(), n.Scalar()) == choices.end())
      fail(loc, p, expected + ", got " + scalar_text(n));
    to(x, n.Scalar());
  };
  f.get = [from](const Experiment& x) { return json(std::string(from(x))); };
  return f;
}

// stack.kind: which real stack runs. Named before the functions it prices;
// a profile's functions are of one stack, so the kind cannot change under
// functions already priced.
Field stack_kind() {
  std::vector<std::string> names, what;
  for (const auto& [name, doc] : stacks::descriptions()) {
    names.push_back(name);
    what.push_back(fmt::format("{} ({})", name, doc));
  }
  Field f{"stack.kind",
          Kind::choice,
          fmt::format("Which real stack runs: {}. A profile names it before its functions; it "
                      "selects which stack.functions keys exist.",
                      fmt::join(what, ", ")),
          0,
          0,
          names,
          {},
          {}};
  f.set = [names](Experiment& x, const YAML::Node& n, const Loc& loc) {
    const std::string expected = fmt::format("expected one of {}", fmt::join(names, ", "));
    if (!n.IsScalar()) fail(loc, "stack.kind", expected + ", got " + scalar_text(n));
    const net::FnTable* t = stacks::find_fn_table(n.Scalar());
    if (t == nullptr) fail(loc, "stack.kind", expected + ", got " + scalar_text(n));
    if (t == x.stack.fns) return;
    const bool priced = std::any_of(x.stack.fn_cycles.begin(), x.stack.fn_cycles.end(),
                                    [](double c) { return c != 0; });
    if (priced)
      fail(loc, "stack.kind",
           fmt::format("the stack profile already prices the functions of the {} stack; name a "
                       "{} stack profile instead (stack: NAME, or use: NAME in a stack map)",
                       x.stack.fns->stack(), n.Scalar()));
    x.stack.fns = t;
  };
  f.get = [](const Experiment& x) { return json(std::string(x.stack.fns->stack())); };
  return f;
}

// stack.functions.NAME for every function name of every stack, each once:
// the key prices the function of that name in the stack that runs.
void add_function_keys(const std::function<void(Field)>& add) {
  std::vector<std::pair<std::string_view, std::vector<std::string>>> names;
  for (const net::FnTable* t : stacks::fn_tables())
    for (const auto& fn : t->fns()) {
      auto it = std::find_if(names.begin(), names.end(),
                             [&](const auto& e) { return e.first == fn.name; });
      if (it == names.end()) it = names.insert(names.end(), {fn.name, {}});
      it->second.emplace_back(t->stack());
    }
  for (const auto& [name, stacks] : names) {
    const std::string path = fmt::format("stack.functions.{}", name);
    Field f{path,
            Kind::number,
            fmt::format("Cycles per call of {} (a call that finds nothing to do, such as a poll "
                        "of an empty queue, costs none).",
                        name),
            0,
            1e7,
            {},
            {},
            {}};
    f.cost = true;
    f.stacks = stacks;
    f.set = [path, fn = std::string(name)](Experiment& x, const YAML::Node& n, const Loc& loc) {
      const double v = parse_number(n, loc, path, false, 0, 1e7);
      const auto id = x.stack.fns->find(fn);
      if (!id)
        fail(loc, path,
             fmt::format("{} is not a function of the {} stack", fn, x.stack.fns->stack()));
      x.stack.fn_cycles[net::index(*id)] = v;
    };
    f.get = [fn = std::string(name)](const Experiment& x) {
      const auto id = x.stack.fns->find(fn);
      return id ? json(x.stack.fn_cycles[net::index(*id)]) : json();
    };
    add(std::move(f));
  }
}

// A key of a stack's own options, as its kind declares it (stack_set.h).
Field stack_key(const stacks::StackKey& k) {
  const Kind kind = std::holds_alternative<bool>(k.type)  ? Kind::boolean
                    : std::holds_alternative<int>(k.type) ? Kind::integer
                                                          : Kind::number;
  Field f{k.path, kind, k.doc, kind == Kind::boolean ? 0 : k.lo, kind == Kind::boolean ? 1 : k.hi,
          {},     {},   {}};
  f.set = [k, kind](Experiment& x, const YAML::Node& n, const Loc& loc) {
    if (kind != Kind::boolean) {
      const double v = parse_number(n, loc, k.path, kind == Kind::integer, k.lo, k.hi);
      k.set(x.stack_options,
            kind == Kind::integer ? stacks::KeyValue(static_cast<int>(v)) : stacks::KeyValue(v));
      return;
    }
    bool ok = n.IsScalar(), v = false;
    if (ok) {
      try {
        v = n.as<bool>();
      } catch (const YAML::Exception&) {
        ok = false;
      }
    }
    if (!ok) fail(loc, k.path, "expected true or false, got " + scalar_text(n));
    k.set(x.stack_options, v);
  };
  f.get = [k](const Experiment& x) {
    return std::visit([](auto v) { return json(v); }, k.get(x.stack_options));
  };
  f.stacks = {k.stack};
  return f;
}

}  // namespace

// The keys a table declares beside its struct (support/key_spec.h), under
// `prefix`; `acc` finds the struct in an experiment. A key shared between
// stacks applies to those that honour it (their kinds say which).
template <class C, size_t N, class Acc>
void Schema::add_keys(std::string_view prefix, const std::array<support::KeySpec<C>, N>& keys,
                      Acc acc) {
  for (const support::KeySpec<C>& k : keys) {
    std::string path = fmt::format("{}.{}", prefix, k.name);
    std::string doc(k.doc);
    if (std::holds_alternative<std::monostate>(k.field)) {
      section(std::move(path), std::move(doc));
      continue;
    }
    Field f = std::visit(
        [&](auto target) -> Field {
          using F = decltype(target);
          if constexpr (std::is_same_v<F, std::monostate>) {
            return {};
          } else if constexpr (std::is_same_v<F, support::Choice<C>>) {
            return choice(
                path, doc, target.names(),
                [acc, target](Experiment& x, const std::string& v) { target.set(acc(x), v); },
                [acc, target](const Experiment& x) {
                  return target.get(acc(const_cast<Experiment&>(x)));
                });
          } else {
            auto member = [ acc, target ](Experiment & x) -> auto& {
              return target(acc(x));
            };
            using T = typename support::FieldType<F, C>::type;
            if constexpr (std::is_same_v<T, bool>)
              return boolean(path, doc, member);
            else if constexpr (std::is_same_v<T, std::string>)
              return text(path, doc, member);
            else if constexpr (std::is_integral_v<T>)
              return integer(path, doc, k.lo, k.hi, member);
            else
              return number(path, doc, k.lo, k.hi, member);
          }
        },
        k.field);
    f.cost = k.cost;
    f.stacks = stacks::stacks_honouring(f.path);
    add(std::move(f));
  }
}

// The keys in the order the reference lists them: each section's table is
// declared beside the struct it sets; what is the experiment's own (its
// name, which machine, stack and functions, the I-cache switch) is here.
Schema::Schema() {
  add_top_keys();

  section("machine",
          "The CPU: a name from configs/machines, a path, or a map of fields (with `use: NAME` to "
          "start from a named machine).");
  add(text("machine.name", "Machine name.",
           [](Experiment& x) -> std::string& { return x.machine_name; }));
  add(text("machine.description", "Free text.",
           [](Experiment& x) -> std::string& { return x.machine_description; }));
  add(integer("machine.year",
              "The year of the host the costs describe (2006 for the seed's Athlon; for a "
              "measured profile, the year it was measured); 0: not said. `simloop explain` warns "
              "when two runs' machines are years apart.",
              0, 2100, [](Experiment& x) -> int& { return x.machine_year; }));
  add(choice(
      "machine.costs",
      "How the machine's cycle costs were made: estimated (by hand, from what was published "
      "where its file says so), measured (fitted to runs on that host, as simloop calibrate "
      "writes them) or unknown (not said). `simloop explain` warns when two runs' machines "
      "differ in it.",
      {"unknown", "estimated", "measured"},
      [](Experiment& x, const std::string& v) { x.machine_costs = v; },
      [](const Experiment& x) { return x.machine_costs; }));
  section("machine.host",
          "The host a measured machine's costs were fitted on, as simloop calibrate writes it "
          "(a profile estimated from published figures has none). Results name its fingerprint "
          "(machine_host), and `simloop run` warns when this machine differs from it.");
  add(text("machine.host.cpu", "The CPU's model name, as /proc/cpuinfo gives it.",
           [](Experiment& x) -> std::string& { return x.machine_host.cpu; }));
  add(number("machine.host.clock_mhz",
             "Its clock in MHz: cpufreq's highest where the kernel scales it, else /proc/cpuinfo's "
             "(0: not said).",
             0, 1e6, [](Experiment& x) -> double& { return x.machine_host.clock_mhz; }));
  add(text("machine.host.kernel", "The kernel, as uname gives it: Linux 6.18.44 x86_64.",
           [](Experiment& x) -> std::string& { return x.machine_host.kernel; }));
  add(text("machine.host.caches",
           "Its caches, as sysfs gives them for cpu0: L1d 32K 8-way, L1i 32K 8-way, L2 ...",
           [](Experiment& x) -> std::string& { return x.machine_host.caches; }));
  add_keys("machine", models::kMachineKeys,
           [](Experiment& x) -> models::MachineCosts& { return x.machine; });
  add_cache_keys();
  // The optional timing models declare their own keys.
  models::for_each_model([&]<class M>(std::type_identity<M>) {
    section(std::string(M::kSection), std::string(M::kDoc));
    add_keys(M::kSection, M::kKeys, [](Experiment& x) -> typename M::Config& {
      return std::get<typename M::Config>(x.models);
    });
  });

  add_stack_keys();

  section("workload", "The ttcp-like sender.");
  add_keys("workload", kWorkloadKeys, [](Experiment& x) -> Workload& { return x.workload; });
  section("interrupts", "Transmit-completion interrupts, which preempt the sender.");
  add_keys("interrupts", models::kInterruptKeys,
           [](Experiment& x) -> models::InterruptCosts& { return x.interrupts; });

  // The host's options, which every stack takes its part of, then each
  // stack's own, as its kind declares them.
  section("options", "Options of the real stack.");
  add_keys("options", net::kHostKeys, [](Experiment& x) -> net::HostOptions& { return x.options; });
  for (const stacks::StackSection& sec : stacks::sections()) {
    if (!is_section(sec.path)) section(sec.path, sec.doc);
    for (const stacks::StackKey& k : stacks::keys())
      if (k.stack == sec.stack) add(stack_key(k));
  }

  section("layout", "The code layout: where each stack function's hot code lies.");
  add_keys("layout", kLayoutKeys, [](Experiment& x) -> LayoutOptions& { return x.layout; });
  section("variance",
          "Effects that differ between separate runs but not within one (from the seed).");
  add_keys("variance", kVarianceKeys, [](Experiment& x) -> Variance& { return x.variance; });
  section("engine", "The simulation engine.");
  add_keys("engine", kEngineKeys, [](Experiment& x) -> EngineOptions& { return x.engine; });
  section("output", "Where results go.");
  add_keys("output", kOutputKeys, [](Experiment& x) -> Output& { return x.output; });
}

// The experiment's own keys: its name, description and seed.
void Schema::add_top_keys() {
  Field name = text("name",
                    "Experiment name, used in result rows and file names: 1 to 100 letters, "
                    "digits, '-', '_' and '.', not starting with '.' or '-'.",
                    [](Experiment& x) -> std::string& { return x.name; });
  name.set = [](Experiment& x, const YAML::Node& n, const Loc& loc) {
    if (!n.IsScalar()) fail(loc, "name", "expected a string, got " + scalar_text(n));
    if (const std::string why = name_problem(n.Scalar()); !why.empty())
      fail(loc, "name", why + ", got " + scalar_text(n));
    x.name = n.Scalar();
  };
  add(std::move(name));
  add(text("description", "Free text: what the experiment shows.",
           [](Experiment& x) -> std::string& { return x.description; }));
  add(integer("seed", "Seed of every random choice of the run (payload bytes).", 0, 9.0e15,
              [](Experiment& x) -> uint64_t& { return x.seed; }));
}

// The instruction cache: whether it is modelled and how code is fetched
// (the experiment's), around its geometry (models/icache.h).
void Schema::add_cache_keys() {
  section("machine.cache", "The instruction cache model, fed by the code layout (`layout`).");
  add(boolean("machine.cache.enabled",
              "Charge I-cache misses (needs layout.kernel or layout.build.nm).",
              [](Experiment& x) -> bool& { return x.cache_enabled; }));
  add_keys("machine.cache", models::kICacheKeys,
           [](Experiment& x) -> models::ICacheConfig& { return x.icache; });
  add(choice(
      "machine.cache.fetch",
      "How code is fetched. call-sites: a caller's code up to each call site the layout gives, "
      "then the callee's, then the rest of the caller on return (owners without call sites: "
      "their code when entered); entry: each owner's code in one piece when it is entered.",
      {"call-sites", "entry"},
      [](Experiment& x, const std::string& v) { x.fetch = *models::parse_fetch_mode(v); },
      [](const Experiment& x) { return std::string(models::fetch_mode_name(x.fetch)); }));
}

// The stack's prices: its kind, per-function costs and the zones'.
void Schema::add_stack_keys() {
  section("stack",
          "Per-stage costs of the stack: a name from configs/stacks, a path, or a map of "
          "fields (with `use: NAME` to start from a named stack).");
  add(stack_kind());
  add(text("stack.name", "Stack profile name.",
           [](Experiment& x) -> std::string& { return x.stack_name; }));
  add(text("stack.description", "Free text.",
           [](Experiment& x) -> std::string& { return x.stack_description; }));
  add(boolean("stack.fitted_fixed_costs",
              "The profile is a fit to measured totals (`simloop calibrate --source kernel`): "
              "stack.functions.sendto holds the fitted fixed cost of sending as a whole (and "
              "stack.functions.soreceive that of receiving), not those functions' own; the "
              "per-stage breakdowns of run and explain name them so.",
              [](Experiment& x) -> bool& { return x.stack_fitted_fixed_costs; }));
  section("stack.functions",
          "Base cycles each time a function of the real stack runs; the keys are the functions "
          "of the stack that stack.kind names.");
  add_function_keys([this](Field f) { add(std::move(f)); });
  add_keys("stack", models::kStackCostKeys,
           [](Experiment& x) -> models::StackCosts& { return x.stack; });
}

const Schema& schema() {
  static const Schema s;
  return s;
}

}  // namespace detail

std::string name_problem(const std::string& name) {
  constexpr size_t kMaxName = 100;
  if (name.empty()) return "expected a name (1 to 100 characters)";
  if (name.size() > kMaxName) return fmt::format("expected at most {} characters", kMaxName);
  if (name[0] == '.' || name[0] == '-') return "must not start with '.' or '-'";
  for (const char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' || c == '.'))
      return "expected only letters, digits, '-', '_' and '.' (a name, not a path)";
  return "";
}

}  // namespace simloop::config
