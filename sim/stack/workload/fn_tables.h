// Every stack this program has, by its function table.
#pragma once

#include <array>
#include <string_view>

#include "sim/stack/bsd/fns.h"
#include "sim/stack/linux/fns.h"
#include "sim/stack/net/fn_table.h"

namespace simloop::net {

// The BSD stack first: the layout owners' indices of its functions stay
// what they were before a second stack came.
inline constexpr std::array<const FnTable*, 2> kFnTables = {&bsd::kFnTable, &lnx::kFnTable};

// The table of the stack named `name` ("bsd", "linux"), or nullptr.
constexpr const FnTable* find_fn_table(std::string_view name) {
  for (const FnTable* t : kFnTables)
    if (t->stack() == name) return t;
  return nullptr;
}

}  // namespace simloop::net
