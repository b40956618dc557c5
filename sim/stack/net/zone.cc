#include "sim/stack/net/zone.h"

#include <sys/mman.h>

#include <stdexcept>
#include <utility>

namespace simloop::net {

Zone::Zone(std::string name, size_t item_size, size_t capacity)
    : name_(std::move(name)), item_size_(item_size), capacity_(capacity), live_(capacity) {
  if (item_size == 0 || (item_size & (item_size - 1)) != 0 || 4096 % item_size != 0)
    throw std::invalid_argument("zone " + name_ + ": item size must be a power of two <= 4096");
  if (capacity == 0) throw std::invalid_argument("zone " + name_ + ": capacity must be positive");
  void* p = mmap(nullptr, capacity * item_size, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) throw std::runtime_error("zone " + name_ + ": cannot reserve memory");
  base_ = reinterpret_cast<uintptr_t>(p);
  stats_.limit = capacity;
  SIMLOOP_POISON(p, capacity * item_size);
}

Zone::~Zone() {
  SIMLOOP_UNPOISON(reinterpret_cast<void*>(base_), capacity_ * item_size_);
  munmap(reinterpret_cast<void*>(base_), capacity_ * item_size_);
}

void Zone::free(void* p) {
  if (!owns(p)) throw std::logic_error("zone " + name_ + ": free of a pointer it does not own");
  const size_t i = index_of(p);
  if (reinterpret_cast<uintptr_t>(p) != base_ + i * item_size_)
    throw std::logic_error("zone " + name_ + ": free of a pointer inside an item");
  if (live_[i] == 0) throw std::logic_error("zone " + name_ + ": double free");
  live_[i] = 0;
  auto* item = static_cast<FreeItem*>(p);
  item->next = free_;
  free_ = item;
  SIMLOOP_POISON(p, item_size_);
  --stats_.in_use;
  ++stats_.frees;
}

void Zone::set_limit(size_t limit) {
  if (limit > capacity_)
    throw std::invalid_argument("zone " + name_ + ": limit above capacity " +
                                std::to_string(capacity_));
  stats_.limit = limit;
}

}  // namespace simloop::net
