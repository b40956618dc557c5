// The code that runs for a packet, as the timing models and code layouts
// name it: the stack's functions (net::Fn), then the code around them. One
// list: the enum, the count and the names (the owners a code layout maps
// symbols to, layout_owners()) all come from SIMLOOP_CODE_LIST.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "net/probe.h"

namespace simloop::models {

// The code around the stack's functions, in trace order after net::Fn:
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

// A piece of code; its value is its index among all owners (net::Fn first).
enum class Code : uint8_t {
#define SIMLOOP_CODE_ENUM(name) name = net::kFnCount + code_index::name,
  SIMLOOP_CODE_LIST(SIMLOOP_CODE_ENUM)
#undef SIMLOOP_CODE_ENUM
};

// Every owner: the stack's functions and the code around them.
inline constexpr size_t kCodeCount = net::kFnCount + code_index::count;

// The names of the code around the stack's functions, in Code order.
inline constexpr std::array<std::string_view, code_index::count> kCodeNames = {
#define SIMLOOP_CODE_NAME(name) #name,
    SIMLOOP_CODE_LIST(SIMLOOP_CODE_NAME)
#undef SIMLOOP_CODE_NAME
};

// The name of owner `i` (0 .. kCodeCount-1): net::fn_name, then kCodeNames.
constexpr std::string_view owner_name(size_t i) {
  return i < net::kFnCount ? net::fn_name(static_cast<net::Fn>(i)) : kCodeNames[i - net::kFnCount];
}

constexpr std::string_view code_name(Code c) {
  return owner_name(static_cast<size_t>(c));
}

}  // namespace simloop::models
