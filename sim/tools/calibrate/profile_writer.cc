#include "sim/tools/calibrate/profile_writer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <map>

#include "sim/config/experiment.h"
#include "sim/report/safe_file.h"
#include "sim/stack/net/inet.h"
#include "sim/tools/calibrate/calibrate_detail.h"
#include "sim/tools/measure/native.h"

namespace simloop::measure {

namespace fs = std::filesystem;

using detail::copied_bytes_per_payload_byte;
using detail::has_receiver;
using detail::of_model;

namespace {

// Emits the keys under `prefix` of `x` as a nested map, with a comment on
// the keys in `notes`.
void emit_section(YAML::Emitter& out, const config::Experiment& x, const std::string& prefix,
                  const std::map<std::string, std::string>& notes) {
  std::vector<std::string> keys;
  for (const auto& k : config::keys_under(prefix)) {
    const std::string rest = k.substr(prefix.size());
    if (rest == "name" || rest == "description") continue;
    if (!config::key_applies(x, k)) continue;  // the other stack's keys
    keys.push_back(k);
  }
  // Open and close maps as the dotted paths go in and out of sections.
  std::vector<std::string> open;
  for (const auto& k : keys) {
    std::vector<std::string> parts;
    std::string rest = k.substr(prefix.size());
    for (auto dot = rest.find('.'); dot != std::string::npos; dot = rest.find('.')) {
      parts.push_back(rest.substr(0, dot));
      rest = rest.substr(dot + 1);
    }
    size_t common = 0;
    while (common < open.size() && common < parts.size() && open[common] == parts[common]) ++common;
    while (open.size() > common) {
      out << YAML::EndMap;
      open.pop_back();
    }
    for (size_t i = common; i < parts.size(); ++i) {
      out << YAML::Key << parts[i] << YAML::Value << YAML::BeginMap;
      open.push_back(parts[i]);
    }
    out << YAML::Key << rest << YAML::Value;
    const auto v = config::get_value(x, k);
    if (v.is_null())
      out << YAML::Null;  // an undetermined cost: `~`
    else if (v.is_boolean())
      out << v.get<bool>();
    else if (v.is_number_integer())
      out << v.get<int64_t>();
    else if (v.is_number())
      out << v.get<double>();
    else
      out << v.get<std::string>();
    if (auto it = notes.find(k); it != notes.end()) out << YAML::Comment(it->second);
  }
  while (!open.empty()) {
    out << YAML::EndMap;
    open.pop_back();
  }
}

std::string emit_component(const config::Experiment& x, const std::string& prefix,
                           const std::string& name, const std::string& description,
                           const std::string& head,
                           const std::map<std::string, std::string>& notes) {
  YAML::Emitter out;
  out.SetDoublePrecision(6);
  out << YAML::Comment(head) << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << name;
  out << YAML::Key << "description" << YAML::Value << description;
  emit_section(out, x, prefix, notes);
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace

void write_profile(const Fit& fit, const std::vector<Point>& points, const fs::path& dir,
                   const std::string& name,
                   const std::vector<std::pair<std::string, std::string>>& extra) {
  config::Experiment x;
  for (const auto& k : config::cost_keys()) config::set_number(x, k, 0);
  config::set_number(x, "machine.clock_hz", 1e9);
  x.machine_costs = "measured";
  std::map<std::string, std::string> notes;
  std::string what;
  const Point* first = nullptr;
  for (const auto& p : points)
    if (of_model(p, fit.source) && fit.split.trains(p) && p.key("dest") == fit.dest) {
      first = &p;
      break;
    }
  if (first == nullptr) throw InputError("the fit has no training point on path " + fit.dest);
  if (fit.source == "native") {
    what = "native runs of the real stack on this machine";
    for (size_t i = 0; i < fit.names.size(); ++i) {
      config::set_number(x, fit.names[i], fit.values[i]);
      const auto tied = fit.tied_to(fit.names[i]);
      if (!tied) continue;
      // A cost no training point exercises has no value at all: `~`, which
      // a run that uses it reports. One the data fix only in a sum with
      // others keeps the fit's share of that sum.
      if (tied->empty()) {
        config::set_undetermined(x, fit.names[i]);
        notes[fit.names[i]] = "not determined: no training point exercises it";
      } else {
        notes[fit.names[i]] = fmt::format("not determined by the training data alone: only with {}",
                                          fmt::join(*tied, ", "));
      }
    }
  } else {
    what = fmt::format("measured runs of {}", first->source);
    std::vector<double> nulls;
    for (const auto& p : points)
      if (of_model(p, fit.source) && fit.split.trains(p) && p.null_syscall_ns)
        nulls.push_back(*p.null_syscall_ns);
    const bool rx = has_receiver(*first);
    if (!nulls.empty()) {
      const double null_ns = apply_stat(fit.stat, nulls);
      config::set_number(x, "machine.syscall.entry_cycles", null_ns / 2);
      config::set_number(x, "machine.syscall.exit_cycles", null_ns / 2);
      notes["machine.syscall.entry_cycles"] =
          fmt::format("half a null system call ({:.6g} ns, measured)", null_ns);
    } else {
      notes["machine.syscall.entry_cycles"] =
          "not measured: the system call's cost is inside stack.functions.sendto";
    }
    const double per_byte =
        fit.value("send_per_byte_ns") + (rx ? fit.value("recv_per_byte_ns") : 0);
    config::set_number(x, "machine.copy.cycles_per_byte",
                       per_byte / copied_bytes_per_payload_byte(fit.dest));
    notes["machine.copy.cycles_per_byte"] = fmt::format(
        "the fitted {:.6g} ns per payload byte over the bytes the stack copies per payload byte",
        per_byte);
    x.stack_fitted_fixed_costs = true;
    notes["stack.fitted_fixed_costs"] =
        "sendto and soreceive hold the fitted fixed costs of sending and receiving";
    config::set_number(x, "stack.functions.sendto", fit.value("send_fixed_ns"));
    notes["stack.functions.sendto"] = "the fitted fixed cost of sending, all on sendto";
    if (rx) {
      config::set_number(x, "stack.functions.soreceive", fit.value("recv_fixed_ns"));
      notes["stack.functions.soreceive"] = "the fitted fixed cost of receiving";
    }
  }
  const std::string head = fmt::format(
      "Fitted by simloop calibrate to {} (training points: {}).\nclock_hz is 1e9, so "
      "every cost below is in ns.",
      what, fmt::join(fit.split.specs(), "; "));
  const std::string machine =
      emit_component(x, "machine.", name + "-machine",
                     fit.source == "native" ? "this machine running the native harness (fitted)"
                                            : fmt::format("{} (fitted)", first->source),
                     head, notes);
  const std::string stack = emit_component(
      x, "stack.", name + "-stack",
      fit.source == "native" ? "the real stack's costs on this machine (fitted)"
                             : fmt::format("the costs of {} (fitted)", first->source),
      head, notes);

  const bool rx = first->key("dest") != "wire";
  YAML::Emitter e;
  e << YAML::Comment(fmt::format(
           "The calibrated profile on the measured path: UDP to {}{}, no interrupts, no wire to "
           "wait for.",
           fit.dest, rx ? ", each datagram read by a receiver on the same CPU" : ""))
    << YAML::BeginMap;
  e << YAML::Key << "name" << YAML::Value << name;
  e << YAML::Key << "description" << YAML::Value
    << fmt::format("UDP to {} simulated with the costs fitted to {}", fit.dest, what);
  e << YAML::Key << "machine" << YAML::Value << name + "-machine.yaml";
  e << YAML::Key << "stack" << YAML::Value << name + "-stack.yaml";
  e << YAML::Key << "workload" << YAML::Value << YAML::BeginMap;
  const workload::Path path = detail::path_of(*first);
  // The profile's experiment sends what its path carries on the stack measure
  // native runs (its default options).
  e << YAML::Key << "payload" << YAML::Value
    << std::min(first->payload(), path.max_payload(NativeOptions{}.stack));
  e << YAML::Key << "packets" << YAML::Value << 20000;
  e << YAML::Key << "dest" << YAML::Value << fit.dest;
  e << YAML::Key << "receive" << YAML::Value << rx;
  e << YAML::Key << "link" << YAML::Value << YAML::BeginMap << YAML::Key << "bandwidth_bps"
    << YAML::Value << 1e13 << YAML::Key << "latency_s" << YAML::Value << 0 << YAML::EndMap;
  e << YAML::EndMap;
  e << YAML::Key << "interrupts" << YAML::Value << YAML::BeginMap << YAML::Key << "enabled"
    << YAML::Value << false << YAML::EndMap;
  e << YAML::Key << "options" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "align" << YAML::Value << path.get("align");
  e << YAML::Key << "copy" << YAML::Value << path.get("copy");
  e << YAML::Key << "sockaddr_misalign" << YAML::Value << path.sockaddr_misalign;
  e << YAML::EndMap;
  e << YAML::Key << "seed" << YAML::Value << 1;
  e << YAML::EndMap;

  std::vector<std::pair<std::string, std::string>> files = {
      {name + "-machine.yaml", machine},
      {name + "-stack.yaml", stack},
      {name + ".yaml", std::string(e.c_str()) + "\n"}};
  files.insert(files.end(), extra.begin(), extra.end());
  report::write_files_atomic(dir, files);
}

}  // namespace simloop::measure
