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

// Tags a field as a cost that `simloop calibrate` fits.
Field cost(Field f) {
  f.cost = true;
  return f;
}

// Tags a key shared between stacks as one that applies only to those that
// honour it (their kinds say which, stack_set.h).
Field by_stack(Field f) {
  f.stacks = stacks::stacks_honouring(f.path);
  return f;
}

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

}  // namespace

template <class M>
void Schema::add_model() {
  using C = typename M::Config;
  section(std::string(M::kSection), std::string(M::kDoc));
  for (const models::KeySpec<C>& k : M::kKeys) {
    std::string path = fmt::format("{}.{}", M::kSection, k.name);
    std::string doc(k.doc);
    add(std::visit(
        [&](auto member) -> Field {
          using T = std::remove_cvref_t<decltype(std::declval<C&>().*member)>;
          auto acc = [member](Experiment& x) -> T& { return std::get<C>(x.models).*member; };
          if constexpr (std::is_same_v<T, bool>)
            return boolean(std::move(path), std::move(doc), acc);
          else if constexpr (std::is_integral_v<T>)
            return integer(std::move(path), std::move(doc), k.lo, k.hi, acc);
          else
            return number(std::move(path), std::move(doc), k.lo, k.hi, acc);
        },
        k.field));
  }
}

Schema::Schema() {
  add_top_keys();
  add_machine_keys();
  add_stack_keys();
  add_workload_keys();
  add_options_keys();
  add_run_keys();
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

// The CPU's prices: clock, system calls, copies, the I-cache and the optional
// timing models (each declares its own keys beside its code).
void Schema::add_machine_keys() {
  section("machine",
          "The CPU: a name from configs/machines, a path, or a map of fields (with `use: NAME` to "
          "start from a named machine).");
  add(text("machine.name", "Machine name.",
           [](Experiment& x) -> std::string& { return x.machine_name; }));
  add(text("machine.description", "Free text.",
           [](Experiment& x) -> std::string& { return x.machine_description; }));
  add(number("machine.clock_hz", "Clock rate: the simulated host's speed in cycles per second.",
             1e6, 1e11, [](Experiment& x) -> double& { return x.machine.clock_hz; }));
  section("machine.syscall", "System call entry and exit.");
  add(cost(number("machine.syscall.entry_cycles",
                  "Cycles from the user's call to the kernel function.", 0, 1e7,
                  [](Experiment& x) -> double& { return x.machine.syscall_entry_cycles; })));
  add(cost(number("machine.syscall.exit_cycles",
                  "Cycles from the kernel function back to the user.", 0, 1e7,
                  [](Experiment& x) -> double& { return x.machine.syscall_exit_cycles; })));
  add(cost(number("machine.user_loop_cycles", "Cycles of the sender's own loop per datagram.", 0,
                  1e7, [](Experiment& x) -> double& { return x.machine.user_loop_cycles; })));
  section("machine.copy", "Cost of copying bytes (bcopy, copyin, copyout).");
  add(cost(number("machine.copy.setup_cycles", "Fixed cycles per copy.", 0, 1e6,
                  [](Experiment& x) -> double& { return x.machine.copy_setup_cycles; })));
  add(cost(number("machine.copy.cycles_per_byte", "Cycles per byte copied.", 0, 1e3,
                  [](Experiment& x) -> double& { return x.machine.copy_cycles_per_byte; })));
  add(cost(
      number("machine.copy.unaligned_cycles_per_byte",
             "Extra cycles per byte when source or destination is not 4-byte aligned.", 0, 1e3,
             [](Experiment& x) -> double& { return x.machine.copy_unaligned_cycles_per_byte; })));
  add(cost(
      number("machine.unaligned_access_cycles",
             "Extra cycles per misaligned header access, on CPUs that allow them (align: none).", 0,
             1e6, [](Experiment& x) -> double& { return x.machine.unaligned_access_cycles; })));
  add(cost(number("machine.unaligned_line_cross_cycles",
                  "Further cycles when a misaligned header access also crosses a cache line.", 0,
                  1e6,
                  [](Experiment& x) -> double& { return x.machine.unaligned_line_cross_cycles; })));
  section("machine.cache", "The instruction cache model, fed by the code layout (`layout`).");
  add(boolean("machine.cache.enabled",
              "Charge I-cache misses (needs layout.kernel or layout.build.nm).",
              [](Experiment& x) -> bool& { return x.cache_enabled; }));
  section("machine.cache.l1", "First-level instruction cache, virtually indexed.");
  add(integer("machine.cache.l1.size_bytes", "Capacity in bytes.", 64, 1 << 26,
              [](Experiment& x) -> int64_t& { return x.icache.l1.size_bytes; }));
  add(integer("machine.cache.l1.assoc", "Ways per set.", 1, 64,
              [](Experiment& x) -> int& { return x.icache.l1.assoc; }));
  add(integer("machine.cache.l1.line_bytes", "Line size in bytes.", 8, 512,
              [](Experiment& x) -> int& { return x.icache.l1.line_bytes; }));
  add(number("machine.cache.l1.refill_cycles",
             "Extra stall per L1 miss on top of the level that serves it: work before the "
             "refilled line runs (an Athlon predecodes it again and mispredicts its taken "
             "branches once).",
             0, 1e4, [](Experiment& x) -> double& { return x.icache.l1_refill_cycles; }));
  add(boolean("machine.cache.next_line_prefetch", "A miss also brings the next line in (no stall).",
              [](Experiment& x) -> bool& { return x.icache.next_line_prefetch; }));
  add(choice(
      "machine.cache.fetch",
      "How code is fetched. call-sites: a caller's code up to each call site the layout gives, "
      "then the callee's, then the rest of the caller on return (owners without call sites: "
      "their code when entered); entry: each owner's code in one piece when it is entered.",
      {"call-sites", "entry"},
      [](Experiment& x, const std::string& v) { x.fetch = *models::parse_fetch_mode(v); },
      [](const Experiment& x) { return std::string(models::fetch_mode_name(x.fetch)); }));
  section("machine.cache.l2", "Second-level cache behind L1, physically indexed.");
  add(boolean("machine.cache.l2.enabled", "Model an L2 (else every L1 miss goes to memory).",
              [](Experiment& x) -> bool& { return x.icache.l2_enabled; }));
  // Bounded at 256 MB: the model keeps every line's tag (4 Mi lines of 64 B,
  // about 100 MB of memory at that size).
  add(integer("machine.cache.l2.size_bytes",
              "Capacity in bytes (at most 256 MB: the model keeps a tag per line).", 64,
              int64_t{1} << 28, [](Experiment& x) -> int64_t& { return x.icache.l2.size_bytes; }));
  add(integer("machine.cache.l2.assoc", "Ways per set.", 1, 64,
              [](Experiment& x) -> int& { return x.icache.l2.assoc; }));
  add(boolean("machine.cache.l2.exclusive",
              "Exclusive (L1 victims move to L2, as on the Athlon) or not (fills go to both).",
              [](Experiment& x) -> bool& { return x.icache.l2_exclusive; }));
  add(boolean("machine.cache.l2.back_invalidate",
              "Not exclusive: an L2 eviction also drops the line from L1 (inclusive); off: L1 "
              "keeps it (cachegrind's last level).",
              [](Experiment& x) -> bool& { return x.icache.l2_back_invalidate; }));
  add(number("machine.cache.l2.hit_cycles", "Stall per L1 miss that hits L2.", 0, 1e4,
             [](Experiment& x) -> double& { return x.icache.l2_hit_cycles; }));
  add(number("machine.cache.memory_cycles", "Stall per miss in every level.", 0, 1e5,
             [](Experiment& x) -> double& { return x.icache.memory_cycles; }));
  // The optional timing models declare their own keys.
  models::for_each_model([&]<class M>(std::type_identity<M>) { add_model<M>(); });
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
  // The zones' prices (the BSD stack's mbufs and clusters), taken and given back.
  using Price = double models::StackCosts::*;
  struct Zone {
    const char *op, *doc, *done;
    Price mbuf, cluster;
  };
  for (const Zone& z :
       {Zone{"alloc", "Buffer allocation from the zones.", "allocated",
             &models::StackCosts::mbuf_alloc_cycles, &models::StackCosts::cluster_alloc_cycles},
        Zone{"free", "Buffer release to the zones.", "freed", &models::StackCosts::mbuf_free_cycles,
             &models::StackCosts::cluster_free_cycles}}) {
    section(fmt::format("stack.{}", z.op), z.doc);
    for (const auto& objp : {std::pair{"mbuf", z.mbuf}, std::pair{"cluster", z.cluster}}) {
      // (Not a structured binding: clang 14, the fuzz build's compiler,
      // cannot capture one.)
      const auto price = objp.second;
      add(by_stack(cost(number(fmt::format("stack.{}.{}_cycles", z.op, objp.first),
                               fmt::format("Cycles per {} {}.", objp.first, z.done), 0, 1e6,
                               [price](Experiment& x) -> double& { return x.stack.*price; }))));
    }
  }
  add(cost(number("stack.cksum_cycles_per_byte", "Cycles per byte summed by the Internet checksum.",
                  0, 1e3, [](Experiment& x) -> double& { return x.stack.cksum_cycles_per_byte; })));
}

// The sender (the ttcp-like loop and its destination) and the interrupts
// that preempt it.
void Schema::add_workload_keys() {
  section("workload", "The ttcp-like sender.");
  add(integer("workload.payload", "UDP payload bytes per datagram.", 0, net::kMaxJumboPayload,
              [](Experiment& x) -> int& { return x.workload.payload; }));
  add(integer("workload.packets", "Datagrams to send (unless duration_s is set).", 1, 1e12,
              [](Experiment& x) -> int64_t& { return x.workload.packets; }));
  add(number("workload.duration_s", "If > 0: simulated seconds to send for, instead of a count.", 0,
             1e5, [](Experiment& x) -> double& { return x.workload.duration_s; }));
  add(choice(
      "workload.dest",
      "loopback: 127.0.0.1 through lo0 and the netisr; broadcast: em0's broadcast, a copy loops "
      "back through if_simloop and the frame goes on the wire; wire: a peer host over the link; "
      "self: em0's own address, routed through em0 (no lo0 route), the frame itself loops back.",
      workload::dest_names(),
      [](Experiment& x, const std::string& v) {
        x.workload.dest = workload::parse_dest(v).value_or(Dest::wire);
      },
      [](const Experiment& x) { return dest_name(x.workload.dest); }));
  add(number("workload.enobufs_sleep_s",
             "How long the sender sleeps when sendto() fails with ENOBUFS.", 0, 10,
             [](Experiment& x) -> double& { return x.workload.enobufs_sleep_s; }));
  add(boolean("workload.receive", "A receiver reads the looped datagrams (its cycles count).",
              [](Experiment& x) -> bool& { return x.workload.receive; }));
  add(by_stack(choice(
      "workload.service",
      "What serves the host after each sendto(). simulated: the simulated host (the "
      "netisr runs at once where the datagram loops back, the receiver reads what is "
      "queued, the NIC's completions as the interrupt model says). full: the native "
      "harness's loop (simloop-harness, `simloop icache --service full`): the netisr, "
      "recvfrom() until it says EWOULDBLOCK and transmit completion after every send, "
      "so the code runs in the order `simloop icache` replays. send-only: as full, "
      "with transmit completion only.",
      {"simulated", "full", "send-only"},
      [](Experiment& x, const std::string& v) {
        x.workload.service = v == "full"        ? workload::Service::drained
                             : v == "send-only" ? workload::Service::send_only
                                                : workload::Service::simulated;
      },
      [](const Experiment& x) { return workload::service_name(x.workload.service); })));
  add(by_stack(
      boolean("workload.connected",
              "The sender connect()s its socket once and sends with send(): the Linux stack "
              "then keeps the route and the IP ID counter on the socket; otherwise sendto() "
              "looks the route up for every datagram.",
              [](Experiment& x) -> bool& { return x.workload.connected; })));
  section("workload.link", "The wire between the host and its peer.");
  add(number("workload.link.bandwidth_bps", "Link rate in bits per second.", 1e3, 1e13,
             [](Experiment& x) -> double& { return x.workload.link_bandwidth_bps; }));
  add(number("workload.link.latency_s", "One-way propagation latency in seconds.", 0, 10,
             [](Experiment& x) -> double& { return x.workload.link_latency_s; }));

  section("interrupts", "Transmit-completion interrupts, which preempt the sender.");
  add(boolean("interrupts.enabled",
              "Completions raise interrupts; otherwise the driver reclaims finished frames when it "
              "queues new ones.",
              [](Experiment& x) -> bool& { return x.interrupts.enabled; }));
  add(number("interrupts.handler_cycles", "Cycles per interrupt: entry, acknowledge, exit.", 0, 1e7,
             [](Experiment& x) -> double& { return x.interrupts.handler_cycles; }));
  add(number("interrupts.per_packet_cycles",
             "Cycles per completed frame in the handler, besides freeing its buffers.", 0, 1e7,
             [](Experiment& x) -> double& { return x.interrupts.per_packet_cycles; }));
  section("interrupts.moderation", "How completions are grouped into interrupts.");
  add(integer("interrupts.moderation.packets", "One interrupt per this many completed frames.", 1,
              65536, [](Experiment& x) -> int& { return x.interrupts.moderation_packets; }));
  add(number("interrupts.moderation.interval_s",
             "If > 0: at most one interrupt per interval, covering all completions by then "
             "(moderation.packets is then ignored).",
             0, 1, [](Experiment& x) -> double& { return x.interrupts.moderation_interval_s; }));
}

namespace {

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

// The host's options, which every stack takes its part of, then each
// stack's own, as its kind declares them.
void Schema::add_options_keys() {
  section("options", "Options of the real stack.");
  add(choice(
      "options.align",
      "none: unaligned access allowed (x86), misaligned accesses charged; copy-down: if_simloop "
      "copies to a 4-byte boundary (never into shared storage); strict: a misaligned access "
      "faults and ends the run; copy-down-unsafe: the naive in-place fix-up.",
      net::align_policy_names(),
      [](Experiment& x, const std::string& v) { x.options.align = *net::parse_align_policy(v); },
      [](const Experiment& x) { return net::align_policy_name(x.options.align); }));
  add(by_stack(choice(
      "options.copy", "How ether_output copies a broadcast for the simplex loop.",
      net::loop_copy_names(),
      [](Experiment& x, const std::string& v) { x.options.loop_copy = *net::parse_loop_copy(v); },
      [](const Experiment& x) { return net::loop_copy_name(x.options.loop_copy); })));
  add(by_stack(
      integer("options.sockaddr_misalign",
              "Bytes past a 4-byte boundary of udp_in, the static sockaddr_in that udp_input "
              "fills for each received datagram (struct sockaddr asks for no alignment: "
              "FreeBSD's sun_noname).",
              0, 3, [](Experiment& x) -> int& { return x.options.sockaddr_misalign; })));
  add(integer("options.nic_ring", "NIC transmit descriptors.", 1, 1e6,
              [](Experiment& x) -> int& { return x.options.nic_ring; }));
  add(integer("options.ether_mtu", "MTU of the Ethernet interface, bytes.", 68, net::kMaxEtherMtu,
              [](Experiment& x) -> int& { return x.options.ether_mtu; }));
  for (const stacks::StackSection& sec : stacks::sections()) {
    if (!is_section(sec.path)) section(sec.path, sec.doc);
    for (const stacks::StackKey& k : stacks::keys())
      if (k.stack == sec.stack) add(stack_key(k));
  }
}

// How the run is made and kept: the code layout, run-to-run variance, the
// engine and the outputs.
void Schema::add_run_keys() {
  section("layout", "The code layout: where each stack function's hot code lies.");
  add(text("layout.kernel", "Kernel layout: a name from configs/layouts or a path (\"\": none).",
           [](Experiment& x) -> std::string& { return x.layout.kernel; }));
  add(text("layout.user", "The sender's own code: a name from configs/layouts or a path.",
           [](Experiment& x) -> std::string& { return x.layout.user; }));
  add(text("layout.pad_object", "Insert pad_bytes of never-executed code into this kernel object.",
           [](Experiment& x) -> std::string& { return x.layout.pad_object; }));
  add(integer("layout.pad_bytes", "Bytes of padding (see pad_object).", 0, 1 << 24,
              [](Experiment& x) -> int64_t& { return x.layout.pad_bytes; }));
  add(integer("layout.pad_offset", "Where in pad_object the padding goes (-1: at its end).", -1,
              1 << 24, [](Experiment& x) -> int64_t& { return x.layout.pad_offset; }));
  add(text("layout.move_to_end", "Move this kernel object to the end of the link.",
           [](Experiment& x) -> std::string& { return x.layout.move_to_end; }));
  add(integer("layout.function_align",
              "Align every kernel function to this many bytes (0: as laid out).", 0, 4096,
              [](Experiment& x) -> int64_t& { return x.layout.function_align; }));
  add(text("layout.order", "Kernel objects to link first, comma-separated, in this order.",
           [](Experiment& x) -> std::string& { return x.layout.order; }));
  section("layout.build",
          "A real build as the code layout, instead of layout.kernel: the files `simloop icache` "
          "and `simloop layout --nm` read. Paths are relative to the experiment's directory "
          "(then the working directory, then the data directory); maps may be gzip-compressed. "
          "Use it with workload.service full or send-only for the harness's own loop.");
  add(text("layout.build.nm",
           "The build's symbol map as `simloop measure cachegrind -o` writes it beside its CSV "
           "(`nm -S --defined-only -n` lines and the PLT sections nm does not list; a map from "
           "plain nm lacks the PLT, and the run warns of the hot functions it misses).",
           [](Experiment& x) -> std::string& { return x.layout.build.nm; }));
  add(text("layout.build.profile",
           "Hot ranges and walks from `simloop measure profile` (\"\": whole symbols, times "
           "hot_fraction).",
           [](Experiment& x) -> std::string& { return x.layout.build.profile; }));
  add(text("layout.build.owners",
           "'symbol owner' lines naming what runs each function (\"\": "
           "configs/harness/owners.txt).",
           [](Experiment& x) -> std::string& { return x.layout.build.owners; }));
  add(text("layout.build.map",
           "The build's ld.lld link map (-Map), to relink it in layout.build.order.",
           [](Experiment& x) -> std::string& { return x.layout.build.map; }));
  add(text("layout.build.order",
           "A function order (as ld.lld's --symbol-ordering-file takes it, e.g. the advice of "
           "`simloop layout --nm --map`): the build's sections placed as ld.lld would place "
           "them in this order. Needs layout.build.map.",
           [](Experiment& x) -> std::string& { return x.layout.build.order; }));
  add(number("layout.build.hot_fraction",
             "Without a profile: the part of each symbol taken as hot, from its start.", 0.001, 1,
             [](Experiment& x) -> double& { return x.layout.build.hot_fraction; }));

  section("variance",
          "Effects that differ between separate runs but not within one (from the seed).");
  add(boolean("variance.page_colouring",
              "Random physical pages for the code, so the physically indexed L2 sees a different "
              "colouring each run.",
              [](Experiment& x) -> bool& { return x.variance.page_colouring; }));
  add(integer("variance.phys_pages", "Physical pages the random placement chooses from.", 1,
              1 << 30, [](Experiment& x) -> int64_t& { return x.variance.phys_pages; }));
  add(integer("variance.link_perturbation_bytes",
              "If > 0: pad a randomly chosen kernel object by a random 0..N bytes (16-byte steps).",
              0, 1 << 20,
              [](Experiment& x) -> int64_t& { return x.variance.link_perturbation_bytes; }));

  section("engine", "The simulation engine.");
  add(integer("engine.max_batch",
              "Most datagrams priced in one batch, and about the most spent in one simulated "
              "execution; batches also end where an interrupt is due (its handler then runs in "
              "the same execution), so this changes speed, not results.",
              1, 1e6, [](Experiment& x) -> int& { return x.engine.max_batch; }));
  add(boolean("engine.icache_replay",
              "Replay the I-cache model's answer to a packet's code fetches once they leave the "
              "cache as they found it, and each step of the fetch model once seen, instead of "
              "simulating them again; results are identical (off only to show that: every event "
              "followed, every line fetched), the I-cache model about ten times faster.",
              [](Experiment& x) -> bool& { return x.engine.icache_replay; }));

  section("output", "Where results go.");
  add(text("output.dir", "Directory for result files, relative to the working directory.",
           [](Experiment& x) -> std::string& { return x.output.dir; }));
  add(boolean("output.csv", "Write <dir>/<name>.csv (one tidy row per run).",
              [](Experiment& x) -> bool& { return x.output.csv; }));
  add(boolean("output.json", "Write <dir>/<name>.json (results and the resolved configuration).",
              [](Experiment& x) -> bool& { return x.output.json; }));
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
