// The code that runs for a packet, as the timing models and code layouts
// name it: the stack's functions (its net::FnTable), then the code around
// them. One list: the enum, the count and the names of the code around the
// stack's functions all come from SIMLOOP_CODE_LIST. It lives with the
// layouts, below the models, because a layout's owners are these names.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "sim/stack/net/fn_table.h"

namespace simloop::models {

// The code around the stack's functions, in trace order after them:
// system call entry and exit, the sender's own loop, and the helpers that
// run at their own probe events wherever in the stack those come (header
// access, checksum, buffer allocation and free, bulk copy).
#define SIMLOOP_CODE_LIST(X) \
  X(syscall_entry)           \
  X(syscall_exit)            \
  X(user_loop)               \
  X(header_access)           \
  X(cksum)                   \
  X(mbuf_alloc)              \
  X(mbuf_free)               \
  X(copy)

namespace code_index {
#define SIMLOOP_CODE_INDEX(name) name,
enum : size_t { SIMLOOP_CODE_LIST(SIMLOOP_CODE_INDEX) count };
#undef SIMLOOP_CODE_INDEX
}  // namespace code_index

// The owners of one stack's code, by slot: the stack's functions at their
// FnIds (net/fn_table.h), then, from kCodeBase, the code around them. The
// slots are fixed whatever the stack, so per-owner tables are plain arrays
// and Code is a constant; slots past the stack's table are unused.
inline constexpr size_t kCodeBase = net::kMaxFns;

// A piece of code; its value is its owner slot.
enum class Code : uint8_t {
#define SIMLOOP_CODE_ENUM(name) name = kCodeBase + code_index::name,
  SIMLOOP_CODE_LIST(SIMLOOP_CODE_ENUM)
#undef SIMLOOP_CODE_ENUM
};

// Owner slots: the stack's functions and the code around them.
inline constexpr size_t kCodeCount = kCodeBase + code_index::count;

// The names of the code around the stack's functions, in Code order.
inline constexpr std::array<std::string_view, code_index::count> kCodeNames = {
#define SIMLOOP_CODE_NAME(name) #name,
    SIMLOOP_CODE_LIST(SIMLOOP_CODE_NAME)
#undef SIMLOOP_CODE_NAME
};

// The part of a packet's path each of them does (net::PathRole), in Code
// order: what `simloop explain` lines them up by across stacks.
inline constexpr std::array<net::PathRole, code_index::count> kCodeRoles = {
    net::PathRole::syscall,  // syscall_entry
    net::PathRole::syscall,  // syscall_exit
    net::PathRole::user,     // user_loop
    net::PathRole::helpers,  // header_access
    net::PathRole::helpers,  // cksum
    net::PathRole::buffers,  // mbuf_alloc
    net::PathRole::buffers,  // mbuf_free
    net::PathRole::helpers,  // copy
};
static_assert([] {
  for (net::PathRole r : kCodeRoles)
    if (r == net::PathRole::unset) return false;
  return true;
}());

constexpr size_t slot(net::FnId f) {
  return net::index(f);
}
constexpr size_t slot(Code c) {
  return static_cast<size_t>(c);
}

// Whether `slot` holds an owner of a stack with table `fns`.
constexpr bool owner_in_use(const net::FnTable& fns, size_t slot) {
  return slot < kCodeBase ? slot < fns.size() : slot < kCodeCount;
}

// The name of owner `slot` of a stack with table `fns` (empty if unused).
constexpr std::string_view owner_name(const net::FnTable& fns, size_t slot) {
  if (slot < kCodeBase) return slot < fns.size() ? fns.name(net::fn_at(slot)) : std::string_view{};
  return kCodeNames[slot - kCodeBase];
}

// The part of the path owner `slot` of a stack with table `fns` does
// (unset if unused).
constexpr net::PathRole owner_path_role(const net::FnTable& fns, size_t slot) {
  if (slot < kCodeBase)
    return slot < fns.size() ? fns.path_role(net::fn_at(slot)) : net::PathRole::unset;
  return slot < kCodeCount ? kCodeRoles[slot - kCodeBase] : net::PathRole::unset;
}

constexpr std::string_view code_name(Code c) {
  return kCodeNames[slot(c) - kCodeBase];
}

// The slot of the owner called `name` in a stack with table `fns`, if any.
constexpr std::optional<size_t> owner_slot(const net::FnTable& fns, std::string_view name) {
  if (const auto f = fns.find(name)) return slot(*f);
  for (size_t i = 0; i < kCodeNames.size(); ++i)
    if (kCodeNames[i] == name) return kCodeBase + i;
  return std::nullopt;
}

// The slots in use with `fns`, in owner order.
inline std::vector<size_t> owner_slots(const net::FnTable& fns) {
  std::vector<size_t> v;
  for (size_t i = 0; i < kCodeCount; ++i)
    if (owner_in_use(fns, i)) v.push_back(i);
  return v;
}

}  // namespace simloop::models
