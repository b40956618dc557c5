#include "sim/stack/linux/page_frag.h"

#include <stdexcept>
#include <string>

namespace simloop::lnx {

PagePool::PagePool(size_t capacity)
    : pages_("page_frag (order 3)", kFragPageSize, capacity), refs_(capacity, 0) {}

size_t PagePool::index(const uint8_t* p, const char* fn) const {
  if (!pages_.owns(p)) throw std::logic_error(std::string(fn) + ": not an address of a page");
  const size_t i = pages_.index_of(p);
  if (refs_[i] == 0) throw std::logic_error(std::string(fn) + ": a free page");
  return i;
}

uint8_t* PagePool::alloc_page() {
  void* p = pages_.alloc();
  if (p == nullptr) {
    ++stats_.failures;
    return nullptr;
  }
  refs_[pages_.index_of(p)] = 1;
  ++stats_.allocs;
  return static_cast<uint8_t*>(p);
}

void PagePool::get_page(const uint8_t* p) {
  ++refs_[index(p, "get_page")];
}

bool PagePool::put_page(const uint8_t* p) {
  const size_t i = index(p, "put_page");
  if (--refs_[i] != 0) return false;
  pages_.free(pages_.object_of(p));
  ++stats_.frees;
  return true;
}

uint32_t PagePool::page_count(const uint8_t* p) const {
  return refs_[index(p, "page_count")];
}

uint8_t* PagePool::page_address(const uint8_t* p) const {
  index(p, "page_address");
  return static_cast<uint8_t*>(pages_.object_of(p));
}

FragRefill skb_page_frag_refill(PagePool& pool, unsigned sz, PageFrag* pfrag) {
  FragRefill r;
  if (pfrag->page != nullptr) {
    if (pool.page_count(pfrag->page) == 1) {
      pfrag->offset = 0;
      r.ok = true;
      return r;
    }
    if (pfrag->offset + sz <= pfrag->size) {
      r.ok = true;
      return r;
    }
    r.freed = pool.put_page(pfrag->page);
    pfrag->page = nullptr;
  }
  pfrag->page = pool.alloc_page();
  if (pfrag->page == nullptr) return r;
  pfrag->offset = 0;
  pfrag->size = kFragPageSize;
  r.ok = r.allocated = true;
  return r;
}

void page_frag_release(PagePool& pool, PageFrag* pfrag) {
  if (pfrag->page != nullptr) pool.put_page(pfrag->page);
  *pfrag = PageFrag{};
}

}  // namespace simloop::lnx
