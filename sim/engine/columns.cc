#include "sim/engine/columns.h"

#include <fmt/format.h>

#include "models/cycle_account.h"
#include "models/fn_ledger.h"
#include "models/optional_models.h"
#include "sim/stack/net/probe.h"

namespace simloop::engine {

namespace {

std::string stage_meaning(models::Stage s) {
  using models::Stage;
  switch (s) {
    case Stage::user:
      return "the sender's own loop around each sendto()";
    case Stage::syscall:
      return "system call entry and exit of the sender's sendto()";
    case Stage::socket:
      return "sendto, sosend_dgram and m_uiotombuf (the socket layer)";
    case Stage::udp:
      return "udp_output";
    case Stage::ip:
      return "ip_output";
    case Stage::ether:
      return "ether_output";
    case Stage::driver:
      return "the hand-off to the NIC ring, and transmit completion when no interrupt runs it";
    case Stage::loop:
      return "looutput and if_simloop (the loopback interface)";
    case Stage::netisr:
      return "netisr dispatch of each looped-back packet";
    case Stage::input:
      return "ip_input, udp_input and sbappend (the receive path)";
    case Stage::receive:
      return "the receiver's recvfrom(): system call and soreceive";
    case Stage::copy:
      return "bytes copied (setup, per byte, and the extra for copies off 4-byte alignment)";
    case Stage::mbuf:
      return "mbuf and cluster allocation and free";
    case Stage::unaligned:
      return "penalties of misaligned header accesses (and of those crossing a cache line)";
    case Stage::cache:
      return "I-cache miss stalls (0 unless the I-cache model is on)";
    case Stage::interrupt:
      return "NIC interrupt handlers, transmit completion included (time taken from the sender)";
    case Stage::sleep:
      return "the CPU idle while the sender sleeps after ENOBUFS or waits for send space "
             "(interrupt handlers that ran "
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

std::vector<Column> build() {
  std::vector<Column> c;
  auto add = [&c](std::string n, std::string u, std::string w, std::string m) {
    c.push_back({std::move(n), std::move(u), std::move(w), std::move(m)});
  };
  const std::string R = "run";
  add("source", "", R,
      "`simulated` for simloop's predictions (`native` and `kernel` rows come "
      "from `simloop measure`)");
  add("experiment", "", R, "the experiment's name");
  add("machine", "", R, "the machine cost file's name");
  add("stack", "", R, "the stack cost file's name");
  add("payload", "bytes", R, "UDP payload of each datagram");
  add("dest", "", R, "where datagrams go: loopback, broadcast, wire or self");
  add("align", "", R, "the stack's alignment policy (options.align)");
  add("copy", "", R, "how the loopback interface copies a packet (options.copy)");
  add("seed", "", R, "the run's random seed");
  add("packets", "datagrams", R,
      "datagrams sent in the timed window (fewer than asked if the run ended early)");
  add("elapsed_s", "s (simulated)", R,
      "simulated time from the first sendto() to the end of the last: how long the run takes "
      "on the simulated host. All rates are per simulated second. Compare `wall_s` (real time "
      "this machine spent simulating) and `process_s` (real time of a sweep's whole child "
      "process)");
  add("kpps", "10^3 datagrams / simulated s", R, "packets / elapsed_s / 1000: the predicted rate");
  add("ns_per_packet", "ns (simulated)", R, "elapsed_s / packets");
  add("cycles_per_packet", "cycles", R,
      "ns_per_packet times the clock: every cycle of the run per packet (the sum of the "
      "`cycles_<stage>` columns)");
  add("interrupt_pct", "%", R, "share of simulated time that interrupt handlers held the CPU");
  add("interrupts", "count", R, "interrupt handler runs");
  add("enobufs", "count", R, "sendto() calls that failed with ENOBUFS (the sender then slept)");
  add("sleep_s", "s (simulated)", R,
      "simulated time the sender slept after ENOBUFS, or blocked on a full send buffer (Linux)");
  add("interval_kpps_cv", "ratio", R,
      "coefficient of variation of the rate over 20 equal slices of the run (0 when too few "
      "batches)");
  add("delivered", "datagrams", R,
      "datagrams that reached the receiving socket (loopback, broadcast, self) or frames that "
      "left the NIC (wire)");
  add("delivered_bytes", "bytes", R, "payload bytes of `delivered`");
  add("peer_frames", "frames", R,
      "frames that reached the peer host by the end of the run (wire, broadcast; 0 otherwise)");
  for (size_t d = 0; d < net::kDropCount; ++d) {
    const auto name = net::drop_name(static_cast<net::Drop>(d));
    add(fmt::format("drop_{}", name), "packets", R, fmt::format("packets dropped: {}", name));
  }
  for (size_t s = 0; s < models::kStageCount; ++s) {
    const auto st = static_cast<models::Stage>(s);
    add(fmt::format("cycles_{}", models::stage_name(st)), "cycles per packet", R,
        stage_meaning(st));
  }
  add("i1_misses_per_packet", "misses per packet", R,
      "L1 I-cache demand misses per packet (only when the I-cache model is on)");
  add("l2_misses_per_packet", "misses per packet", R,
      "of those, misses in L2 too (only when the I-cache model is on)");
  add("perturbation", "", R,
      "the layout perturbation applied (only when the I-cache model is on and one is set)");
  models::for_each_model([&]<class M>(std::type_identity<M>) {
    for (const auto& col : M::kColumns)
      add(std::string(col.name), std::string(col.unit), R, std::string(col.doc));
  });
  add("outcome", "", R, "ok, alignment-fault or error");
  add("detail", "", R, "what ended the run early (empty when ok)");
  add("wall_s", "s (real)", R,
      "real time this machine took to simulate the run, inside the process (engine set-up, "
      "the simulation, results): the simulator's speed, not the host's. Differs between "
      "identical runs");
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
      "a function of the stack, code around it (syscall_entry, syscall_exit, user_loop), a "
      "helper (header_access, cksum, mbuf_alloc, mbuf_free, copy), or interrupt_handler, "
      "sleep, idle");
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
  return c;
}

}  // namespace

const std::vector<Column>& output_columns() {
  static const std::vector<Column> c = build();
  return c;
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
      "- `json functions[]`, `json icache_sets[]`: arrays beside `result` in `<name>.json`.\n\n"
      "The stage columns (`cycles_<stage>`) and the functions each hold every cycle of the run: "
      "each view sums to `cycles_per_packet`.\n\n";
  std::string where;
  for (const auto& c : output_columns()) {
    if (c.where != where) {
      where = c.where;
      out += fmt::format("\n## {}\n\n| column | unit | meaning |\n|---|---|---|\n", where);
    }
    out += fmt::format("| `{}` | {} | {} |\n", c.name, c.unit, c.meaning);
  }
  return out;
}

}  // namespace simloop::engine
