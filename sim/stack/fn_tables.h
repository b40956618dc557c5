// Every stack this program has, by its function table.
#pragma once

#include <array>

#include "sim/stack/bsd/fns.h"
#include "sim/stack/net/fn_table.h"

namespace simloop::net {

inline constexpr std::array<const FnTable*, 1> kFnTables = {&bsd::kFnTable};

}  // namespace simloop::net
