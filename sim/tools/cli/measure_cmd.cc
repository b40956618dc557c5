// simloop measure native: the real stack, timed for real.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>

#include "sim/report/stats.h"
#include "sim/stack/stack_set.h"
#include "sim/tools/cli/commands.h"
#include "sim/tools/measure/harness_run.h"
#include "sim/tools/measure/kernel.h"
#include "sim/tools/measure/native.h"
#include "sim/tools/measure/path_options.h"
#include "sim/tools/measure/programs.h"
#include "sim/tools/measure/stage_timer.h"
#include "sim/tools/measure/stage_timer_overhead.h"

namespace simloop::cli {

namespace {

struct NativeArgs {
  measure::NativeOptions opt;
  std::vector<std::string> paths;
  std::vector<int> payloads = {18};
  std::string harness;
  std::string out;
  std::string format = "table";
  std::string stack;  // "" or the first stack's name: opt.stack's, with --split and --harness
};

// The host's options of a native run: its path's, and the device's.
net::HostOptions host_of(const measure::NativeOptions& o) {
  return {.align = o.path.align,
          .loop_copy = o.path.copy,
          .sockaddr_misalign = o.path.sockaddr_misalign,
          .nic_ring = o.stack.nic_ring,
          .ether_mtu = o.stack.ether_mtu};
}

// Mean and sd of kpps over the repeats of each payload.
void print_repeat_summary(const std::vector<report::Row>& rows) {
  std::map<int64_t, std::vector<double>> by_payload;
  for (const auto& r : rows) {
    const auto* p = r.find("payload");
    const auto* k = r.find("kpps");
    if (p == nullptr || k == nullptr || !std::holds_alternative<int64_t>(*p) ||
        !std::holds_alternative<double>(*k))
      continue;
    by_payload[std::get<int64_t>(*p)].push_back(std::get<double>(*k));
  }
  for (const auto& [payload, v] : by_payload) {
    if (v.size() < 2) continue;
    std::cout << fmt::format("payload {}: mean {:.1f} kpps, sd {:.1f} over {} repeats\n", payload,
                             report::mean(v), report::sd(v), v.size());
  }
}

// Native rows as print_rows() shows them, and in a table the spread of each
// payload's repeats.
void print_native_rows(const std::vector<report::Row>& rows, const std::string& format,
                       const std::vector<std::string>& columns) {
  print_rows(rows, format, columns);
  if (format == "table") print_repeat_summary(rows);
}

void write_rows(const std::string& out, const std::vector<report::Row>& rows) {
  if (out.empty()) return;
  report::write_rows(out, rows);
  spdlog::info("wrote {}", out);
}

// The same measurement by a harness build (simloop-harness*), a program of
// its own whose code layout is known: its symbol map is kept beside the rows.
int run_harness_cmd(const NativeArgs& a) {
  const measure::NativeOptions defaults;
  if (a.opt.duration_s > 0 || a.opt.split ||
      a.opt.stack.max_linkhdr != defaults.stack.max_linkhdr ||
      a.opt.stack.ether_mtu != defaults.stack.ether_mtu)
    throw UserError(
        "--harness runs the harness program, which takes only --payload, --packets, --warmup, "
        "--repeats and the path's options (--dest, --align, --copy, --sockaddr-misalign, "
        "--service, --buffer-misalign)");
  if (!std::filesystem::is_regular_file(a.harness))
    throw UserError(
        fmt::format("--harness {}: no such file (harness builds are "
                    "build/simloop-harness*)",
                    a.harness));
  measure::HarnessSpec h;
  h.path = a.harness;
  h.opt = a.opt;
  std::vector<report::Row> rows;
  int faults = 0;
  for (int rep = 0; rep < a.opt.repeats; ++rep)
    for (int payload : a.payloads) {
      h.opt.payload = payload;
      spdlog::info("native run of {}: payload {} B, repeat {}/{}", a.harness, payload, rep + 1,
                   a.opt.repeats);
      std::vector<report::Row> got;
      try {
        got = measure::run_harness_native(h, a.opt.packets);
      } catch (const measure::Stopped&) {
        throw;
      } catch (const std::runtime_error& e) {
        throw UserError(e.what(), 3);
      }
      for (auto& r : got) {
        r.set("repeat", int64_t{rep});
        if (const auto* f = r.find("fault"); f != nullptr && !report::format_value(*f).empty())
          ++faults;
        rows.push_back(std::move(r));
      }
    }
  print_native_rows(
      rows, a.format,
      {"layout", "repeat", "payload", "dest", "align", "copy", "packets", "kpps", "ns_per_packet"});
  write_rows(a.out, rows);
  if (!a.out.empty()) {
    const std::string nm = fmt::format("{}.{}.nm", a.out, measure::harness_layout_name(a.harness));
    report::write_file_atomic(nm, measure::nm_output(a.harness));
    spdlog::info("wrote the harness's symbol map to {}", nm);
  }
  return faults > 0 ? 3 : 0;
}

int run_native_cmd(NativeArgs& a) {
  // Every path (--path; the fields it leaves out at their defaults), or the
  // path the options name.
  std::vector<measure::NativeOptions> paths;
  for (const auto& spec : a.paths) {
    measure::NativeOptions o = a.opt;
    try {
      o.path = workload::Path::parse(spec);
    } catch (const workload::PathError& e) {
      throw UserError(fmt::format("--path '{}': {}", spec, e.what()));
    }
    paths.push_back(o);
  }
  if (paths.empty()) paths.push_back(a.opt);
  // Another stack than the first (whose options opt.stack holds) runs with
  // its own options at their defaults.
  const std::string first(stacks::fn_tables().front()->stack());
  const bool other = !a.stack.empty() && a.stack != first;
  if (other && !a.harness.empty())
    throw UserError(
        fmt::format("--harness times the {} stack's harness build; --stack {} runs in "
                    "this process",
                    first, a.stack));
  const stacks::StackOptionSet own;
  for (const auto& o : paths)
    for (int payload : a.payloads) {
      if (other) {
        if (auto p = stacks::problem(a.stack, host_of(o), own, o.path.dest, payload))
          throw UserError(fmt::format("--stack {}: {}: {}", a.stack, p.key, p.message));
      } else if (auto why = o.path.payload_problem(payload, o.stack); !why.empty()) {
        throw UserError(fmt::format("--payload {}: {}", payload, why));
      }
    }
  if (!a.harness.empty()) {
    if (!a.paths.empty())
      throw UserError("--harness runs one path: use the path's options (--dest, --align, ...)");
    return run_harness_cmd(a);
  }

  // Paths and payloads inside repeats: a busy moment of a shared machine
  // then spreads over every point instead of falling on one.
  std::vector<measure::NativeResult> results;
  std::vector<report::Row> rows;
  if (a.opt.split)
    spdlog::info("per-function times: the time stamp counter steps about {} ticks at a time{}",
                 measure::StageTimer::clock_step(),
                 measure::StageTimer::waits() ? ", so each read is followed by a random wait" : "");
  for (int rep = 0; rep < a.opt.repeats; ++rep) {
    // What the instrumented run's clock reads cost, measured in each repeat.
    measure::SplitOverhead oh;
    if (a.opt.split) oh = measure::measure_split_overhead(20000, 3);
    for (const auto& path : paths)
      for (int payload : a.payloads) {
        measure::NativeOptions o = path;
        o.payload = payload;
        o.repeats = 1;
        spdlog::info("native run: payload {} B, {} {}, path {}, repeat {}/{}", payload,
                     o.duration_s > 0 ? o.duration_s : double(o.packets),
                     o.duration_s > 0 ? "s" : "packets", o.path.spec(), rep + 1, a.opt.repeats);
        auto r = (other ? measure::run_native(o, a.stack, host_of(o), own) : measure::run_native(o))
                     .front();
        r.repeat = rep;
        auto row = measure::native_row(o, r);
        if (other) row.set("stack", a.stack);
        row.set("misalign", int64_t{o.path.sockaddr_misalign});
        if (o.split)
          row.set("split_overhead_self_ns", oh.self_ns)
              .set("split_overhead_parent_ns", oh.parent_ns);
        row.set("loadavg_1m", measure::loadavg_1m());
        rows.push_back(std::move(row));
        results.push_back(std::move(r));
      }
  }

  print_native_rows(rows, a.format,
                    {"repeat", "payload", "dest", "align", "copy", "packets", "kpps",
                     "ns_per_packet", "delivered", "enobufs_retries"});
  if (a.format == "table") {
    for (const auto& r : results) {
      for (size_t d = 0; d < net::kDropCount; ++d)
        if (r.drops[d] != 0)
          std::cout << fmt::format("repeat {}: {} packets dropped ({})\n", r.repeat, r.drops[d],
                                   net::drop_name(static_cast<net::Drop>(d)));
      if (!r.fault.empty()) std::cout << fmt::format("repeat {}: stopped: {}\n", r.repeat, r.fault);
      if (!r.stage_ns.empty()) {
        double total = 0;
        for (const auto& [name, ns] : r.stage_ns) total += ns;
        std::cout << fmt::format("repeat {}: per-stage self time (instrumented run):\n", r.repeat);
        for (const auto& [name, ns] : r.stage_ns)
          std::cout << fmt::format("  {:<20} {:8.1f} ns/packet {:5.1f} %\n", name, ns,
                                   total > 0 ? 100 * ns / total : 0);
      }
    }
  }
  write_rows(a.out, rows);
  for (const auto& r : results)
    if (!r.fault.empty()) return 3;
  return 0;
}

}  // namespace

void add_measure(CLI::App& app, std::vector<Command>& commands) {
  auto* measure = app.add_subcommand("measure", "Measured runs that predictions are held against");
  measure->require_subcommand(1);
  auto* native = measure->add_subcommand(
      "native",
      "Run a ttcp-like sender through the real mbuf stack, without the simulator, and time it.\n"
      "Each packet goes the whole way (send, output, loop or ring, input, receive, free)\n"
      "before the next one is sent.");
  auto a = std::make_shared<NativeArgs>();
  native
      ->add_option("-l,--payload", a->payloads,
                   "UDP payload bytes per datagram, a comma-separated list")
      ->delimiter(',')
      ->check(CLI::Range(0, workload::Path::kMaxPayload))
      ->capture_default_str();
  native->add_option("-n,--packets", a->opt.packets, "Timed datagrams per repeat")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40))
      ->capture_default_str();
  native
      ->add_option("-d,--duration", a->opt.duration_s,
                   "Run each repeat for this many seconds instead of --packets")
      ->check(CLI::Range(0.0, 86400.0));
  native->add_option("--warmup", a->opt.warmup, "Untimed datagrams before timing starts")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  measure::add_path_options(native, a->opt.path);
  native
      ->add_option("--max-linkhdr", a->opt.stack.max_linkhdr,
                   "Link header space reserved in front of the data")
      ->check(CLI::Range(0, 64))
      ->capture_default_str();
  native->add_option("--ether-mtu", a->opt.stack.ether_mtu, "MTU of em0")
      ->check(CLI::Range(68, net::kMaxEtherMtu))
      ->capture_default_str();
  native->add_option("-r,--repeats", a->opt.repeats, "Independent runs")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  native->add_option("--harness", a->harness,
                     "Time a harness build (simloop-harness*, a program of its own with a known\n"
                     "code layout) instead of this process; with -o its symbol map is written\n"
                     "to OUTPUT.LAYOUT.nm");
  native
      ->add_option(
          "--path", a->paths,
          "DEST/ALIGN/COPY[/MISALIGN[/SERVICE[/BUFFER]]],...: measure each of these paths\n"
          "(instead of the path's options: --dest, --align, --copy, --sockaddr-misalign,\n"
          "--service, --buffer-misalign; a field left out is at its default), interleaved\n"
          "within each repeat")
      ->delimiter(',');
  std::vector<std::string> names;
  for (const net::FnTable* t : stacks::fn_tables()) names.emplace_back(t->stack());
  native
      ->add_option("--stack", a->stack,
                   fmt::format("Which stack runs: {} (default {}; another runs with its own\n"
                               "options at their defaults, the path's and --ether-mtu's)",
                               fmt::join(names, ", "), names.front()))
      ->check(CLI::IsMember(names));
  native->add_flag("--split", a->opt.split,
                   "Also time each stack function (an extra, slower instrumented run)");
  native->add_option("-o,--output", a->out, "Also write the rows to FILE (.csv or .json)");
  native->add_option("--format", a->format, "What to print: table, csv or json")
      ->check(CLI::IsMember({"table", "csv", "json"}))
      ->capture_default_str();
  commands.push_back({native, [a] { return run_native_cmd(*a); }});

  add_measure_kernel(*measure, commands);
  add_measure_valgrind(*measure, commands);
  add_measure_microbench(*measure, commands);
}

void print_rows(const std::vector<report::Row>& rows, const std::string& format,
                const std::vector<std::string>& columns) {
  if (format == "csv") {
    std::cout << report::to_csv(rows);
  } else if (format == "json") {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& r : rows) j.push_back(report::to_json(r));
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << report::format_table(rows, columns);
  }
}

}  // namespace simloop::cli
