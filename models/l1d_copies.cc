#include "models/l1d_copies.h"

#include <algorithm>
#include <bit>
#include <stdexcept>

namespace simloop::models {

L1dCopies::L1dCopies(int64_t bytes, int ways, int line_bytes) {
  if (line_bytes <= 0 || !std::has_single_bit(static_cast<unsigned>(line_bytes)))
    throw std::invalid_argument("the L1 data cache's line must be a power of two bytes");
  if (ways <= 0 || bytes <= 0 || bytes % (static_cast<int64_t>(ways) * line_bytes) != 0)
    throw std::invalid_argument(
        "the L1 data cache's size must be a positive multiple of its ways times its line");
  ways_ = static_cast<size_t>(ways);
  sets_ = static_cast<size_t>(bytes / (static_cast<int64_t>(ways) * line_bytes));
  shift_ = std::countr_zero(static_cast<unsigned>(line_bytes));
  tags_.assign(sets_ * ways_, 0);
  stamp_.assign(sets_ * ways_, 0);
}

bool L1dCopies::touch(uint64_t line) {
  const size_t base = static_cast<size_t>(line % sets_) * ways_;
  uint64_t* tags = tags_.data() + base;
  uint64_t* stamps = stamp_.data() + base;
  ++clock_;
  size_t victim = 0;
  for (size_t w = 0; w < ways_; ++w) {
    if (tags[w] == line + 1) {
      stamps[w] = clock_;
      return true;
    }
    if (stamps[w] < stamps[victim]) victim = w;
  }
  tags[victim] = line + 1;
  stamps[victim] = clock_;
  return false;
}

size_t L1dCopies::copy(uintptr_t src, uintptr_t dst, size_t len) {
  size_t missed = 0;
  const uint64_t line = uint64_t{1} << shift_;
  auto look = [&](uint64_t addr, size_t bytes) {
    ++lines_;
    if (touch(addr >> shift_)) return;
    ++misses_;
    missed += bytes;
  };
  // Walk the source line by line; each step's bytes go to the destination's
  // line under the same offsets (two lines where the ends are not aligned
  // alike, the bytes split between them).
  for (size_t off = 0; off < len;) {
    const uint64_t s = src + off;
    const size_t n = std::min<size_t>(len - off, line - (s & (line - 1)));
    look(s, n);
    const uint64_t d = dst + off;
    const size_t first = std::min<size_t>(n, line - (d & (line - 1)));
    look(d, first);
    if (first < n) look(d + first, n - first);
    off += n;
  }
  return missed;
}

}  // namespace simloop::models
