#include "models/l1d_copies.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <stdexcept>

namespace simloop::models {

namespace {
constexpr int64_t kPageBytes = 4096;
}  // namespace

std::string L1dCopies::problem(int64_t bytes, int ways, int line_bytes) {
  if (line_bytes <= 0 || line_bytes > kPageBytes ||
      !std::has_single_bit(static_cast<unsigned>(line_bytes)))
    return "the L1 data cache's line must be a power of two bytes, up to 4096";
  if (ways < 1 || ways > 1024) return "the L1 data cache's ways must be 1 to 1024";
  if (bytes <= 0 || bytes > (int64_t{1} << 30) ||
      bytes % (static_cast<int64_t>(ways) * line_bytes) != 0)
    return "the L1 data cache's size must be a positive multiple of its ways times its line, up "
           "to 1 GiB";
  return "";
}

L1dCopies::L1dCopies(int64_t bytes, int ways, int line_bytes) {
  if (std::string why = problem(bytes, ways, line_bytes); !why.empty())
    throw std::invalid_argument(why);
  ways_ = static_cast<size_t>(ways);
  sets_ = static_cast<size_t>(bytes / (static_cast<int64_t>(ways) * line_bytes));
  shift_ = std::countr_zero(static_cast<unsigned>(line_bytes));
  pow2_ = std::has_single_bit(sets_);
  set_mask_ = pow2_ ? sets_ - 1 : 0;
  by_frame_ = !pow2_ || static_cast<int64_t>(sets_) * line_bytes > kPageBytes;
  tags_.assign(sets_ * ways_, 0);
}

size_t L1dCopies::set_of(uint64_t line) {
  if (!by_frame_) return static_cast<size_t>(line & set_mask_);
  const int page_shift = std::countr_zero(static_cast<uint64_t>(kPageBytes)) - shift_;
  const auto [it, fresh] = frame_.try_emplace(line >> page_shift, frame_.size());
  const uint64_t index = (it->second << page_shift) | (line & ((uint64_t{1} << page_shift) - 1));
  return static_cast<size_t>(pow2_ ? index & set_mask_ : index % sets_);
}

bool L1dCopies::touch(uint64_t line) {
  uint64_t* tags = tags_.data() + set_of(line) * ways_;
  // Each set's ways in order of use, the most recent first: a hit moves its
  // line to the front, a miss drops the last (an empty way, tag 0, is the
  // oldest). No per-way clock to compare, which a streaming copy, missing in
  // every set, would pay for in full on every line.
  const uint64_t tag = line + 1;
  size_t w = 0;
  while (w < ways_ && tags[w] != tag) ++w;
  const bool hit = w < ways_;
  if (!hit) w = ways_ - 1;
  std::memmove(tags + 1, tags, w * sizeof(uint64_t));
  tags[0] = tag;
  return hit;
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
