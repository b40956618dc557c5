#include "sim/stack/bsd/stack.h"

#include <fmt/format.h>

namespace simloop::net {

std::string AlignmentFault::describe() const {
  const std::string where = header_offset >= 0
                                ? fmt::format("IP header at offset {} of its buffer", header_offset)
                                : std::string("not in a packet");
  return fmt::format(
      "alignment fault in {}: {}-byte access to {} at byte {} of its {} ({} mod 4); {}",
      bsd::fn_name(fn), size, field, offset, buffer, misalign, where);
}

std::string_view align_policy_name(AlignPolicy p) {
  switch (p) {
    case AlignPolicy::none:
      return "none";
    case AlignPolicy::copy_down:
      return "copy-down";
    case AlignPolicy::strict:
      return "strict";
    case AlignPolicy::copy_down_unsafe:
      return "copy-down-unsafe";
  }
  return "?";
}

std::string_view loop_copy_name(LoopCopy c) {
  return c == LoopCopy::m_copy ? "m_copy" : "m_dup";
}

std::optional<AlignPolicy> parse_align_policy(std::string_view s) {
  for (auto p : kAlignPolicies)
    if (s == align_policy_name(p)) return p;
  return std::nullopt;
}

std::optional<LoopCopy> parse_loop_copy(std::string_view s) {
  for (auto c : kLoopCopies)
    if (s == loop_copy_name(c)) return c;
  return std::nullopt;
}

std::vector<std::string> align_policy_names() {
  std::vector<std::string> v;
  for (auto p : kAlignPolicies) v.emplace_back(align_policy_name(p));
  return v;
}

std::vector<std::string> loop_copy_names() {
  std::vector<std::string> v;
  for (auto c : kLoopCopies) v.emplace_back(loop_copy_name(c));
  return v;
}

// The stack is used with these probes; instantiating them here keeps every
// user from compiling it again and checks that each probe fits the interface.
template class Stack<NullProbe>;
template class Stack<NoProbe>;
template class Stack<CountingProbe>;

}  // namespace simloop::net
