// The command line's options for a path through the stack (workload::Path):
// --dest, --align, --copy, --sockaddr-misalign, --service and
// --buffer-misalign, each checked against the path's own names (an unknown
// one is refused with every valid one and the nearest). Every command that
// drives the stack natively takes them, the harness program too, which is
// why they are here and not with the commands.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <string_view>

#include "sim/stack/workload/path.h"

namespace simloop::measure {

// Adds the options to `app`; each sets its field of `path` (which must
// outlive the parse), whose values are the defaults shown.
inline void add_path_options(CLI::App* app, workload::Path& path) {
  struct Option {
    std::string_view field;
    const char* help;
  };
  static constexpr Option kOptions[] = {
      {"dest",
       "loopback (127.0.0.1), broadcast (simplex loop copy + NIC ring),\n"
       "wire (peer on the NIC ring), self (own address through em0)"},
      {"align", "Alignment policy: none, copy-down, strict, copy-down-unsafe"},
      {"copy", "Simplex loop copy: m_copy (shared) or m_dup (deep)"},
      {"sockaddr_misalign",
       "Bytes past a 4-byte boundary of the sockaddr udp_input fills per datagram\n"
       "(misaligned header accesses on every received packet), 0-3"},
      {"service",
       "What serves the host after each sendto: full (the netisr, the receiver and\n"
       "transmit completion) or send-only (transmit completion only: looped datagrams\n"
       "are dropped at the full netisr queue; the send side alone)"},
      {"buffer_misalign",
       "Bytes past an 8-byte boundary of the sender's buffer, 0-7 (the payload is\n"
       "copied in from a misaligned address)"},
  };
  for (const Option& o : kOptions) {
    const std::string_view field = o.field;
    app->add_option_function<std::string>(
           workload::Path::option(field),
           [&path, field](const std::string& v) { path.set(field, v); }, o.help)
        ->check(
            CLI::Validator([field](std::string& v) { return workload::Path::problem(field, v); },
                           "{" + CLI::detail::join(workload::Path::names(field), ",") + "}"))
        ->default_str(path.get(field));
  }
}

}  // namespace simloop::measure
