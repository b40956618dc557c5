// The BSD stack's function table: the functions of the mbuf stack (sim/stack/bsd) that
// report entry and exit, with their stages and roles.
#pragma once

#include <array>
#include <cstdint>

#include "sim/stack/net/fn_table.h"

namespace simloop::net::bsd {

// The functions, by FnId (the enum's value is the function's index in
// fn_table()).
enum class Fn : uint8_t {
  sendto,        // the system call's in-kernel body
  sosend_dgram,  // socket layer
  m_uiotombuf,   // user data into an mbuf chain
  udp_output,
  ip_output,
  ether_output,
  ether_output_frame,  // hand-off to the NIC ring
  looutput,
  if_simloop,
  netisr_dispatch,  // the netisr's run over its input queue (netisr_run), empty or not
  ip_input,
  udp_input,
  sbappend,  // sbappendaddr: the socket receive buffer
  soreceive,
  nic_txeof,  // transmit completion: frames freed
  count
};

constexpr FnId id(Fn f) {
  return static_cast<FnId>(f);
}

inline constexpr std::array<FnInfo, static_cast<size_t>(Fn::count)> kFns = {{
    {"sendto", "socket", FnRole::syscall},
    {"sosend_dgram", "socket"},
    {"m_uiotombuf", "socket"},
    {"udp_output", "udp"},
    {"ip_output", "ip"},
    {"ether_output", "ether"},
    {"ether_output_frame", "driver"},
    {"looutput", "loop"},
    {"if_simloop", "loop"},
    {"netisr_dispatch", "netisr"},
    {"ip_input", "input"},
    {"udp_input", "input"},
    {"sbappend", "input"},
    {"soreceive", "receive"},
    {"nic_txeof", "interrupt", FnRole::completion},
}};
static_assert(kFns.size() <= kMaxFns);

inline constexpr FnTable kFnTable{"bsd", kFns};

constexpr const FnTable& fn_table() {
  return kFnTable;
}
constexpr std::string_view fn_name(Fn f) {
  return kFns[static_cast<size_t>(f)].name;
}

}  // namespace simloop::net::bsd
