#include "sim/stack/linux/stack.h"

#include <fmt/format.h>

namespace simloop::net::lnx {

std::string AlignmentFault::describe() const {
  return fmt::format(
      "alignment fault in {}: {}-byte access to {} at byte {} of its sk_buff head "
      "({} mod 4)",
      fn_name(fn), size, field, offset, misalign);
}

// The stack is used with these probes; instantiating them here keeps every
// user from compiling it again and checks that each probe fits the interface.
template class Stack<NullProbe>;
template class Stack<NoProbe>;
template class Stack<CountingProbe>;

}  // namespace simloop::net::lnx
