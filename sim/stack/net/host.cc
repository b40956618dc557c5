#include "sim/stack/net/host.h"

namespace simloop::net {

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

}  // namespace simloop::net
