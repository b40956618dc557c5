#include "sim/config/experiment.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <system_error>
#include <type_traits>
#include <variant>

#include "sim/config/data_root.h"
#include "sim/support/text.h"
#include "sim/support/yaml_input.h"

#ifndef SIMLOOP_SOURCE_DIR
#define SIMLOOP_SOURCE_DIR "."
#endif

namespace simloop::config {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using Loc = YamlLoc;
constexpr auto loc_of = yaml_loc;

[[noreturn]] void fail(const Loc& loc, const std::string& key, const std::string& msg) {
  throw ConfigError(located(loc, key, msg));
}

enum class Kind { integer, number, boolean, text, choice };

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

struct Field {
  std::string path;
  Kind kind;
  std::string doc;
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
  std::vector<std::string> choices;
  std::function<void(Experiment&, const YAML::Node&, const Loc&)> set;
  std::function<json(const Experiment&)> get;
  bool cost = false;  // a per-event or per-byte price of the timing model (calibrated)
};

// Tags a field as a cost that `simloop calibrate` fits.
Field cost(Field f) {
  f.cost = true;
  return f;
}

struct Section {
  std::string path;
  std::string doc;
};

constexpr auto scalar_text = yaml_shape;

std::string range_text(double lo, double hi) {
  if (std::isinf(lo) && std::isinf(hi)) return "";
  if (std::isinf(hi)) return fmt::format(" >= {}", lo);
  return fmt::format(" in [{}, {}]", lo, hi);
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

class Schema {
 public:
  Schema();
  const Field* field(const std::string& path) const {
    auto it = fields_.find(path);
    return it == fields_.end() ? nullptr : &it->second;
  }
  bool is_section(const std::string& path) const {
    return std::any_of(sections_.begin(), sections_.end(),
                       [&](const Section& s) { return s.path == path; });
  }
  // The keys allowed directly under `prefix` ("" or "a.b.").
  std::vector<std::string> children(const std::string& prefix) const {
    std::vector<std::string> out;
    auto add = [&](const std::string& path) {
      if (path.size() <= prefix.size() || path.compare(0, prefix.size(), prefix) != 0) return;
      std::string rest = path.substr(prefix.size());
      rest = rest.substr(0, rest.find('.'));
      if (std::find(out.begin(), out.end(), rest) == out.end()) out.push_back(rest);
    };
    for (const auto& f : order_) add(f);
    for (const auto& s : sections_) add(s.path);
    return out;
  }
  const std::vector<std::string>& order() const { return order_; }
  const std::vector<Section>& sections() const { return sections_; }

 private:
  void add(Field f) {
    order_.push_back(f.path);
    fields_.emplace(f.path, std::move(f));
  }
  // An optional timing model's section and keys, as it declares them
  // (models/model_spec.h).
  template <class M>
  void add_model() {
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
  void section(std::string path, std::string doc) {
    sections_.push_back({std::move(path), std::move(doc)});
  }

  std::map<std::string, Field> fields_;
  std::vector<std::string> order_;
  std::vector<Section> sections_;
};

constexpr double kInf = std::numeric_limits<double>::infinity();

Schema::Schema() {
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
  add(boolean("machine.cache.enabled", "Charge I-cache misses (needs layout.kernel).",
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
  add(integer("machine.cache.l2.size_bytes", "Capacity in bytes.", 64, int64_t{1} << 32,
              [](Experiment& x) -> int64_t& { return x.icache.l2.size_bytes; }));
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

  section("stack",
          "Per-stage costs of the stack: a name from configs/stacks, a path, or a map of "
          "fields (with `use: NAME` to start from a named stack).");
  add(text("stack.name", "Stack profile name.",
           [](Experiment& x) -> std::string& { return x.stack_name; }));
  add(text("stack.description", "Free text.",
           [](Experiment& x) -> std::string& { return x.stack_description; }));
  section("stack.functions", "Base cycles each time a function of the real stack runs.");
  const net::FnTable& fns = net::bsd::fn_table();
  for (size_t i = 0; i < fns.size(); ++i) {
    const auto fn = fns.name(net::fn_at(i));
    add(cost(number(fmt::format("stack.functions.{}", fn),
                    fmt::format("Cycles per call of {}.", fn), 0, 1e7,
                    [i](Experiment& x) -> double& { return x.stack.fn_cycles[i]; })));
  }
  section("stack.alloc", "Buffer allocation from the zones.");
  add(cost(number("stack.alloc.mbuf_cycles", "Cycles per mbuf allocated.", 0, 1e6,
                  [](Experiment& x) -> double& { return x.stack.mbuf_alloc_cycles; })));
  add(cost(number("stack.alloc.cluster_cycles", "Cycles per cluster allocated.", 0, 1e6,
                  [](Experiment& x) -> double& { return x.stack.cluster_alloc_cycles; })));
  section("stack.free", "Buffer release to the zones.");
  add(cost(number("stack.free.mbuf_cycles", "Cycles per mbuf freed.", 0, 1e6,
                  [](Experiment& x) -> double& { return x.stack.mbuf_free_cycles; })));
  add(cost(number("stack.free.cluster_cycles", "Cycles per cluster freed.", 0, 1e6,
                  [](Experiment& x) -> double& { return x.stack.cluster_free_cycles; })));
  add(cost(number("stack.cksum_cycles_per_byte", "Cycles per byte summed by the Internet checksum.",
                  0, 1e3, [](Experiment& x) -> double& { return x.stack.cksum_cycles_per_byte; })));

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
        x.options = workload::stack_options_for(x.workload.dest, x.options);
      },
      [](const Experiment& x) { return dest_name(x.workload.dest); }));
  add(number("workload.enobufs_sleep_s",
             "How long the sender sleeps when sendto() fails with ENOBUFS.", 0, 10,
             [](Experiment& x) -> double& { return x.workload.enobufs_sleep_s; }));
  add(boolean("workload.receive", "A receiver reads the looped datagrams (its cycles count).",
              [](Experiment& x) -> bool& { return x.workload.receive; }));
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

  section("options", "Options of the real stack.");
  add(choice(
      "options.align",
      "none: unaligned access allowed (x86), misaligned accesses charged; copy-down: if_simloop "
      "copies to a 4-byte boundary (never into shared storage); strict: a misaligned access "
      "faults and ends the run; copy-down-unsafe: the naive in-place fix-up.",
      net::align_policy_names(),
      [](Experiment& x, const std::string& v) { x.options.align = *net::parse_align_policy(v); },
      [](const Experiment& x) { return net::align_policy_name(x.options.align); }));
  add(choice(
      "options.copy", "How ether_output copies a broadcast for the simplex loop.",
      net::loop_copy_names(),
      [](Experiment& x, const std::string& v) { x.options.loop_copy = *net::parse_loop_copy(v); },
      [](const Experiment& x) { return net::loop_copy_name(x.options.loop_copy); }));
  add(integer("options.sockaddr_misalign",
              "Bytes past a 4-byte boundary of udp_in, the static sockaddr_in that udp_input "
              "fills for each received datagram (struct sockaddr asks for no alignment: "
              "FreeBSD's sun_noname).",
              0, 3, [](Experiment& x) -> int& { return x.options.sockaddr_misalign; }));
  add(integer("options.netisr_maxlen", "Netisr input queue limit, packets.", 1, 1e6,
              [](Experiment& x) -> int& { return x.options.netisr_maxlen; }));
  add(integer("options.nic_ring", "NIC transmit descriptors.", 1, 1e6,
              [](Experiment& x) -> int& { return x.options.nic_ring; }));
  add(integer("options.so_sndbuf", "Largest datagram a socket sends, bytes.", 1, 1e7,
              [](Experiment& x) -> int& { return x.options.so_sndbuf; }));
  add(integer("options.so_rcvbuf", "Socket receive buffer limit, bytes.", 1, 1e9,
              [](Experiment& x) -> int& { return x.options.so_rcvbuf; }));
  add(integer("options.max_linkhdr", "Link header space reserved in front of the data, bytes.", 0,
              100, [](Experiment& x) -> int& { return x.options.max_linkhdr; }));
  add(integer("options.ether_mtu", "MTU of the Ethernet interface, bytes.", 68, net::kMaxEtherMtu,
              [](Experiment& x) -> int& { return x.options.ether_mtu; }));

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
              "Most datagrams charged in one simulated execution; batches also end where an "
              "interrupt is due, so this changes speed, not results.",
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

// Applies a YAML map to `x`, under `prefix` ("" or "a.b."): every key must be
// a known field or section.
void apply_map(Experiment& x, const YAML::Node& map, const std::string& prefix,
               const std::string& file, const std::vector<std::string>& skip = {}) {
  const Schema& s = schema();
  const std::string section =
      prefix.empty() ? "the top level" : prefix.substr(0, prefix.size() - 1);
  if (!map.IsMap())
    fail(loc_of(file, map), section, "expected a map of keys, got " + scalar_text(map));
  for (const auto& kv : map) {
    const Loc kloc = loc_of(file, kv.first);
    if (!kv.first.IsScalar()) fail(kloc, section, "keys must be plain names");
    const std::string key = kv.first.Scalar();
    if (std::find(skip.begin(), skip.end(), key) != skip.end()) continue;
    const std::string path = prefix + key;
    if (const Field* f = s.field(path)) {
      f->set(x, kv.second, loc_of(file, kv.second));
    } else if (s.is_section(path)) {
      apply_map(x, kv.second, path + ".", file);
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

YAML::Node load_yaml(const fs::path& file) {
  return read_yaml_file(file);
}

// Finds a named machine or stack (`kind` is "machines" or "stacks").
fs::path resolve_ref(const fs::path& experiment, const std::string& kind, const std::string& ref,
                     const Loc& loc, const std::string& key) {
  const fs::path base = experiment.has_parent_path() ? experiment.parent_path() : fs::path(".");
  const bool is_path = ref.find('/') != std::string::npos || fs::path(ref).extension() == ".yaml";
  std::vector<fs::path> tried;
  if (is_path) {
    tried.push_back(fs::path(ref).is_absolute() ? fs::path(ref) : base / ref);
  } else {
    for (const auto& root : config_roots(experiment))
      tried.push_back(root / kind / (ref + ".yaml"));
  }
  const std::string what = kind.substr(0, kind.size() - 1);
  if (ref.empty()) fail(loc, key, fmt::format("expected the name or path of a {}", what));
  for (const auto& p : tried) {
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) return p;
    if (fs::is_directory(p, ec))
      fail(loc, key, fmt::format("'{}' is a directory; expected a {} file", printable(ref), what));
  }
  std::vector<std::string> names;
  for (const auto& p : tried) names.push_back(printable(p.string(), 120));
  fail(loc, key,
       fmt::format("no {} named '{}' (looked for {})", what, printable(ref),
                   fmt::join(names, ", ")));
}

// A machine or stack: a name/path, or a map with an optional `use` base.
// `from_set`: the node is the value of --set machine=... (no position).
void apply_component(Experiment& x, const YAML::Node& node, const std::string& key,
                     const fs::path& file, bool from_set = false) {
  const std::string kind = key == "machine" ? "machines" : "stacks";
  auto where = [&](const YAML::Node& n) { return from_set ? Loc{} : loc_of(file.string(), n); };
  const Loc loc = where(node);
  auto load_ref = [&](const YAML::Node& ref) {
    if (!ref.IsScalar())
      fail(where(ref), key, "expected a name or a path, got " + scalar_text(ref));
    const fs::path p = resolve_ref(file, kind, ref.Scalar(), where(ref), key);
    const YAML::Node doc = load_yaml(p);
    apply_map(x, doc, key + ".", p.string());
    std::string& name = key == "machine" ? x.machine_name : x.stack_name;
    if (name.empty()) name = ref.Scalar();
  };
  if (node.IsScalar()) {
    load_ref(node);
  } else if (node.IsMap() && !from_set) {
    if (node["use"]) load_ref(node["use"]);
    apply_map(x, node, key + ".", file.string(), {"use"});
  } else {
    fail(loc, key,
         fmt::format("expected a name, a path{}, got {}", from_set ? "" : ", or a map of fields",
                     scalar_text(node)));
  }
}

// A --set value, parsed as YAML (as in a file).
YAML::Node set_value(const std::string& key, const std::string& value) {
  try {
    return YAML::Load(value);
  } catch (const YAML::Exception& e) {
    throw ConfigError(fmt::format("--set {}: cannot parse the value: {}", printable(key, 120),
                                  printable(e.msg, 200)));
  }
}

// "did you mean" for a --set path that names no key.
[[noreturn]] void unknown_set_key(const std::string& key) {
  const Schema& s = schema();
  if (s.is_section(key)) {
    const auto kids = s.children(key + ".");
    throw ConfigError(
        fmt::format("--set {}: is a section; set one of its keys ({}.{})", key, key,
                    kids.empty() ? "..." : fmt::format("{{{}}}", fmt::join(kids, ","))));
  }
  std::string msg = fmt::format("--set {}: no such key", printable(key, 120));
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
  if (w.payload > x.options.so_sndbuf)
    fail(loc("workload.payload"), "workload.payload",
         fmt::format("{} bytes exceed options.so_sndbuf ({})", w.payload, x.options.so_sndbuf));
  if (w.dest != Dest::loopback && w.payload + net::kUdpIpHdrLen > x.options.ether_mtu)
    fail(loc("workload.payload"), "workload.payload",
         fmt::format("{} bytes + 28 bytes of headers exceed options.ether_mtu ({}); there is no IP "
                     "fragmentation",
                     w.payload, x.options.ether_mtu));
  if (x.interrupts.enabled && x.interrupts.moderation_interval_s == 0 &&
      x.interrupts.moderation_packets > x.options.nic_ring)
    fail(loc("interrupts.moderation.packets"), "interrupts.moderation.packets",
         fmt::format("{} is more than options.nic_ring ({}): the ring would fill before the first "
                     "interrupt",
                     x.interrupts.moderation_packets, x.options.nic_ring));
  if (x.options.max_linkhdr + x.options.max_protohdr >= net::kMHLen)
    fail(loc("options.max_linkhdr"), "options.max_linkhdr", "too large for a header mbuf");
  models::for_each_model([&]<class M>(std::type_identity<M>) {
    const auto& c = std::get<typename M::Config>(x.models);
    for (const auto& k : M::kKeys) {
      if (!k.power_of_two) continue;
      const int64_t v = std::visit(
          [&c](auto f) -> int64_t {
            if constexpr (std::is_integral_v<std::remove_cvref_t<decltype(c.*f)>>)
              return static_cast<int64_t>(c.*f);
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

// Loads, transforms and links the code layout the I-cache model runs on.
void build_code_layout(Experiment& x, const std::map<std::string, Loc>& where);

}  // namespace

models::Layout transform_layout(models::Layout k, const LayoutOptions& lo) {
  if (!lo.order.empty()) {
    std::vector<std::string> order;
    std::string item;
    for (std::istringstream in(lo.order); std::getline(in, item, ',');) {
      item.erase(0, item.find_first_not_of(' '));
      item.erase(item.find_last_not_of(' ') + 1);
      if (!item.empty()) order.push_back(item);
    }
    k = models::reorder(k, order);
  }
  if (!lo.pad_object.empty() && lo.pad_bytes > 0) {
    std::optional<uint64_t> at;
    if (lo.pad_offset >= 0) at = static_cast<uint64_t>(lo.pad_offset);
    k = models::pad_object(k, lo.pad_object, static_cast<uint64_t>(lo.pad_bytes), at);
  }
  if (!lo.move_to_end.empty()) k = models::move_to_end(k, lo.move_to_end);
  if (lo.function_align > 0)
    k = models::align_functions(k, static_cast<uint64_t>(lo.function_align));
  return k;
}

fs::path find_layout(const fs::path& experiment_file, const std::string& ref) {
  return resolve_ref(experiment_file, "layouts", ref, Loc{experiment_file.string(), 1, 1},
                     "layout");
}

namespace {

void build_code_layout(Experiment& x, const std::map<std::string, Loc>& where) {
  auto loc = [&](const std::string& key) {
    auto it = where.find(key);
    return it != where.end() ? it->second : Loc{x.source.string(), 1, 1};
  };
  if (x.layout.kernel.empty()) {
    if (x.cache_enabled)
      fail(loc("machine.cache.enabled"), "machine.cache.enabled",
           "the cache model needs layout.kernel");
    return;
  }
  auto load = [&](const std::string& key, const std::string& ref) {
    const fs::path p = resolve_ref(x.source, "layouts", ref, loc(key), key);
    try {
      return models::load_layout_yaml(p);
    } catch (const models::LayoutError& e) {
      throw ConfigError(e.what());
    }
  };
  try {
    models::Layout k = transform_layout(load("layout.kernel", x.layout.kernel), x.layout);
    if (x.variance.link_perturbation_bytes > 0 && !k.objects.empty()) {
      // Fixed by the seed: the same run twice is the same binary.
      std::mt19937_64 rng(x.seed ^ 0x9e3779b97f4a7c15ULL);
      const std::string obj = k.objects[rng() % k.objects.size()].name;  // k is replaced below
      const auto bytes =
          16 * (rng() % (static_cast<uint64_t>(x.variance.link_perturbation_bytes) / 16 + 1));
      if (bytes > 0) k = models::pad_object(k, obj, bytes);
      x.perturbation = fmt::format("{} bytes in {}", bytes, obj);
    }
    models::LinkedLayout linked = models::link(k);
    if (!x.layout.user.empty())
      linked = models::merge(linked, models::link(load("layout.user", x.layout.user)));
    x.code = std::make_shared<const models::LinkedLayout>(std::move(linked));
  } catch (const models::LayoutError& e) {
    fail(loc("layout.kernel"), "layout", e.what());
  }
}

}  // namespace

std::vector<fs::path> config_roots(const fs::path& experiment_file) {
  const fs::path base =
      experiment_file.has_parent_path() ? experiment_file.parent_path() : fs::path(".");
  std::vector<fs::path> roots;
  for (fs::path p :
       {base / ".." / "configs", base / "configs", fs::path("configs"), data_root() / "configs"}) {
    p = p.lexically_normal();
    if (std::find(roots.begin(), roots.end(), p) == roots.end()) roots.push_back(p);
  }
  return roots;
}

Experiment load_experiment(const fs::path& file, const std::vector<std::string>& sets) {
  Experiment x;
  x.source = file;
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
  const YAML::Node doc = load_yaml(file);
  const std::string f = file.string();
  if (!doc.IsMap())
    fail(loc_of(f, doc), "experiment",
         "expected a map of keys at the top level, got " + scalar_text(doc));
  for (const char* required : {"machine", "stack"})
    if (!doc[required] && components.count(required) == 0)
      fail(loc_of(f, doc), required,
           fmt::format("missing required key '{}' (a name from configs/{}s, a path, or a map)",
                       required, required));
  // Machine and stack first, so that the experiment's own keys override them.
  for (const std::string key : {"machine", "stack"}) {
    if (const auto it = components.find(key); it != components.end())
      apply_component(x, it->second, key, file, true);
    else
      apply_component(x, doc[key], key, file);
  }
  // The sweep section is read by the sweep runner (sim/tools/sweep), not here.
  apply_map(x, doc, "", f, {"machine", "stack", "sweep"});
  x.has_sweep = static_cast<bool>(doc["sweep"]);

  std::map<std::string, Loc> where;
  record_locations(doc, "", f, where);
  for (const auto& [key, value] : overrides) {
    schema().field(key)->set(x, set_value(key, value), Loc{});
    where[key] = Loc{};
  }
  check_consistency(x, where);
  build_code_layout(x, where);
  return x;
}

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

namespace {

constexpr const char* kSweepReference = R"(
## Sweeps

`simloop sweep EXPERIMENT.yaml` runs the experiment once per point of its
`sweep:` section (which `simloop run` ignores), each point in its own process.
Swept keys are the keys of the table above, by their full path (the same as
`--set`); a point is applied as `--set` overrides of the experiment. `name`
and `output.*` cannot be swept.

```yaml
sweep:
  grid:                          # cartesian product; the first key varies slowest
    workload.payload: [18, 64, 256, 1024]
    options.align: [none, copy-down]
  zip:                           # lock-step: all lists the same length
    machine.clock_hz: [1.0e9, 2.0e9]
    stack.functions.ip_output: [300, 150]
  filter:                        # a point is kept if every condition holds
    - "workload.payload <= 1000"
    - "options.align != strict"
  repeats: 3                     # runs per point, each with its own seed
```

| key | meaning |
|---|---|
| `grid` | map of key to values; every combination is a point |
| `zip` | map of key to values of equal length, taken in lock-step; with `grid` it is one more axis of the product, varying fastest |
| `filter` | list of conditions `KEY OP VALUE`, OP one of `<`, `<=`, `>`, `>=`, `==`, `!=`; KEY a swept key; numbers compare as numbers, anything else as strings (`==`, `!=` only) |
| `repeats` | integer >= 1 (default 1): runs per point |

Values of a key are a list, or a range:

- `{start: 18, stop: 1418, step: 100}`: start, start + step, ... up to and including stop;
- `{start: 16, stop: 1024, num: 7, scale: log}`: num log-spaced values from start to stop, both included (`scale: linear`, the default, spaces them evenly);
- integer keys round range values to integers and drop repeats.

Each run's seed is derived from the experiment's seed (or the point's, if `seed` is swept), the point's settings and the repeat number: the 64-bit FNV-1a hash of the text `SEED|key=value;key=value|REPEAT`, mixed by one splitmix64 step and reduced modulo 2^52. A point keeps its seeds when other values are added to the sweep.
)";

}  // namespace

std::string reference_markdown() {
  const Experiment defaults;
  std::string out =
      "# Experiment configuration reference\n\n"
      "Generated by `simloop config-reference` from the schema that validates every file; a test "
      "keeps this page and the schema in step.\n\n"
      "An experiment file holds the keys below. `machine` and `stack` are either a name (a file "
      "in `configs/machines/` or `configs/stacks/`), a path to such a file, or a map of their "
      "keys, optionally with `use: NAME` to start from a named file and override some keys. "
      "Machine and stack files hold the keys of their section without the prefix. Any key can "
      "also be set on the command line with `--set path.to.key=value`.\n\n";
  for (const auto& sec : schema().sections()) out += fmt::format("- `{}`: {}\n", sec.path, sec.doc);
  out += "\n| key | type | default | allowed | meaning |\n|---|---|---|---|---|\n";
  for (const auto& path : schema().order()) {
    const Field& f = *schema().field(path);
    std::string allowed;
    if (f.kind == Kind::choice)
      allowed = fmt::format("{}", fmt::join(f.choices, ", "));
    else if (f.kind == Kind::integer || f.kind == Kind::number)
      allowed = range_text(f.lo, f.hi);
    out += fmt::format("| `{}` | {} | `{}` | {} | {} |\n", path, kind_name(f.kind),
                       f.get(defaults).dump(), allowed, f.doc);
  }
  out += kSweepReference;
  return out;
}

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
