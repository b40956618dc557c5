// The BSD stack's function table: the functions of the mbuf stack (sim/stack/bsd) that
// report entry and exit, with their stages, their parts of the path and
// their roles.
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
    {"sendto", "socket", PathRole::syscall, FnRole::syscall},
    {"sosend_dgram", "socket", PathRole::socket},
    {"m_uiotombuf", "socket", PathRole::socket},
    {"udp_output", "udp", PathRole::udp_output},
    {"ip_output", "ip", PathRole::ip_output},  // its route lookup is its own
    {"ether_output", "ether", PathRole::link},
    {"ether_output_frame", "driver", PathRole::device},
    {"looutput", "loop", PathRole::device},
    {"if_simloop", "loop", PathRole::device},  // onto the netisr's input queue
    {"netisr_dispatch", "netisr", PathRole::softirq},
    {"ip_input", "input", PathRole::ip_input},
    {"udp_input", "input", PathRole::udp_input},
    {"sbappend", "input", PathRole::udp_input},  // called by udp_input
    {"soreceive", "receive", PathRole::receive},
    {"nic_txeof", "interrupt", PathRole::device, FnRole::completion},
}};
static_assert(kFns.size() <= kMaxFns);
static_assert(has_path_roles(kFns));

inline constexpr FnTable kFnTable{"bsd", kFns};

constexpr const FnTable& fn_table() {
  return kFnTable;
}
constexpr std::string_view fn_name(Fn f) {
  return kFns[static_cast<size_t>(f)].name;
}

}  // namespace simloop::net::bsd
