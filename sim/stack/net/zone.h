// Fixed-size object zones with free lists, like the kernel's UMA zones.
//
// A zone reserves one contiguous range of virtual memory for `capacity`
// items up front (pages are touched only when used), so the hot path never
// calls the general heap: alloc pops a free list or carves the next item.
// Items are aligned to their size, which is what makes mbuf and cluster
// addresses behave like a kernel's. A per-item live flag catches double
// frees and foreign pointers; under AddressSanitizer free items are poisoned.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "sim/support/zero_pages.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define SIMLOOP_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define SIMLOOP_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define SIMLOOP_POISON(p, n) ((void)(p), (void)(n))
#define SIMLOOP_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace simloop::net {

struct ZoneStats {
  size_t in_use = 0;     // items handed out and not yet freed
  size_t allocated = 0;  // items ever carved from the arena (the zone's footprint)
  size_t allocs = 0;     // successful allocations
  size_t frees = 0;
  size_t failures = 0;  // allocations refused because the limit was reached
  size_t limit = 0;
};

class Zone {
 public:
  // `item_size` must be a power of two that divides the page size.
  Zone(std::string name, size_t item_size, size_t capacity);
  ~Zone();
  Zone(const Zone&) = delete;
  Zone& operator=(const Zone&) = delete;

  void* alloc() {
    if (stats_.in_use >= stats_.limit) {
      ++stats_.failures;
      return nullptr;
    }
    void* p = free_ != nullptr ? pop_free() : carve();
    SIMLOOP_UNPOISON(p, item_size_);
    const size_t i = index_of(p);
    live_[i] = 1;
    ++stats_.in_use;
    ++stats_.allocs;
    return p;
  }

  void free(void* p);

  // Limits how many items may be in use at once; at most the capacity.
  void set_limit(size_t limit);
  bool owns(const void* p) const {
    auto a = reinterpret_cast<uintptr_t>(p);
    return a >= base_ && a < base_ + capacity_ * item_size_;
  }
  size_t index_of(const void* p) const {
    return (reinterpret_cast<uintptr_t>(p) - base_) / item_size_;
  }
  bool is_live(const void* p) const { return owns(p) && live_[index_of(p)] != 0; }

  const ZoneStats& stats() const { return stats_; }
  const std::string& name() const { return name_; }
  size_t item_size() const { return item_size_; }
  size_t capacity() const { return capacity_; }

 private:
  struct FreeItem {
    FreeItem* next;
  };
  void* pop_free() {
    FreeItem* item = free_;
    SIMLOOP_UNPOISON(item, sizeof(FreeItem));
    free_ = item->next;
    return item;
  }
  void* carve() {
    // The limit check above guarantees carved items never exceed capacity.
    void* p = reinterpret_cast<void*>(base_ + stats_.allocated * item_size_);
    ++stats_.allocated;
    return p;
  }

  std::string name_;
  size_t item_size_;
  size_t capacity_;
  uintptr_t base_ = 0;
  FreeItem* free_ = nullptr;
  support::ZeroPages<uint8_t> live_;  // 1 while the item is allocated
  ZoneStats stats_;
};

}  // namespace simloop::net
