// What a workload::Path sets in the Linux stack's options
// (sim/stack/linux/stack.h), beside the BSD stack's overload in path.h: the
// driver and the ttcp loop find it by the Path argument.
#pragma once

#include "sim/stack/linux/stack.h"
#include "sim/stack/workload/path.h"

namespace simloop::workload {

// Refuses what has no Linux counterpart: the copy-down fix-ups (Linux keeps
// IP headers aligned), m_dup (a broadcast's local copy is always a clone)
// and a misplaced udp_in (Linux fills the caller's own sockaddr). Every
// destination runs: self goes through lo, as Linux's local table routes it.
inline net::lnx::Options stack_options_for(const Path& p, net::lnx::Options so) {
  if (p.align != net::AlignPolicy::none && p.align != net::AlignPolicy::strict)
    throw PathError("the linux stack takes alignment policy none or strict, not '" +
                    std::string(net::align_policy_name(p.align)) + "'");
  if (p.copy != net::LoopCopy::m_copy)
    throw PathError("the linux stack loops a broadcast back as a clone: loop copy m_copy only");
  if (p.sockaddr_misalign != 0)
    throw PathError("the linux stack has no static sockaddr: sockaddr_misalign must be 0");
  so.align = p.align;
  return so;
}

}  // namespace simloop::workload
