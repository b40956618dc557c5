// Every stack this program has, by its function table.
#pragma once

#include <array>

#include "net/bsd_fns.h"
#include "net/fn_table.h"

namespace simloop::net {

inline constexpr std::array<const FnTable*, 1> kFnTables = {&bsd::kFnTable};

}  // namespace simloop::net
