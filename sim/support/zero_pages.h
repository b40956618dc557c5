// A fixed-size array of zeros that costs nothing until it is used: its
// memory is mapped anonymous, so the kernel hands out a zeroed page on a
// page's first touch instead of the program writing every zero up front.
// Tables sized for the worst case (a zone's live bits, a run's rate bins)
// are mostly untouched in a short run; a sweep runs thousands of short runs,
// each in a fresh process where every written page is a page fault.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

namespace simloop::support {

// T's value-initialised state must be all zero bytes (plain counters,
// flags, doubles at 0.0).
template <class T>
class ZeroPages {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>,
                "ZeroPages holds plain data only");

 public:
  ZeroPages() = default;
  explicit ZeroPages(size_t n) : n_(n) {
    if (n == 0) return;
    void* p = ::mmap(nullptr, bytes(), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    data_ = static_cast<T*>(p);
  }
  ~ZeroPages() { release(); }
  ZeroPages(ZeroPages&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  ZeroPages& operator=(ZeroPages&& o) noexcept {
    if (this != &o) {
      release();
      data_ = std::exchange(o.data_, nullptr);
      n_ = std::exchange(o.n_, 0);
    }
    return *this;
  }
  ZeroPages(const ZeroPages&) = delete;
  ZeroPages& operator=(const ZeroPages&) = delete;

  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  T* begin() { return data_; }
  T* end() { return data_ + n_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + n_; }

 private:
  size_t bytes() const { return n_ * sizeof(T); }
  void release() {
    if (data_ != nullptr) ::munmap(data_, bytes());
    data_ = nullptr;
    n_ = 0;
  }

  T* data_ = nullptr;
  size_t n_ = 0;
};

}  // namespace simloop::support
