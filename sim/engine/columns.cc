#include "sim/engine/columns.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "models/cycle_account.h"
#include "models/fn_ledger.h"
#include "models/optional_models.h"
#include "sim/layout/code.h"
#include "sim/stack/net/probe.h"
#include "sim/stack/stack_set.h"

namespace simloop::engine {

namespace {

std::string stage_doc(models::Stage s) {
  using models::Stage;
  switch (s) {
    case Stage::user:
      return "the sender's own loop around each sendto()";
    case Stage::syscall:
      return "system call entry and exit of the sender's sendto()";
    case Stage::socket:
      return "the socket layer of the send call, down to the protocol";
    case Stage::udp:
      return "UDP output";
    case Stage::ip:
      return "IP output, the route lookup included";
    case Stage::ether:
      return "link-layer output: the Ethernet header";
    case Stage::driver:
      return "the hand-off to the NIC ring, and transmit completion when no interrupt runs it";
    case Stage::loop:
      return "the loopback interface";
    case Stage::netisr:
      return "the software interrupt that dispatches each looped-back packet";
    case Stage::input:
      return "the receive path: IP and UDP input up to the socket's queue";
    case Stage::receive:
      return "the receiver's recvfrom(): its system call and the socket's receive";
    case Stage::copy:
      return "bytes copied (setup, per byte, the extra for copies off 4-byte alignment, and, with "
             "machine.copy.l1d_bytes set, for bytes in lines the L1 data cache no longer held)";
    case Stage::mbuf:
      return "buffer allocation and free: the zones' prices (stack.alloc, stack.free) and the "
             "stack functions charged here";
    case Stage::unaligned:
      return "penalties of misaligned header accesses (and of those crossing a cache line)";
    case Stage::cache:
      return "I-cache miss stalls (0 unless the I-cache model is on)";
    case Stage::interrupt:
      return "NIC interrupt handlers: their entry and exit (interrupts.handler_cycles, "
             "per_packet_cycles) and the transmit completion they run, with every function it "
             "calls, taken from the sender. Stalls of the handlers' code stay in their own "
             "stages (cycles_cache, cycles_tlb, cycles_branch); with those models off this is "
             "interrupt_pct of cycles_per_packet";
    case Stage::sleep:
      return "the CPU idle while the sender sleeps after ENOBUFS, waits for send space, or "
             "waits at the end for its last frames to leave the NIC (interrupt handlers that ran "
             "meanwhile are in `cycles_interrupt`)";
    case Stage::idle:
      return "the CPU idle for any other reason: run time no stage explains (0 up to rounding "
             "today)";
    case Stage::tlb:
    case Stage::branch:
    case Stage::count:
      break;
  }
  // An optional model's stage: as the model says.
  std::string doc;
  models::for_each_model([&]<class M>(std::type_identity<M>) {
    if (M::kStage == s) doc = M::kStageDoc;
  });
  return doc;
}

// What a stage's cycles are, and which functions each stack charges to it
// (its function table says so).
std::string stage_meaning(models::Stage s) {
  std::string doc = stage_doc(s);
  std::vector<std::string> by_stack;
  for (const net::FnTable* t : stacks::fn_tables()) {
    std::vector<std::string_view> names;
    for (const net::FnInfo& f : t->fns())
      if (f.stage == models::stage_name(s)) names.push_back(f.name);
    if (!names.empty())
      by_stack.push_back(fmt::format("{}: {}", t->stack(), fmt::join(names, ", ")));
  }
  if (!by_stack.empty()) doc += fmt::format(" (functions: {})", fmt::join(by_stack, "; "));
  return doc;
}

// The helpers of the code around a stack's functions (sim/layout/code.h),
// and what a stack with words of its own calls them.
std::string helpers_by_stack() {
  std::vector<std::string_view> helpers;
  for (size_t i = models::code_index::header_access; i < models::code_index::count; ++i)
    helpers.push_back(models::kCodeNames[i]);
  std::string out = fmt::format("{}", fmt::join(helpers, ", "));
  for (const net::FnTable* t : stacks::fn_tables()) {
    std::vector<std::string> own;
    for (auto h : helpers)
      if (t->helper_word(h) != h) own.push_back(fmt::format("{} for {}", t->helper_word(h), h));
    if (!own.empty()) out += fmt::format("; {}: {}", t->stack(), fmt::join(own, ", "));
  }
  return out;
}

// A column's name, and each stack's own where it differs.
std::string names_by_stack(const Column& c) {
  std::string out = fmt::format("`{}`", c.name);
  if (!c.name_on) return out;
  std::vector<std::string> own;
  for (const net::FnTable* t : stacks::fn_tables())
    if (const std::string n = c.name_on(*t); n != c.name)
      own.push_back(fmt::format("{}: `{}`", t->stack(), n));
  if (!own.empty()) out += fmt::format(" ({})", fmt::join(own, "; "));
  return out;
}

double per_packet(const SimResult& r) {
  return r.packets > 0 ? 1.0 / static_cast<double>(r.packets) : 0;
}

std::string kind_meaning(models::CostKind k) {
  using models::CostKind;
  switch (k) {
    case CostKind::event:
      return "fixed costs per event: the function's own cost per call, system call entry and "
             "exit, the sender's loop, buffer allocation and free, an interrupt handler";
    case CostKind::per_byte:
      return "checksummed bytes";
    case CostKind::copy:
      return "bytes copied: setup and per byte at the aligned rate";
    case CostKind::misaligned:
      return "misaligned header accesses, and the extra per byte of copies off 4-byte alignment";
    case CostKind::cache:
      return "stalls, each when its model is on: I-cache misses of the function's own code, data "
             "TLB misses of the pages it touched, mispredicted calls into it and returns from it";
    case CostKind::idle:
      return "the CPU idle (the `sleep` and `idle` functions only)";
    case CostKind::count:
      break;
  }
  return "";
}

// Every run column: its name, unit and meaning, and its value from the run
// (absent where it does not apply to the run), in the row's order.
std::vector<Column> build() {
  std::vector<Column> c;
  using X = const config::Experiment&;
  using R = const SimResult&;
  const std::string Run = "run";
  // A column whose value the run (or only the experiment, `identity`) gives.
  auto run = [&c, &Run](std::string n, std::string u, std::string m, RunValue v,
                        bool identity = false) {
    c.push_back({std::move(n), std::move(u), Run, std::move(m), std::move(v), identity, {}});
  };
  auto id = [&run](std::string n, std::string m, auto f) {
    run(
        std::move(n), "", std::move(m), [f](X x, R) { return std::optional<report::Value>(f(x)); },
        true);
  };
  auto add = [&c](std::string n, std::string u, std::string w, std::string m) {
    c.push_back({std::move(n), std::move(u), std::move(w), std::move(m), {}, false, {}});
  };
  auto always = [](auto f) {
    return [f](X x, R r) { return std::optional<report::Value>(f(x, r)); };
  };
  id("source",
     "`simulated` for simloop's predictions (`native` and `kernel` rows come "
     "from `simloop measure`)",
     [](X) { return std::string("simulated"); });
  id("experiment", "the experiment's name", [](X x) { return x.name; });
  id("machine", "the machine cost file's name", [](X x) { return x.machine_name; });
  id("stack", "the stack cost file's name", [](X x) { return x.stack_name; });
  id("machine_host",
     "the fingerprint of the host the machine's costs were measured on (machine.host; empty for "
     "a machine estimated from published figures)",
     [](X x) { return x.machine_host.empty() ? std::string() : x.machine_host.fingerprint(); });
  run(
      "payload", "bytes", "UDP payload of each datagram",
      [](X x, R) { return std::optional<report::Value>(int64_t{x.workload.payload}); }, true);
  id("dest", "where datagrams go: loopback, broadcast, wire or self",
     [](X x) { return std::string(config::dest_name(x.workload.dest)); });
  id("align", "the stack's alignment policy (options.align)",
     [](X x) { return std::string(net::align_policy_name(x.options.align)); });
  // A choice some stacks do not have is no column of theirs.
  const std::vector<std::string> copying = stacks::stacks_honouring("options.copy");
  run(
      "copy", "",
      fmt::format(
          "how the loopback interface copies a packet (options.copy){}",
          copying.empty() ? "" : fmt::format("; {} stack only", fmt::join(copying, " and "))),
      [](X x, R) -> std::optional<report::Value> {
        if (!config::key_applies(x, "options.copy")) return std::nullopt;
        return std::string(net::loop_copy_name(x.options.loop_copy));
      },
      true);
  id("seed", "the run's random seed", [](X x) { return static_cast<int64_t>(x.seed); });
  run("packets", "datagrams",
      "datagrams sent: where they go on the wire (wire, broadcast), those whose frame left the "
      "NIC (not one a full ring dropped: drop_nic_full); else those sendto() took. Fewer than "
      "asked if the run ended early or the NIC dropped some",
      always([](X, R r) { return r.packets; }));
  run("elapsed_s", "s (simulated)",
      "simulated time from the first sendto() to the end of the last, or, where datagrams go "
      "on the wire (wire, broadcast), until the last frame has left the NIC: how long the run "
      "takes on the simulated host, so no rate exceeds the link's. All rates are per simulated "
      "second. Compare `wall_s` (real time this machine spent simulating) and `process_s` (real "
      "time of a sweep's whole child process)",
      always([](X, R r) { return r.elapsed_s; }));
  run("kpps", "10^3 datagrams / simulated s", "packets / elapsed_s / 1000: the predicted rate",
      always([](X, R r) { return r.kpps(); }));
  run("ns_per_packet", "ns (simulated)", "elapsed_s / packets",
      always([](X, R r) { return r.ns_per_packet(); }));
  run("cycles_per_packet", "cycles",
      "ns_per_packet times the clock: every cycle of the run per packet (the sum of the "
      "`cycles_<stage>` columns)",
      always([](X, R r) { return r.cycles_per_packet(); }));
  run("interrupt_pct", "%",
      "share of simulated time that interrupt handlers held the CPU: `cycles_interrupt` over "
      "`cycles_per_packet`, plus the stalls of the handlers' code when the I-cache, TLB or "
      "branch model is on",
      always([](X, R r) { return 100 * r.interrupt_share(); }));
  run("interrupts", "count", "interrupt handler runs", always([](X, R r) { return r.interrupts; }));
  run("enobufs", "count", "sendto() calls that failed with ENOBUFS (the sender then slept)",
      always([](X, R r) { return r.enobufs; }));
  run("sleep_s", "s (simulated)",
      "simulated time the sender slept after ENOBUFS, blocked on a full send buffer (Linux), "
      "or waited at the end for its last frames to leave the NIC",
      always([](X, R r) { return r.sleep_s; }));
  run("interval_kpps_cv", "ratio",
      "coefficient of variation of the rate over 20 equal slices of the run (0 when too few "
      "batches)",
      always([](X, R r) { return r.interval_kpps_cv; }));
  run("delivered", "datagrams",
      "datagrams that reached the receiving socket (loopback, broadcast, self) or frames that "
      "left the NIC (wire)",
      always([](X, R r) { return r.delivered; }));
  run("delivered_bytes", "bytes", "payload bytes of `delivered`",
      always([](X, R r) { return r.delivered_bytes; }));
  run("peer_frames", "frames",
      "frames that reached the peer host by the end of the run (wire, broadcast; 0 otherwise)",
      always([](X, R r) { return r.peer_frames; }));
  for (size_t d = 0; d < net::kDropCount; ++d) {
    const auto name = net::drop_name(static_cast<net::Drop>(d));
    run(fmt::format("drop_{}", name), "packets", fmt::format("packets dropped: {}", name),
        always([d](X, R r) { return static_cast<int64_t>(r.drops[d]); }));
    c.back().name_on = [name](const net::FnTable& t) {
      return fmt::format("drop_{}", t.drop_word(name));
    };
  }
  for (size_t s = 0; s < models::kStageCount; ++s) {
    const auto st = static_cast<models::Stage>(s);
    run(fmt::format("cycles_{}", models::stage_name(st)), "cycles per packet", stage_meaning(st),
        [st, s](X x, R r) -> std::optional<report::Value> {
          if (!models::stage_reported(x.models, st)) return std::nullopt;
          return r.cycles[s] * per_packet(r);
        });
    c.back().name_on = [st](const net::FnTable& t) {
      return fmt::format("cycles_{}", t.stage_word(models::stage_name(st)));
    };
  }
  run("i1_misses_per_packet", "misses per packet",
      "L1 I-cache demand misses per packet (only when the I-cache model is on)",
      [](X x, R r) -> std::optional<report::Value> {
        if (!x.cache_enabled) return std::nullopt;
        return static_cast<double>(r.l1i_misses) * per_packet(r);
      });
  run("l2_misses_per_packet", "misses per packet",
      "of those, misses in L2 too (only when the I-cache model is on)",
      [](X x, R r) -> std::optional<report::Value> {
        if (!x.cache_enabled) return std::nullopt;
        return static_cast<double>(r.l2_misses) * per_packet(r);
      });
  run("perturbation", "",
      "the layout perturbation applied (only when the I-cache model is on and one is set)",
      [](X x, R) -> std::optional<report::Value> {
        if (!x.cache_enabled || x.perturbation.empty()) return std::nullopt;
        return x.perturbation;
      });
  // The optional models' columns, as each model declares them, of those on.
  models::for_each_model([&]<class M>(std::type_identity<M>) {
    for (const auto& col : M::kColumns)
      run(std::string(col.name), std::string(col.unit), std::string(col.doc),
          [name = std::string(col.name)](X, R r) -> std::optional<report::Value> {
            for (const auto& [n, v] : r.model_columns)
              if (n == name) return v;
            return std::nullopt;
          });
  });
  run("outcome", "", "ok, alignment-fault or error", always([](X, R r) { return r.outcome; }));
  run("detail", "", "what ended the run early (empty when ok)",
      always([](X, R r) { return r.detail; }));
  run("wall_s", "s (real)",
      "real time this machine took to simulate the run, inside the process (engine set-up, "
      "the simulation, results): the simulator's speed, not the host's. Differs between "
      "identical runs",
      always([](X, R r) { return r.wall_s; }));
  const std::string S = "sweep";
  add("point", "", S, "the grid point's index, in the sweep's order");
  add("repeat", "", S, "the repeat of the point (each has its own seed)");
  add("point_hash", "", S,
      "hash of the base configuration and the point's settings that change it (what resume and "
      "merge match on)");
  add("<swept key>", "", S, "one column per swept key, holding its value at the point");
  add("status", "", S, "ok, fault, error or crashed");
  add("error", "", S, "why a run failed (empty when ok)");
  add("process_s", "s (real)", S,
      "real time of the run's whole child process, from its start to its exit: loading the "
      "configuration, `wall_s`, writing the row");
  const std::string L = "long";
  add("function", "", L,
      fmt::format("a function of the stack, code around it (syscall_entry, syscall_exit, "
                  "user_loop), a helper ({}), or interrupt_handler, sleep, idle",
                  helpers_by_stack()));
  add("metric", "", L, "one of the metrics below");
  add("value", "per packet", L, "the metric's value for the function");
  for (size_t k = 0; k < models::kCostKindCount; ++k) {
    const auto kind = static_cast<models::CostKind>(k);
    add(fmt::format("cycles_{}", models::cost_kind_name(kind)), "cycles per packet", "long metric",
        kind_meaning(kind));
  }
  add("cycles_total", "cycles per packet", "long metric",
      "the sum of the function's kinds; over all functions, `cycles_per_packet`");
  add("i1_misses", "misses per packet", "long metric",
      "L1 I-cache demand misses in the function's code (a line shared by several functions is "
      "split evenly); over all functions, `i1_misses_per_packet`");
  const std::string F = "json functions[]";
  add("function", "", F, "as in the long CSV");
  add("cycles_per_packet", "cycles per packet", F, "the function's total (`cycles_total`)");
  for (size_t k = 0; k < models::kCostKindCount; ++k) {
    const auto kind = static_cast<models::CostKind>(k);
    add(std::string(models::cost_kind_name(kind)), "cycles per packet", F, kind_meaning(kind));
  }
  add("i1_misses_per_packet", "misses per packet", F, "as `i1_misses` in the long CSV");
  const std::string T = "json icache_sets[]";
  add("set", "", T, "an L1 I-cache set that missed during the run");
  add("misses_per_packet", "misses per packet", T, "demand misses in the set");
  add("stall_per_packet", "cycles per packet", T, "stall cycles of those misses");
  add("symbols", "", T, "every hot symbol of the layout with code in the set");
  const std::string U = "json undetermined_costs[]";
  add("key", "", U,
      "a cost the run used that its profiles leave undetermined (`~`, priced 0): its key, "
      "stack.functions.NAME or another cost key");
  add("function", "", U, "the function it prices (stack.functions.NAME only)");
  add("where", "", U, "where it was left undetermined: FILE:LINE:COL, or --set");
  add("unit", "", U, "what the run used it for: calls, bytes checksummed, ...");
  add("uses", "count", U, "how many over the run");
  add("per_packet", "per packet", U, "`uses` per packet");
  return c;
}

}  // namespace

const std::vector<Column>& output_columns() {
  static const std::vector<Column> c = build();
  return c;
}

namespace {

report::Row row_of(const config::Experiment& x, const SimResult& r, bool identity_only) {
  report::Row row;
  for (const auto& col : output_columns()) {
    if (!col.value || (identity_only && !col.identity)) continue;
    if (auto v = col.value(x, r)) row.set(col.named(*x.stack.fns), std::move(*v));
  }
  return row;
}

}  // namespace

report::Row identity_row(const config::Experiment& x) {
  return row_of(x, SimResult{}, true);
}

report::Row result_row(const config::Experiment& x, const SimResult& r) {
  return row_of(x, r, false);
}

std::string output_reference_markdown() {
  std::string out =
      "# Output reference\n\n"
      "Generated by `simloop output-reference` from the table the code keeps of its output "
      "columns; a test holds it to what runs really write.\n\n"
      "Three clocks appear in results, and they are different things:\n\n"
      "- `elapsed_s` is **simulated** time: how long the simulated host takes to send the "
      "packets. Every rate (`kpps`, `ns_per_packet`, `cycles_per_packet`) derives from it.\n"
      "- `wall_s` is **real** time this machine spent simulating one run, inside the process. "
      "It measures the simulator, not the host, and differs between identical runs.\n"
      "- `process_s` (sweeps only) is **real** time of a run's whole child process: start-up, "
      "loading the configuration, `wall_s`, writing the row.\n\n"
      "Where a column appears:\n\n"
      "- `run`: the result row, in `<name>.csv` and under `result` in `<name>.json` "
      "(`simloop run`), and in every sweep row;\n"
      "- `sweep`: columns a sweep's CSV adds;\n"
      "- `long`: `<name>-long.csv` (`simloop run --long`), one row per function and metric, "
      "after the identifying columns of `run` (source to seed); `long metric`: the values of "
      "its `metric` column;\n"
      "- `json functions[]`, `json icache_sets[]`, `json undetermined_costs[]`: arrays beside "
      "`result` in `<name>.json`.\n\n"
      "The stage columns (`cycles_<stage>`) and the functions each hold every cycle of the run: "
      "each view sums to `cycles_per_packet`.\n\n"
      "A stack may say some columns in its own words (a stage, a drop): its rows name them "
      "so, as given beside the default name below. A column that does not apply to a stack "
      "(a choice it does not have) is not written for it. Rows of different stacks in one "
      "file have the union of their columns, each row empty where it has no such column.\n\n";
  std::string where;
  for (const auto& c : output_columns()) {
    if (c.where != where) {
      where = c.where;
      out += fmt::format("\n## {}\n\n| column | unit | meaning |\n|---|---|---|\n", where);
    }
    out += fmt::format("| {} | {} | {} |\n", names_by_stack(c), c.unit, c.meaning);
  }
  return out;
}

}  // namespace simloop::engine
