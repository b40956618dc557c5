#include "sim/stack/bsd/stack.h"

#include <fmt/format.h>

namespace simloop::net::bsd {

std::string AlignmentFault::describe() const {
  const std::string where = header_offset >= 0
                                ? fmt::format("IP header at offset {} of its buffer", header_offset)
                                : std::string("not in a packet");
  return fmt::format(
      "alignment fault in {}: {}-byte access to {} at byte {} of its {} ({} mod 4); {}",
      bsd::fn_name(fn), size, field, offset, buffer, misalign, where);
}

// The stack is used with these probes; instantiating them here keeps every
// user from compiling it again and checks that each probe fits the interface.
template class Stack<NullProbe>;
template class Stack<NoProbe>;
template class Stack<CountingProbe>;

}  // namespace simloop::net::bsd
