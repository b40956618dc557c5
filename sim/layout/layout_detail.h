// What the layout files share inside sim/layout.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>

#include "sim/layout/layout.h"

namespace simloop::models::detail {

inline bool pow2(uint64_t v) {
  return v != 0 && std::has_single_bit(v);
}

inline uint64_t align_up(uint64_t v, uint64_t align) {
  return align <= 1 ? v : (v + align - 1) / align * align;
}

// Problems with one object's functions, or "" when it is consistent; the
// index of the function at fault in `bad_function` (the object's function
// count when the object itself is). Shared by the YAML loader (which adds
// a position) and validate().
std::string object_problem(const ObjectFile& o, size_t* bad_function);

}  // namespace simloop::models::detail
