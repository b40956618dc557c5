#include "models/cycle_account.h"

#include <fmt/format.h>

#include <array>
#include <stdexcept>

namespace simloop::models {

std::string_view stage_name(Stage s) {
  static constexpr std::array<std::string_view, kStageCount> names = {
      "user",  "syscall",   "socket", "udp",     "ip",   "ether", "driver",
      "loop",  "netisr",    "input",  "receive", "copy", "mbuf",  "unaligned",
      "cache", "interrupt", "sleep",  "idle",    "tlb",  "branch"};
  return names.at(static_cast<size_t>(s));
}

CodeMap code_map(const LinkedLayout& linked, const net::FnTable& fns) {
  CodeMap map(kCodeCount);
  for (size_t i : owner_slots(fns)) {
    auto it = linked.by_owner.find(std::string(owner_name(fns, i)));
    if (it == linked.by_owner.end()) continue;
    for (const auto& r : it->second) map[i].emplace_back(r.start, r.bytes);
  }
  return map;
}

std::optional<Stage> parse_stage(std::string_view name) {
  for (size_t i = 0; i < kStageCount; ++i)
    if (stage_name(static_cast<Stage>(i)) == name) return static_cast<Stage>(i);
  return std::nullopt;
}

Stage stage_of(const net::FnTable& fns, net::FnId fn) {
  const auto s = parse_stage(fns[fn].stage);
  if (!s)
    throw std::logic_error(fmt::format("stack {}: function {} has no stage '{}'", fns.stack(),
                                       fns.name(fn), fns[fn].stage));
  return *s;
}

FnStages stages_of(const net::FnTable& fns) {
  FnStages out{};
  for (size_t i = 0; i < fns.size() && i < net::kMaxFns; ++i) out[i] = stage_of(fns, net::fn_at(i));
  return out;
}

}  // namespace simloop::models
