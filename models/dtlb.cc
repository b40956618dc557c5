#include "models/dtlb.h"

#include <algorithm>
#include <bit>
#include <stdexcept>
#include <string>

namespace simloop::models {

Tlb::Tlb(int entries, int64_t page_bytes) {
  if (entries < 1) throw std::invalid_argument("a TLB holds at least one page");
  if (page_bytes < 1 || !std::has_single_bit(static_cast<uint64_t>(page_bytes)))
    throw std::invalid_argument("TLB pages must be a power of two bytes, got " +
                                std::to_string(page_bytes));
  entries_ = static_cast<size_t>(entries);
  shift_ = std::countr_zero(static_cast<uint64_t>(page_bytes));
  pages_.reserve(entries_);
}

int Tlb::touch(uintptr_t addr, size_t len) {
  if (len == 0) return 0;
  const uint64_t first = addr >> shift_;
  const uint64_t last = (addr + len - 1) >> shift_;
  int missed = 0;
  for (uint64_t p = first; p <= last; ++p) missed += lookup(p) ? 0 : 1;
  return missed;
}

bool Tlb::lookup(uint64_t page) {
  ++accesses_;
  const auto it = std::find(pages_.begin(), pages_.end(), page);
  if (it != pages_.end()) {
    std::rotate(pages_.begin(), it, it + 1);  // most recently used first
    return true;
  }
  ++misses_;
  if (pages_.size() < entries_)
    pages_.push_back(page);
  else
    pages_.back() = page;  // in place of the least recently used
  std::rotate(pages_.begin(), pages_.end() - 1, pages_.end());
  return false;
}

}  // namespace simloop::models
