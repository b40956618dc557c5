// Pages for sk_buff frags, and the socket's page_frag that carves them, with
// Linux 6.x semantics (include/linux/mm.h get_page/put_page, net/core/sock.c
// skb_page_frag_refill).
//
// A datagram too large for one linear head (alloc_skb's SKB_MAX_ALLOC) is
// built in page frags on a device with scatter-gather, as __ip_append_data
// does on lo: the socket keeps one compound page (sk->sk_frag, order
// SKB_FRAG_PAGE_ORDER: 32 KiB) and copies each send's data to its free end.
// Every frag holds a reference to its page; the socket holds one more. A
// page whose only reference is the socket's is reused from its start; a
// page that is full, or still held by an sk_buff in flight, is released by
// the socket and a new one taken. The page is freed by its last put_page.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/stack/linux/slab.h"

namespace simloop::lnx {

inline constexpr unsigned kFragPageSize = 32768;  // PAGE_SIZE << SKB_FRAG_PAGE_ORDER

struct PageStats {
  uint64_t allocs = 0;    // pages taken (alloc_pages)
  uint64_t frees = 0;     // pages freed by their last put_page
  uint64_t failures = 0;  // alloc_pages refused: the pool is at its limit
};

// Compound pages with reference counts (struct page's _refcount).
class PagePool {
 public:
  explicit PagePool(size_t capacity);

  // A page with one reference; nullptr once `capacity` pages are in use.
  uint8_t* alloc_page();
  // Takes or drops a reference to the page holding `p` (any address in it).
  // put_page returns true when it dropped the last one and freed the page.
  void get_page(const uint8_t* p);
  bool put_page(const uint8_t* p);
  uint32_t page_count(const uint8_t* p) const;
  // The first byte of the page holding `p`.
  uint8_t* page_address(const uint8_t* p) const;

  size_t in_use() const { return pages_.stats().in_use; }
  const PageStats& stats() const { return stats_; }

 private:
  size_t index(const uint8_t* p, const char* fn) const;

  KmemCache pages_;
  std::vector<uint32_t> refs_;
  PageStats stats_;
};

// struct page_frag: the socket's current page (one reference held) and the
// first free byte in it.
struct PageFrag {
  uint8_t* page = nullptr;
  uint32_t offset = 0;
  uint32_t size = 0;
};

// What skb_page_frag_refill did: whether there is room, and whether it took
// a new page (and freed the old one with the socket's last reference).
struct FragRefill {
  bool ok = false;
  bool allocated = false;
  bool freed = false;
};

// skb_page_frag_refill(sz, pfrag): room for at least `sz` bytes at
// pfrag->offset. The current page is reused from its start when the socket
// holds its only reference, kept when `sz` bytes still fit, and otherwise
// released for a new page.
FragRefill skb_page_frag_refill(PagePool& pool, unsigned sz, PageFrag* pfrag);

// The socket's reference to its page, dropped when the socket goes
// (sk_destruct's put_page of sk_frag.page).
void page_frag_release(PagePool& pool, PageFrag* pfrag);

}  // namespace simloop::lnx
