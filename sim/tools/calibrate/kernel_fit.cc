// A kernel-measured stack driven for its counts, the fit of its costs to the
// kernel's split, and the profile it becomes (kernel_fit.h).
#include "sim/tools/calibrate/kernel_fit.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

#include "models/costs.h"
#include "models/l1d_copies.h"
#include "sim/report/safe_file.h"
#include "sim/stack/workload/driver.h"
#include "sim/support/text.h"
#include "sim/tools/calibrate/nnls.h"

namespace simloop::measure {

namespace fs = std::filesystem;

namespace {

// The table of the stack a fit is of.
const net::FnTable& fns_of(const std::string& stack) {
  const net::FnTable* t = stacks::find_fn_table(stack);
  if (t == nullptr) throw InputError("no stack named " + stack);
  return *t;
}
std::string fn_name(const net::FnTable& fns, size_t i) {
  return std::string(fns.name(net::fn_at(i)));
}

// The group a function's time is observed in: itself, or the caller the
// kernel inlines it into.
size_t group_of(const KernelFit& fit, const net::FnTable& fns, size_t i) {
  std::string n = fn_name(fns, i);
  for (int guard = 0; guard < 8; ++guard) {
    const auto it = fit.inlined_into.find(n);
    if (it == fit.inlined_into.end()) break;
    n = it->second;
  }
  return net::index(*fns.find(n));
}

Point as_point(const KernelPoint& p) {
  Point q;
  q.source = "kernel";
  q.keys["path"] = p.path;
  q.keys["payload"] = std::to_string(p.payload);
  q.keys["sendmmsg"] = std::to_string(p.sendmmsg);
  q.keys["nft_rules"] = std::to_string(p.nft_rules);
  q.keys["segments"] = std::to_string(p.segments);
  return q;
}

}  // namespace

stacks::CallCounts stack_counts(const std::string& stack, const std::string& path, int payload,
                                int packets, const KernelKnobs& knobs, const L1dGeometry& l1d) {
  // measure kernel's paths: lo's two, and the veth pair's unicast two.
  const bool veth = path == "veth" || path == "veth-connected";
  if (path != "unconnected" && path != "connected" && !veth)
    throw InputError("path '" + path +
                     "': expected unconnected, connected, veth or veth-connected");
  // Each knob turned is the stack's own key: a stack without one cannot
  // stand for rows measured with it.
  stacks::StackOptionSet own;
  auto set = [&](const char* name, int value) {
    const std::string key = "options." + stack + "." + name;
    const auto& keys = stacks::keys();
    const auto k = std::find_if(keys.begin(), keys.end(),
                                [&](const stacks::StackKey& x) { return x.path == key; });
    if (k == keys.end())
      throw InputError(fmt::format("{} {}: the {} stack has no {}", name, value, stack, key));
    if (value < k->lo || value > k->hi)
      throw InputError(fmt::format("{} {}: expected {} to {}", key, value, k->lo, k->hi));
    k->set(own, stacks::KeyValue{value});
  };
  if (knobs.sendmmsg != 1) {
    set("sendmmsg", knobs.sendmmsg);
    // Whole calls enough that where the count starts within one weighs little.
    packets = std::max(packets, 4 * knobs.sendmmsg);
  }
  if (knobs.nft_rules > 0) set("nft_rules", knobs.nft_rules);
  if (knobs.segments != 1) set("udp_segment", knobs.segments);
  // The rows do not say the pair's MTU (measure kernel --veth-mtu): the
  // counts are those of a pair whose MTU takes the payload.
  if (veth) set("veth_mtu", 65535);
  // The loop every run drives (workload::Driver): sendto(), or send() on a
  // socket connected once, the softirq, and the receiver's recvfrom().
  stacks::CallCounts f;
  std::optional<models::L1dCopies> cache;
  stacks::L1dMissed missed;
  if (l1d.bytes > 0) {
    const int line = models::MachineCosts{}.line_bytes;
    if (const std::string why = models::L1dCopies::problem(l1d.bytes, l1d.ways, line); !why.empty())
      throw InputError(fmt::format("l1d ({} bytes, {} ways): {}", l1d.bytes, l1d.ways, why));
    cache.emplace(l1d.bytes, l1d.ways, line);
    missed = [&cache](const void* src, const void* dst, size_t len) {
      return static_cast<double>(
          cache->copy(reinterpret_cast<uintptr_t>(src), reinterpret_cast<uintptr_t>(dst), len));
    };
  }
  try {
    f = stacks::count_calls(
        stack, net::HostOptions{}, own,
        {.path = {.dest = veth ? workload::Dest::veth : workload::Dest::loopback,
                  .service = workload::Service::simulated},
         .payload = payload,
         .warmup = 16,
         .connected = path == "connected" || path == "veth-connected"},
        packets, missed);
  } catch (const std::out_of_range& e) {
    throw InputError(e.what());
  }
  switch (f.stop) {
    case stacks::CallCounts::Stop::none:
      break;
    case stacks::CallCounts::Stop::start:
      throw InputError("the simulated stack: " + f.why);
    case stacks::CallCounts::Stop::send:
      throw InputError(
          fmt::format("the simulated stack refuses {} B on path {}: {}", payload, path, f.why));
    case stacks::CallCounts::Stop::lost:
      throw InputError(
          fmt::format("the simulated stack lost {} B datagrams on path {}", payload, path));
  }
  return f;
}

double KernelFit::value(const std::string& name) const {
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return values[i];
  return 0;
}

KernelFit fit_kernel(const KernelMeasured& m, const Split& split, Stat stat) {
  KernelFit fit;
  fit.stack = m.stack;
  const net::FnTable& fns = fns_of(fit.stack);
  fit.stat = stat;
  fit.split = split;
  fit.clock_hz = m.clock_hz;
  fit.l1d = m.l1d;
  fit.cpu_model = m.cpu_model;
  fit.kernel = m.kernel;
  fit.time_base = m.time_base;
  fit.perf_over_plain = m.perf_over_plain;
  const double cyc = m.clock_hz / 1e9;  // cycles per ns
  std::vector<const KernelPoint*> train;
  std::vector<stacks::CallCounts> feats;
  for (const auto& p : m.points)
    if (split.trains(as_point(p))) {
      train.push_back(&p);
      feats.push_back(stack_counts(m.stack, p.path, p.payload, 256, p.knobs(), m.l1d));
    }
  if (train.empty()) throw InputError("no point trains the fit: --train selects none of them");

  // Functions the simulated stack calls but the kernel never shows: inlined
  // into their caller here.
  std::set<std::string> sampled;
  for (const auto& p : m.points)
    for (const auto& r : p.repeats)
      for (const auto& [fn, ns] : r.fn_ns) sampled.insert(fn);
  const size_t n_fns = fns.size();
  std::vector<bool> called(n_fns, false);
  std::vector<int> parent(n_fns, -1);
  for (const auto& f : feats)
    for (size_t i = 0; i < n_fns; ++i)
      if (f.calls[i] > 0) {
        called[i] = true;
        if (parent[i] < 0) parent[i] = f.parent[i];
      }
  for (size_t i = 0; i < n_fns; ++i)
    if (called[i] && !sampled.count(fn_name(fns, i)) && parent[i] >= 0)
      fit.inlined_into[fn_name(fns, i)] = fn_name(fns, static_cast<size_t>(parent[i]));

  // An inlined function called as often as its caller cannot be told apart
  // from it and is priced 0; one whose calls differ (a rule evaluated per
  // rule in a chain walked once) keeps a price of its own, fitted from its
  // caller's time.
  std::vector<bool> apart(n_fns, false);
  for (size_t i = 0; i < n_fns; ++i)
    if (fit.inlined_into.count(fn_name(fns, i)))
      for (const auto& f : feats)
        if (std::abs(f.calls[i] - f.calls[group_of(fit, fns, i)]) > 1e-9) apart[i] = true;

  // The parameters: each called function's fixed cycles, then the per-byte terms.
  std::vector<int> col_of(n_fns, -1);
  for (size_t i = 0; i < n_fns; ++i) {
    if (!called[i]) {
      fit.undetermined.push_back("fixed:" + fn_name(fns, i));
      continue;
    }
    if (fit.inlined_into.count(fn_name(fns, i)) && !apart[i]) continue;
    col_of[i] = static_cast<int>(fit.names.size());
    fit.names.push_back("fixed:" + fn_name(fns, i));
  }
  const int cpb = static_cast<int>(fit.names.size());
  fit.names.push_back("copy.cycles_per_byte");
  // A per-byte price of its own where some training point has such bytes;
  // undetermined otherwise. The copy out to the user is apart from the copy
  // in: they need not run at one speed.
  auto per_byte_column = [&](std::array<double, net::kMaxFns> stacks::CallCounts::*bytes,
                             const char* name) {
    bool any = false;
    for (const auto& f : feats)
      for (double v : f.*bytes) any = any || v > 0;
    if (!any) {
      fit.undetermined.push_back(name);
      return -1;
    }
    fit.names.push_back(name);
    return static_cast<int>(fit.names.size()) - 1;
  };
  const int ucpb =
      per_byte_column(&stacks::CallCounts::unaligned_bytes, "copy.unaligned_cycles_per_byte");
  const int tucpb =
      per_byte_column(&stacks::CallCounts::to_user_bytes, "copy.to_user_extra_cycles_per_byte");
  // Where the rows say their L1 data cache: the bytes a copy moved through
  // lines it no longer held.
  const int mcpb = m.l1d.bytes > 0 ? per_byte_column(&stacks::CallCounts::l1d_miss_bytes,
                                                     "copy.l1d_miss_extra_cycles_per_byte")
                                   : -1;

  // One observation per training point and group: its self cycles.
  std::vector<size_t> heads;
  for (size_t i = 0; i < n_fns; ++i)
    if (group_of(fit, fns, i) == i) heads.push_back(i);
  const auto rows = static_cast<Eigen::Index>(train.size() * heads.size());
  Eigen::MatrixXd A = Eigen::MatrixXd::Zero(rows, static_cast<Eigen::Index>(fit.names.size()));
  Eigen::VectorXd b = Eigen::VectorXd::Zero(rows);
  Eigen::Index row = 0;
  for (size_t t = 0; t < train.size(); ++t) {
    std::vector<Eigen::Index> row_of(n_fns, -1);
    for (size_t h : heads) row_of[h] = row++;
    for (size_t i = 0; i < n_fns; ++i) {
      const Eigen::Index r = row_of[group_of(fit, fns, i)];
      const auto& f = feats[t];
      if (col_of[i] >= 0) A(r, col_of[i]) += f.calls[i];
      A(r, cpb) += f.copy_bytes[i];
      if (ucpb >= 0) A(r, ucpb) += f.unaligned_bytes[i];
      if (tucpb >= 0) A(r, tucpb) += f.to_user_bytes[i];
      if (mcpb >= 0) A(r, mcpb) += f.l1d_miss_bytes[i];
      if (const auto it = train[t]->value.fn_ns.find(fn_name(fns, i));
          it != train[t]->value.fn_ns.end())
        b(r) += it->second * cyc;
    }
  }
  const Eigen::VectorXd x = nnls(A, b);
  fit.values.assign(x.data(), x.data() + x.size());
  if (A.col(cpb).isZero()) fit.undetermined.push_back("copy.cycles_per_byte");

  std::vector<double> sys, user;
  for (size_t t = 0; t < train.size(); ++t) {
    sys.push_back(train[t]->value.syscall_ns * cyc / feats[t].syscalls);
    user.push_back(train[t]->value.user_ns * cyc);
  }
  fit.syscall_cycles = apply_stat(stat, sys);
  fit.user_cycles = apply_stat(stat, user);
  return fit;
}

KernelPrediction predict_kernel(const KernelFit& fit, const KernelPoint& p) {
  const net::FnTable& fns = fns_of(fit.stack);
  const stacks::CallCounts f = stack_counts(fit.stack, p.path, p.payload, 256, p.knobs(), fit.l1d);
  const double ns_per_cycle = 1e9 / fit.clock_hz;
  KernelPrediction out;
  const double cpb = fit.value("copy.cycles_per_byte");
  const double ucpb = fit.value("copy.unaligned_cycles_per_byte");
  const double tucpb = fit.value("copy.to_user_extra_cycles_per_byte");
  const double mcpb = fit.value("copy.l1d_miss_extra_cycles_per_byte");
  for (size_t i = 0; i < fns.size(); ++i) {
    const double c = f.calls[i] * fit.value("fixed:" + fn_name(fns, i)) + f.copy_bytes[i] * cpb +
                     f.unaligned_bytes[i] * ucpb + f.to_user_bytes[i] * tucpb +
                     f.l1d_miss_bytes[i] * mcpb;
    if (f.calls[i] > 0) out.ns[fn_name(fns, group_of(fit, fns, i))] += c * ns_per_cycle;
  }
  out.ns["syscall_entry"] = f.syscalls * fit.syscall_cycles * ns_per_cycle;
  out.ns["user"] = fit.user_cycles * ns_per_cycle;
  for (const auto& [k, v] : out.ns) out.cpu_ns += v;
  return out;
}

void write_kernel_profile(const KernelFit& fit, const fs::path& dir, const std::string& name,
                          const std::vector<std::pair<std::string, std::string>>& extra) {
  const net::FnTable& fns = fns_of(fit.stack);
  const std::string head = fmt::format(
      "# Fitted by simloop calibrate --source {} to measure kernel --split on\n"
      "# {} ({}), clock {:.6g} MHz; files: {}.\n"
      "# Training points: {} (statistic: {} over repeats). Cycles at that clock.\n"
      "# {}\n",
      fit.stack, fit.cpu_model, fit.kernel, fit.clock_hz / 1e6, fmt::join(fit.measured, ", "),
      fmt::join(fit.split.specs(), "; "), fit.stat == Stat::min ? "min" : "median",
      fit.time_base == "plain" && fit.perf_over_plain > 0
          ? fmt::format("Time: perf's shares of the loop's thread CPU time run without perf "
                        "(perf's own time was {:+.1f} % over it).",
                        100 * (fit.perf_over_plain - 1))
          : std::string("Time: perf's samples (perf's own overhead included; no plain run)."));
  std::string stack = head + fmt::format(
                                 "# Each function's fixed cycles are its perf self time (its "
                                 "helpers' included) over the\n"
                                 "# simulated stack's calls per packet on the same path.\n"
                                 "name: {}-stack\ndescription: Linux UDP path on {} ({}), per "
                                 "function, fitted\nkind: {}\nfunctions:\n",
                                 name, fit.cpu_model, fit.kernel, fit.stack);
  auto undetermined = [&fit](const std::string& key) {
    return std::find(fit.undetermined.begin(), fit.undetermined.end(), key) !=
           fit.undetermined.end();
  };
  // An undetermined cost is written `~`: a run that uses it says so.
  auto cost = [&](const std::string& key, int decimals) {
    return undetermined(key) ? std::string("~") : fmt::format("{:.{}f}", fit.value(key), decimals);
  };
  for (size_t i = 0; i < fns.size(); ++i) {
    const std::string n = fn_name(fns, i);
    std::string note;
    if (const auto it = fit.inlined_into.find(n);
        it != fit.inlined_into.end() && fit.value("fixed:" + n) > 0)
      note = "  # inlined into " + it->second + " on this kernel: priced per call from its time";
    else if (it != fit.inlined_into.end())
      note = "  # inlined into " + it->second + " on this kernel: its time is there";
    else if (undetermined("fixed:" + n))
      note = "  # not determined: the training paths never call it";
    stack += fmt::format("  {}: {}{}\n", n, cost("fixed:" + n, 1), note);
  }
  stack +=
      "cksum_cycles_per_byte: ~  # not determined: lo offloads the UDP checksum, and the IP\n"
      "                          # header's is folded into the functions' fixed cycles\n";
  // The L1 data cache the rows were measured with, where they say it.
  std::string l1d_lines;
  if (fit.l1d.bytes > 0)
    l1d_lines = fmt::format(
        "  l1d_bytes: {}  # this host's L1 data cache (sysfs): a copy's bytes in lines\n"
        "  l1d_ways: {}  # it no longer held pay the extra below\n"
        "  l1d_miss_extra_cycles_per_byte: {}{}\n",
        fit.l1d.bytes, fit.l1d.ways, cost("copy.l1d_miss_extra_cycles_per_byte", 4),
        undetermined("copy.l1d_miss_extra_cycles_per_byte")
            ? "  # not determined: no training copy outgrew the cache"
            : "");
  std::string machine =
      head +
      fmt::format(
          "name: {0}-machine\ndescription: {1} ({2}), measured with perf\ncosts: measured\n"
          "clock_hz: {3:.0f}\n"
          "syscall:  # perf's entry and exit symbols over two system calls a packet, halved\n"
          "  entry_cycles: {4:.1f}\n  exit_cycles: {4:.1f}\n"
          "user_loop_cycles: {5:.1f}  # user space per packet: the loop and the C library\n"
          "copy:\n  setup_cycles: 0  # folded into the copying functions' fixed cycles\n"
          "  cycles_per_byte: {6}{7}\n  unaligned_cycles_per_byte: {8}{9}\n"
          "  to_user_extra_cycles_per_byte: {13}{14}\n{15}"
          "unaligned_access_cycles: ~  # not measured: Linux keeps its headers aligned\n"
          "host:  # what the costs were measured on: a run on another host warns\n"
          "  cpu: {10}\n  clock_mhz: {11:.2f}\n  kernel: {12}\n",
          name, fit.cpu_model, fit.kernel, fit.clock_hz, fit.syscall_cycles / 2, fit.user_cycles,
          cost("copy.cycles_per_byte", 4),
          undetermined("copy.cycles_per_byte") ? "  # not determined: no training copy" : "",
          cost("copy.unaligned_cycles_per_byte", 4),
          undetermined("copy.unaligned_cycles_per_byte")
              ? "  # not determined: every copy here is aligned"
              : "",
          support::yaml_quoted(fit.cpu_model), fit.clock_hz / 1e6, support::yaml_quoted(fit.kernel),
          cost("copy.to_user_extra_cycles_per_byte", 4),
          undetermined("copy.to_user_extra_cycles_per_byte")
              ? "  # not determined: no training copy to a user's buffer"
              : "  # a receive's copy out, over the copy in's rate",
          l1d_lines);
  const std::string exp = fmt::format(
      "# The calibrated Linux profile on its measured path: UDP to 127.0.0.1, each\n"
      "# datagram read by a receiver on the same CPU, no interrupts.\n"
      "name: {0}\ndescription: UDP to loopback on the Linux stack fitted to {1} ({2})\n"
      "machine: {0}-machine.yaml\nstack: {0}-stack.yaml\n"
      "workload:\n  payload: 18\n  packets: 20000\n  dest: loopback\n  receive: true\n"
      "  link: {{bandwidth_bps: 1e13, latency_s: 0}}\ninterrupts: {{enabled: false}}\nseed: 1\n",
      name, fit.cpu_model, fit.kernel);
  std::vector<std::pair<std::string, std::string>> files = {
      {name + "-machine.yaml", machine}, {name + "-stack.yaml", stack}, {name + ".yaml", exp}};
  files.insert(files.end(), extra.begin(), extra.end());
  report::write_files_atomic(dir, files);
}

nlohmann::json kernel_fit_json(const KernelFit& fit, const KernelMeasured& m) {
  nlohmann::json j;
  j["source"] = fit.stack;
  j["cpu_model"] = fit.cpu_model;
  j["kernel"] = fit.kernel;
  j["clock_hz"] = fit.clock_hz;
  j["loadavg_1m"] = m.loadavg;
  j["time_base"] = m.time_base;
  if (m.perf_over_plain > 0) j["perf_over_plain"] = m.perf_over_plain;
  j["train"] = fit.split.specs();
  j["stat"] = fit.stat == Stat::min ? "min" : "median";
  j["measured"] = fit.measured;
  for (size_t i = 0; i < fit.names.size(); ++i) j["values"][fit.names[i]] = fit.values[i];
  j["syscall_cycles"] = fit.syscall_cycles;
  j["user_cycles"] = fit.user_cycles;
  j["undetermined"] = fit.undetermined;
  j["inlined_into"] = fit.inlined_into;
  for (const auto& p : m.points) {
    const KernelPrediction pr = predict_kernel(fit, p);
    nlohmann::json q;
    q["path"] = p.path;
    q["payload"] = p.payload;
    q["sendmmsg"] = p.sendmmsg;
    if (p.nft_rules > 0) q["nft_rules"] = p.nft_rules;
    q["segments"] = p.segments;
    q["set"] = fit.split.trains(as_point(p)) ? "train" : "validation";
    q["repeats"] = p.repeats.size();
    q["measured_wall_ns"] = p.value.wall_ns;
    q["measured_cpu_ns"] = p.value.cpu_ns;
    q["measured_perf_cpu_ns"] = p.value.perf_cpu_ns;
    if (p.value.plain_cpu_ns > 0) q["measured_plain_user_ns"] = p.value.plain_user_ns;
    q["measured_other_ns"] = p.value.other_ns;
    q["predicted_ns"] = pr.cpu_ns;
    std::set<std::string> keys = {"syscall_entry", "user"};
    for (const auto& [k, v] : p.value.fn_ns) keys.insert(k);
    for (const auto& [k, v] : pr.ns) keys.insert(k);
    for (const auto& k : keys) {
      const auto it = pr.ns.find(k);
      const double pv = it == pr.ns.end() ? 0 : it->second;
      q["share"][k] = {{"measured", p.share(k)}, {"predicted", pr.cpu_ns > 0 ? pv / pr.cpu_ns : 0}};
    }
    j["points"].push_back(q);
  }
  return j;
}

}  // namespace simloop::measure
