#include "sim/stack/linux/slab.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <stdexcept>
#include <utility>

namespace simloop::lnx {

KmemCache::KmemCache(std::string name, size_t object_size, size_t capacity)
    : name_(std::move(name)), object_size_(object_size), capacity_(capacity), live_(capacity) {
  if (object_size == 0 || object_size % kAlign != 0)
    throw std::invalid_argument("kmem_cache " + name_ + ": object size must be a multiple of 64");
  if (capacity == 0)
    throw std::invalid_argument("kmem_cache " + name_ + ": capacity must be positive");
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  map_bytes_ = (capacity * object_size + page - 1) / page * page;
  void* p = mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) throw std::runtime_error("kmem_cache " + name_ + ": cannot reserve memory");
  base_ = reinterpret_cast<uintptr_t>(p);
  stats_.limit = capacity;
  SIMLOOP_LNX_POISON(p, map_bytes_);
}

KmemCache::~KmemCache() {
  SIMLOOP_LNX_UNPOISON(reinterpret_cast<void*>(base_), map_bytes_);
  munmap(reinterpret_cast<void*>(base_), map_bytes_);
}

void KmemCache::fail(const char* what, const void* p) const {
  char where[32];
  std::snprintf(where, sizeof(where), "%p", p);
  throw std::logic_error("kmem_cache " + name_ + ": " + what + " (" + where + ")");
}

void KmemCache::free(void* p) {
  if (!owns(p)) fail("free of a pointer it does not own", p);
  const size_t i = index_of(p);
  if (reinterpret_cast<uintptr_t>(p) != base_ + i * object_size_)
    fail("free of a pointer inside an object", p);
  if (live_[i] == 0) fail("double free", p);
  live_[i] = 0;
  auto* o = static_cast<FreeObject*>(p);
  o->next = free_;
  free_ = o;
  SIMLOOP_LNX_POISON(p, object_size_);
  --stats_.in_use;
  ++stats_.frees;
}

void KmemCache::set_limit(size_t limit) {
  if (limit > capacity_)
    throw std::invalid_argument("kmem_cache " + name_ + ": limit above capacity " +
                                std::to_string(capacity_));
  stats_.limit = limit;
}

}  // namespace simloop::lnx
