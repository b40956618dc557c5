// Fixed-size object caches with free lists, like the kernel's kmem_cache.
//
// A cache reserves one contiguous range of virtual memory for `capacity`
// objects up front (pages are touched only when used), so allocation never
// calls the general heap: it pops the free list or carves the next object.
// Objects are cache-line aligned (SLAB_HWCACHE_ALIGN); power-of-two sizes up
// to a page are aligned to their size, like kmalloc's. A per-object live
// flag catches double frees, interior and foreign pointers without touching
// the object; under AddressSanitizer free objects are poisoned, so any use
// after free is reported where it happens.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "sim/support/zero_pages.h"

#if defined(__SANITIZE_ADDRESS__)
#define SIMLOOP_LNX_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SIMLOOP_LNX_ASAN 1
#endif
#endif

#if defined(SIMLOOP_LNX_ASAN)
#include <sanitizer/asan_interface.h>
#define SIMLOOP_LNX_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define SIMLOOP_LNX_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define SIMLOOP_LNX_POISON(p, n) ((void)(p), (void)(n))
#define SIMLOOP_LNX_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace simloop::lnx {

// What /proc/slabinfo would say of one cache, plus the refusals.
struct KmemCacheStats {
  size_t in_use = 0;  // objects handed out and not yet freed
  size_t peak = 0;    // the most ever in use at once
  size_t carved = 0;  // objects ever taken from the arena (the footprint)
  size_t allocs = 0;  // successful allocations
  size_t frees = 0;
  size_t failures = 0;  // allocations refused because the limit was reached
  size_t limit = 0;
};

class KmemCache {
 public:
  static constexpr size_t kAlign = 64;  // SMP_CACHE_BYTES on x86-64

  // `object_size` must be a positive multiple of kAlign; `capacity` > 0.
  KmemCache(std::string name, size_t object_size, size_t capacity);
  ~KmemCache();
  KmemCache(const KmemCache&) = delete;
  KmemCache& operator=(const KmemCache&) = delete;

  // kmem_cache_alloc without sleeping: nullptr once `limit` objects are in use.
  void* alloc() {
    if (stats_.in_use >= stats_.limit) {
      ++stats_.failures;
      return nullptr;
    }
    void* p = free_ != nullptr ? pop_free() : carve();
    SIMLOOP_LNX_UNPOISON(p, object_size_);
    live_[index_of(p)] = 1;
    ++stats_.allocs;
    if (++stats_.in_use > stats_.peak) stats_.peak = stats_.in_use;
    return p;
  }

  // kmem_cache_free; throws std::logic_error on a pointer that is not a live
  // object of this cache (a double free, an interior or foreign pointer).
  void free(void* p);

  // At most this many objects in use at once (at most the capacity): a way
  // to make allocations fail on purpose.
  void set_limit(size_t limit);

  bool owns(const void* p) const {
    const auto a = reinterpret_cast<uintptr_t>(p);
    return a >= base_ && a < base_ + capacity_ * object_size_;
  }
  size_t index_of(const void* p) const {
    return (reinterpret_cast<uintptr_t>(p) - base_) / object_size_;
  }
  // The start of the object holding `p` (which must be owned).
  void* object_of(const void* p) const {
    return reinterpret_cast<void*>(base_ + index_of(p) * object_size_);
  }
  // A live object's start (not a pointer into it).
  bool is_live(const void* p) const {
    return owns(p) && live_[index_of(p)] != 0 &&
           reinterpret_cast<uintptr_t>(p) == base_ + index_of(p) * object_size_;
  }

  const KmemCacheStats& stats() const { return stats_; }
  const std::string& name() const { return name_; }
  size_t object_size() const { return object_size_; }
  size_t capacity() const { return capacity_; }

 private:
  struct FreeObject {
    FreeObject* next;
  };
  void* pop_free() {
    FreeObject* o = free_;
    SIMLOOP_LNX_UNPOISON(o, sizeof(FreeObject));
    free_ = o->next;
    return o;
  }
  void* carve() {
    // The limit check in alloc() keeps carving within the capacity.
    void* p = reinterpret_cast<void*>(base_ + stats_.carved * object_size_);
    ++stats_.carved;
    return p;
  }
  [[noreturn]] void fail(const char* what, const void* p) const;

  std::string name_;
  size_t object_size_;
  size_t capacity_;
  uintptr_t base_ = 0;
  size_t map_bytes_ = 0;
  FreeObject* free_ = nullptr;
  support::ZeroPages<uint8_t> live_;  // 1 while the object is allocated
  KmemCacheStats stats_;
};

}  // namespace simloop::lnx
