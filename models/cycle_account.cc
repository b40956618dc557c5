#include "models/cycle_account.h"

#include <array>

namespace simloop::models {

std::string_view stage_name(Stage s) {
  static constexpr std::array<std::string_view, kStageCount> names = {
      "user",  "syscall", "socket", "udp",  "ip",        "ether", "driver",    "loop",  "netisr",
      "input", "receive", "copy",   "mbuf", "unaligned", "cache", "interrupt", "sleep", "idle"};
  return names.at(static_cast<size_t>(s));
}

CodeMap code_map(const LinkedLayout& linked) {
  CodeMap map(kCodeCount);
  const auto& owners = layout_owners();
  for (size_t i = 0; i < kCodeCount && i < owners.size(); ++i) {
    auto it = linked.by_owner.find(owners[i]);
    if (it == linked.by_owner.end()) continue;
    for (const auto& r : it->second) map[i].emplace_back(r.start, r.bytes);
  }
  return map;
}

Stage stage_of(net::Fn fn) {
  using net::Fn;
  switch (fn) {
    case Fn::sendto:
    case Fn::sosend_dgram:
    case Fn::m_uiotombuf:
      return Stage::socket;
    case Fn::udp_output:
      return Stage::udp;
    case Fn::ip_output:
      return Stage::ip;
    case Fn::ether_output:
      return Stage::ether;
    case Fn::ether_output_frame:
      return Stage::driver;
    case Fn::looutput:
    case Fn::if_simloop:
      return Stage::loop;
    case Fn::netisr_dispatch:
      return Stage::netisr;
    case Fn::ip_input:
    case Fn::udp_input:
    case Fn::sbappend:
      return Stage::input;
    case Fn::soreceive:
      return Stage::receive;
    case Fn::nic_txeof:  // in an interrupt handler; CycleAccount knows the context
      return Stage::interrupt;
    case Fn::count:
      break;
  }
  return Stage::socket;
}

}  // namespace simloop::models
