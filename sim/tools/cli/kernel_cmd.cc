// simloop measure kernel: this machine's own kernel, timed, and with --split
// profiled function by function under perf.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <tuple>

#include "sim/report/safe_file.h"
#include "sim/stack/net/inet.h"
#include "sim/stack/stack_set.h"
#include "sim/tools/cli/commands.h"
#include "sim/tools/measure/kernel.h"
#include "sim/tools/measure/kernel_nft.h"
#include "sim/tools/measure/kernel_split.h"
#include "sim/tools/measure/kernel_veth.h"

namespace simloop::cli {

namespace {

// The symbol table of the list's first stack measured on the kernel.
std::string default_symbols() {
  const auto kernel_stacks = stacks::measured_on(net::Measured::kernel);
  return kernel_stacks.empty() ? std::string() : stacks::perf_symbols(kernel_stacks.front());
}

struct KernelArgs {
  measure::KernelOptions opt;
  std::vector<std::string> paths = {"unconnected"};
  bool split = false;
  measure::SplitOptions split_opt;
  std::string symbols = default_symbols();
  std::string out;
  std::string format = "table";
};

void print_kernel_rows(const std::vector<report::Row>& rows, const std::string& format, bool nft) {
  std::vector<std::string> cols = {"repeat", "path", "sendmmsg", "payload", "segments"};
  if (nft) cols.push_back("nft_rules");
  for (const char* c : {"packets", "kpps", "ns_per_packet", "null_syscall_ns", "delivered",
                        "empty_reads", "send_errors", "loadavg_1m"})
    cols.push_back(c);
  print_rows(rows, format, cols);
}

// Per path and payload, the repeat with the least wall time per packet (the
// min statistic), function by function: what the simulated function stands
// for (its own symbols and the unmapped helpers it called), then the
// unmapped symbols themselves.
void print_split(const measure::KernelSplit& split) {
  std::map<std::tuple<measure::KernelPath, int, measure::KernelKnobs>,
           std::pair<int, const measure::SplitGroup*>>
      best;
  for (const auto& [key, g] : split.groups) {
    const auto& [repeat, path, payload, knobs] = key;
    auto& b = best[{path, payload, knobs}];
    const auto per = [&](const measure::SplitGroup& x) {
      return x.packets > 0 ? measure::wall_ns_per_packet(split, x) : 1e300;
    };
    if (b.second == nullptr || per(g) < per(*b.second)) b = {repeat, &g};
  }
  for (const auto& [key, b] : best) {
    const auto& [path, payload, knobs] = key;
    const measure::SplitGroup& g = *b.second;
    if (g.packets == 0 || g.samples == 0) continue;
    const double pp = static_cast<double>(split.period_ns) / static_cast<double>(g.packets);
    std::map<std::string, std::pair<int64_t, int64_t>> by_fn;  // charged_to -> (self, with helpers)
    std::vector<std::pair<std::string, std::pair<int64_t, std::string>>> unmapped;
    for (const auto& [what, n] : g.charged) {
      const auto& [kind, name, to] = what;
      auto& f = by_fn[to.empty() ? "(no caller named)" : to];
      f.second += n;
      if (kind != measure::ChargeKind::unmapped)
        f.first += n;
      else
        unmapped.push_back({name, {n, to}});
    }
    std::vector<std::pair<std::string, std::pair<int64_t, int64_t>>> rows(by_fn.begin(),
                                                                          by_fn.end());
    std::sort(rows.begin(), rows.end(),
              [](const auto& x, const auto& y) { return x.second.second > y.second.second; });
    std::cout << fmt::format(
        "{} {} B{}, repeat {} (least time per packet: {:.0f} ns wall, {} packets, {} samples of "
        "{} ns; {:.1f} % of them landed in hypervisor symbols and are charged to their "
        "callers):\n",
        measure::kernel_path_name(path), payload, knobs.label(), b.first,
        measure::wall_ns_per_packet(split, g), g.packets, g.samples, split.period_ns,
        100.0 * static_cast<double>(g.hypervisor_samples) / g.samples);
    if (g.plain_packets > 0) {
      const double plain = g.plain_cpu_ns / static_cast<double>(g.plain_packets);
      std::cout << fmt::format(
          "  CPU time per packet: {:.0f} ns without perf, {:.0f} ns sampled under it ({:+.1f} "
          "%); {:.0f} ns of it in user space (getrusage)\n",
          plain, static_cast<double>(g.samples) * pp,
          100 * (static_cast<double>(g.samples) * pp / plain - 1),
          g.plain_user_ns / static_cast<double>(g.plain_packets));
    }
    std::cout << fmt::format("  {:<28} {:>12} {:>14} {:>7}\n", "function", "self ns/pkt",
                             "+helpers ns/pkt", "share");
    for (const auto& [name, v] : rows)
      std::cout << fmt::format(
          "  {:<28} {:>12.1f} {:>14.1f} {:>6.1f}%\n", name, static_cast<double>(v.first) * pp,
          static_cast<double>(v.second) * pp, 100.0 * static_cast<double>(v.second) / g.samples);
    std::sort(unmapped.begin(), unmapped.end(),
              [](const auto& x, const auto& y) { return x.second.first > y.second.first; });
    std::cout << "  unmapped symbols (in '+helpers' of the function named):\n";
    for (size_t i = 0; i < unmapped.size() && i < 12; ++i)
      std::cout << fmt::format(
          "    {:<34} {:>6.1f}% -> {}\n", unmapped[i].first,
          100.0 * static_cast<double>(unmapped[i].second.first) / g.samples,
          unmapped[i].second.second.empty() ? "(no caller named)" : unmapped[i].second.second);
    if (unmapped.size() > 12)
      std::cout << fmt::format("    ... {} more (all in the rows of -o / --format csv)\n",
                               unmapped.size() - 12);
  }
  if (split.outside_samples > 0 || split.unresolved_samples > 0)
    spdlog::info(
        "{} samples fell outside the timed slices (warm-up, null system calls), {} had "
        "no call chain",
        split.outside_samples, split.unresolved_samples);
}

int run_kernel_cmd(KernelArgs& a) {
  a.opt.paths.clear();
  for (const auto& p : a.paths)
    for (const auto& [name, path] : measure::kernel_path_names())
      if (p == name) a.opt.paths.push_back(path);
  if (!a.opt.nft_rules.empty()) {
    for (const auto path : a.opt.paths)
      if (measure::kernel_path_veth(path))
        throw UserError(
            fmt::format("--nft-rules: rules are measured on lo's paths "
                        "(unconnected, connected), not {}",
                        measure::kernel_path_name(path)));
    if (const std::string why = measure::nft_unavailable(); !why.empty()) throw UserError(why);
  }
  // Every payload must go with every segment count, before anything runs.
  for (int seg : a.opt.gso_segments)
    for (int payload : a.opt.payloads)
      if (const std::string why = measure::gso_problem(payload, seg); !why.empty())
        throw UserError("--gso-segments: " + why);
  // The veth paths' refusals come before any run, and nothing is written.
  for (const auto path : a.opt.paths) {
    if (!measure::kernel_path_veth(path)) continue;
    for (const int payload : a.opt.payloads)
      if (payload > measure::kernel_max_payload(path, a.opt))
        throw UserError(fmt::format(
            "--payload {}: path {} carries at most {} bytes (--veth-mtu {} less the IP and UDP "
            "headers; no fragmentation is measured)",
            payload, measure::kernel_path_name(path), measure::kernel_max_payload(path, a.opt),
            a.opt.veth_mtu));
    if (const std::string why = measure::VethPair::unavailable(); !why.empty())
      throw UserError(why);
  }
  const auto machine = measure::machine_info();
  spdlog::info(
      "kernel run on {} ({} cores, {}): paths {}, payloads {}, sendmmsg {}, segments per send {}, "
      "{} packets, {} repeat(s)",
      machine.cpu_model, machine.cores, machine.kernel, fmt::join(a.paths, ","),
      fmt::join(a.opt.payloads, ","), fmt::join(a.opt.sendmmsg, ","),
      fmt::join(a.opt.gso_segments, ","), a.opt.packets, a.opt.repeats);
  if (a.split) {
    a.split_opt.symbols = tree_file(a.symbols);
    measure::load_symbol_map(a.split_opt.symbols);  // bad input before a run, not after it
    if (const std::string why = measure::perf_unavailable(a.split_opt.perf); !why.empty())
      throw UserError(why);
    std::vector<measure::KernelResult> results;
    measure::KernelSplit split;
    try {
      split = measure::run_kernel_split(a.opt, a.split_opt, results);
    } catch (const measure::NftError& e) {
      throw UserError(fmt::format("--nft-rules: {}", e.what()));
    }
    const auto rows = measure::split_rows(split, machine, measure::loadavg_1m());
    if (a.format == "table")
      print_split(split);
    else
      print_kernel_rows(rows, a.format, !a.opt.nft_rules.empty());
    if (!a.out.empty()) {
      report::write_file_atomic(a.out, report::to_csv(rows));
      auto desc = machine.to_json();
      desc["command"] = "simloop measure kernel --split";
      desc["perf"] = fmt::format("perf record -e cpu-clock -c {} -g -k CLOCK_MONOTONIC",
                                 a.split_opt.period_ns);
      desc["symbols"] = a.split_opt.symbols.string();
      desc["hypervisor"] = "samples in hypervisor symbols charged to their nearest other caller";
      if (report::write_beside(a.out, ".machine.json", desc.dump(2) + "\n"))
        spdlog::info("wrote {} and {}.machine.json", a.out, a.out);
    }
    for (const auto& r : results)
      if (!r.fault.empty()) return 3;
    return 0;
  }
  std::vector<measure::KernelResult> results;
  try {
    results = measure::run_kernel(a.opt);
  } catch (const measure::NftError& e) {
    throw UserError(fmt::format("--nft-rules: {}", e.what()));
  }
  std::vector<report::Row> rows;
  for (const auto& r : results) rows.push_back(measure::kernel_row(r, machine));
  print_kernel_rows(rows, a.format, !a.opt.nft_rules.empty());
  if (!a.out.empty()) {
    report::write_file_atomic(a.out, report::to_csv(rows));
    // The machine the numbers belong to, beside them.
    auto desc = machine.to_json();
    desc["command"] = "simloop measure kernel";
    desc["drain"] =
        "same thread, one non-blocking recv() per outstanding datagram after each sendto()";
    desc["null_syscall"] = "syscall(SYS_getppid)";
    if (report::write_beside(a.out, ".machine.json", desc.dump(2) + "\n"))
      spdlog::info("wrote {} and {}.machine.json", a.out, a.out);
  }
  for (const auto& r : results)
    if (!r.fault.empty()) return 3;
  return 0;
}

}  // namespace

void add_measure_kernel(CLI::App& measure, std::vector<Command>& commands) {
  auto* kernel = measure.add_subcommand(
      "kernel",
      "A ttcp-like UDP sendto() loop to a socket bound on 127.0.0.1, through this machine's\n"
      "own kernel. The receiver is drained in the same thread after each sendto() (one\n"
      "non-blocking recv() per outstanding datagram), so a packet costs two system calls.\n"
      "A null system call (getppid) is timed beside it, interleaved with the payloads in\n"
      "every repeat. With --split, the same loop runs under perf (as root) and each kernel\n"
      "function's self time per packet is reported, mapped onto the simulated Linux stack's\n"
      "functions. Under perf the loop pauses a random while (up to a few microseconds, in\n"
      "simloop_kernel_dither) after each datagram, so that perf's fixed sampling period\n"
      "meets the loop at every phase; the pauses are left out of every figure.");
  auto k = std::make_shared<KernelArgs>();
  kernel->add_option("-l,--payload", k->opt.payloads, "UDP payload bytes, a comma-separated list")
      ->delimiter(',')
      ->check(CLI::Range(0, net::kMaxUdpPayload))
      ->capture_default_str();
  std::vector<std::string> path_names;
  for (const auto& [name, p] : measure::kernel_path_names()) path_names.push_back(name);
  kernel
      ->add_option("--path", k->paths,
                   "How datagrams are addressed, a comma-separated list: unconnected (sendto()\n"
                   "with the address, a route lookup each) or connected (send() on a connected\n"
                   "socket, the route cached); several are interleaved like the payloads.\n"
                   "veth, veth-connected and veth-broadcast (root only) send from a network\n"
                   "namespace of the process's own over a veth pair to a receiver in another\n"
                   "(10.231.0.1/30 to .2, or to the subnet's broadcast .3 with SO_BROADCAST);\n"
                   "both namespaces and the pair end with the process, however it ends")
      ->delimiter(',')
      ->check(CLI::IsMember(path_names))
      ->capture_default_str();
  kernel
      ->add_option("--sendmmsg", k->opt.sendmmsg,
                   "Messages per sendmmsg(2) call, a comma-separated list: 1 is the sendto()\n"
                   "(or send()) loop, more sends that many per call, then drains them; several\n"
                   "are interleaved like the payloads")
      ->delimiter(',')
      ->check(CLI::Range(1, measure::kMaxSendmmsg))
      ->capture_default_str();
  kernel
      ->add_option(
          "--nft-rules", k->opt.nft_rules,
          "Rule counts, a comma-separated list (0 to 10000): each runs in a network namespace\n"
          "of its own (gone with the process) with lo up and, unless 0, a chain on the output\n"
          "hook of N rules 'ip daddr 198.18.X.Y counter' that match no datagram sent, loaded\n"
          "with nft -f -; interleaved like the payloads. 0 is no table at all. Needs root and\n"
          "nft (exit 2 saying which is missing); the host's own ruleset is never touched")
      ->delimiter(',')
      ->check(CLI::Range(0, measure::kMaxMeasuredNftRules));
  kernel
      ->add_option("--gso-segments", k->opt.gso_segments,
                   "UDP GSO: datagrams per sendto(), a comma-separated list interleaved like the\n"
                   "payloads. N > 1 sets UDP_SEGMENT to the payload and sends N payloads at once;\n"
                   "the kernel delivers N datagrams. 1 is the plain send. Packets, kpps and CPU\n"
                   "time per packet count datagrams; payload x N may not exceed 65507 bytes")
      ->delimiter(',')
      ->check(CLI::Range(1, measure::kUdpMaxSegments))
      ->capture_default_str();
  kernel
      ->add_option("--so-rcvbuf", k->opt.so_rcvbuf,
                   "The receiver's SO_RCVBUF in bytes, set as a program sets it (the kernel\n"
                   "doubles it and clamps it to net.core.rmem_max); datagrams that do not fit are\n"
                   "dropped, and `delivered` says how many arrived. 0: room for every datagram a\n"
                   "call leaves queued, so that none is dropped")
      ->check(CLI::Range(0, 1 << 30))
      ->capture_default_str();
  kernel
      ->add_option("--veth-mtu", k->opt.veth_mtu,
                   "MTU of the veth pair (veth paths): payloads up to it less 28 bytes")
      ->check(CLI::Range(68, 65535))
      ->capture_default_str();
  kernel
      ->add_option("-n,--packets", k->opt.packets,
                   "Timed datagrams per channel (path, payload and knobs) and repeat")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40))
      ->capture_default_str();
  kernel->add_option("--warmup", k->opt.warmup, "Untimed datagrams before timing starts")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  kernel->add_option("--null-syscalls", k->opt.null_syscalls, "getppid() calls timed per repeat")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40))
      ->capture_default_str();
  kernel
      ->add_option("--rounds", k->opt.rounds,
                   "Slices of each repeat: each slice times a share of the null system calls and\n"
                   "of every payload's packets, in a rotating order")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  kernel->add_option("-r,--repeats", k->opt.repeats, "Independent runs (all payloads in each)")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  kernel->add_flag(
      "--split", k->split,
      "Profile the loop with perf record -e cpu-clock -g (needs root, perf and kernel\n"
      "symbols; exit 2 saying which is missing) and report each function's self time\n"
      "per packet, for the repeat with the least time per packet");
  kernel->add_option("--perf", k->split_opt.perf, "The perf program (--split)")
      ->capture_default_str();
  kernel
      ->add_option("--period", k->split_opt.period_ns, "cpu-clock sampling period in ns (--split)")
      ->check(CLI::Range(int64_t{10'000}, int64_t{100'000'000}))
      ->capture_default_str();
  kernel
      ->add_option("--symbols", k->symbols,
                   "Which kernel symbols stand for which simulated Linux function (--split)")
      ->capture_default_str();
  kernel->add_option("-o,--output", k->out,
                     "Also write the rows to FILE (CSV) and the machine to FILE.machine.json");
  kernel->add_option("--format", k->format, "What to print: table, csv or json")
      ->check(CLI::IsMember({"table", "csv", "json"}))
      ->capture_default_str();
  commands.push_back({kernel, [k] { return run_kernel_cmd(*k); }});
}

}  // namespace simloop::cli
