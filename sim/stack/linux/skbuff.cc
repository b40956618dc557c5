#include "sim/stack/linux/skbuff.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <new>
#include <stdexcept>
#include <string>

namespace simloop::lnx {

namespace {

constexpr std::array<const char*, kSkbDropReasonCount> kDropReasonNames = {
    "NOT_DROPPED_YET", "CONSUMED",   "NOT_SPECIFIED",  "NO_SOCKET",   "PKT_TOO_SMALL",
    "SOCKET_FILTER",   "UDP_CSUM",   "OTHERHOST",      "IP_CSUM",     "IP_INHDR",
    "IP_RPFILTER",     "IP_NOPROTO", "IP_OUTNOROUTES", "XFRM_POLICY", "SOCKET_RCVBUFF",
    "PROTO_MEM",       "NOMEM",      "FULL_RING",      "QUEUE_PURGE", "NETFILTER_DROP"};

std::string describe(const SkBuff* skb) {
  char buf[160];
  if (skb == nullptr) return "skb (nil)";
  std::snprintf(buf, sizeof(buf), "skb %p", static_cast<const void*>(skb));
  return buf;
}

std::string describe_window(const SkBuff* skb) {
  char buf[160];
  std::snprintf(buf, sizeof(buf), "skb %p len:%u headroom:%u tailroom:%u end:%u",
                static_cast<const void*>(skb), skb->len, skb_headroom(skb), skb_tailroom(skb),
                skb->end);
  return buf;
}

}  // namespace

const char* skb_drop_reason_name(SkbDropReason reason) {
  const auto i = static_cast<size_t>(reason);
  return i < kSkbDropReasonCount ? kDropReasonNames[i] : "?";
}

void skb_panic(const SkBuff* skb, const char* fn, const char* what) {
  throw std::logic_error(std::string(fn) + ": " + what + " (" + describe(skb) + ")");
}

void skb_over_panic(const SkBuff* skb, unsigned len) {
  throw std::logic_error("skb_over_panic: put of " + std::to_string(len) + " bytes past the end (" +
                         describe_window(skb) + ")");
}

void skb_under_panic(const SkBuff* skb, unsigned len) {
  throw std::logic_error("skb_under_panic: push of " + std::to_string(len) +
                         " bytes before the head (" + describe_window(skb) + ")");
}

SkbPool::SkbPool(const SkbPoolConfig& config)
    : skbs_("skbuff_head_cache", kSkbStructSize, config.skbs), pages_(config.pages) {
  if (config.small_heads > 0) {
    if (config.small_head_size < skb_head_align(1) || config.small_head_size > kKmallocMaxCacheSize)
      throw std::invalid_argument("SkbPool: small_head_size " +
                                  std::to_string(config.small_head_size) + " out of range");
    small_head_size_ = config.small_head_size;
    small_heads_ = std::make_unique<KmemCache>("skbuff_small_head", small_head_size_,
                                               config.small_heads);
  }
  for (size_t i = 0; i < kKmallocClasses; ++i) {
    const unsigned size = 1u << (kKmallocMinShift + i);
    const std::string name = size >= 1024 ? "kmalloc-" + std::to_string(size / 1024) + "k"
                                          : "kmalloc-" + std::to_string(size);
    kmalloc_[i] = std::make_unique<KmemCache>(name, size, config.kmalloc[i]);
  }
}

SkbPool::~SkbPool() = default;

unsigned SkbPool::head_alloc_size(unsigned size) const {
  if (size > kSkbMaxAlloc) return 0;
  const unsigned obj = skb_head_align(size);
  if (small_heads_ != nullptr && obj <= small_head_size_) return small_head_size_;
  // kmalloc_size_roundup: the next power of two, at least the smallest class.
  return std::max(std::bit_ceil(obj), 1u << kKmallocMinShift);
}

KmemCache* SkbPool::head_cache(unsigned alloc_size) {
  if (small_heads_ != nullptr && alloc_size == small_head_size_) return small_heads_.get();
  if (!std::has_single_bit(alloc_size)) return nullptr;
  const auto shift = static_cast<unsigned>(std::countr_zero(alloc_size));
  if (shift < kKmallocMinShift || shift > kKmallocMaxShift) return nullptr;
  return kmalloc_[shift - kKmallocMinShift].get();
}

size_t SkbPool::heads_in_use() const {
  size_t n = small_heads_ != nullptr ? small_heads_->stats().in_use : 0;
  for (const auto& c : kmalloc_) n += c->stats().in_use;
  return n;
}

// Every entry point checks its sk_buff against the cache's live flags before
// touching it: a double free or a stale pointer is named, not followed.
void SkbPool::check(const SkBuff* skb, const char* fn) const {
  if (!skbs_.is_live(skb)) {
    skb_panic(skb, fn, skbs_.owns(skb) ? "use of a freed sk_buff" : "not an sk_buff of this pool");
  }
  if (skb->users == 0) skb_panic(skb, fn, "live sk_buff with users == 0");
}

// kmalloc_reserve: `*size` usable bytes asked, the allocation's size returned in it.
uint8_t* SkbPool::kmalloc_reserve(unsigned* size) {
  const unsigned alloc = head_alloc_size(*size);
  KmemCache* cache = alloc != 0 ? head_cache(alloc) : nullptr;
  void* p = cache != nullptr ? cache->alloc() : nullptr;
  if (p == nullptr) return nullptr;
  if (alloc > kKmallocMaxCacheSize) ++stats_.large_heads;
  *size = alloc;
  return static_cast<uint8_t*>(p);
}

// skb_free_head: the cache is known from the end offset, as in Linux.
void SkbPool::free_head(uint8_t* head, unsigned end) {
  KmemCache* cache = head_cache(end + kSkbSharedInfoSize);
  if (cache == nullptr) {
    throw std::logic_error("skb_free_head: end offset " + std::to_string(end) +
                           " matches no head cache");
  }
  cache->free(head);
  if (end + kSkbSharedInfoSize > kKmallocMaxCacheSize) ++stats_.large_head_frees;
}

int skb_copy_bits(const SkBuff* skb, int offset, void* to, unsigned len) {
  skb_check_live(skb, "skb_copy_bits");
  if (offset < 0 || static_cast<unsigned long>(offset) + len > skb->len) return -EFAULT;
  auto* out = static_cast<uint8_t*>(to);
  skb_for_each_run(skb, static_cast<unsigned>(offset), len, [&](const uint8_t* src, unsigned n) {
    std::memcpy(out, src, n);
    out += n;
  });
  return 0;
}

SkBuff* SkbPool::new_skb() {
  void* p = skbs_.alloc();
  if (p == nullptr) return nullptr;
  // Linux clears the struct up to `tail` and sets the rest; all of it here.
  return new (p) SkBuff{};
}

// __finalize_skb_around: the head spans the whole allocation minus the
// shared info; truesize is what that costs.
void SkbPool::init_head(SkBuff* skb, uint8_t* data, unsigned alloc_size) {
  const unsigned size = skb_with_overhead(alloc_size);
  skb->truesize = skb_truesize(size);
  skb->users = 1;
  skb->head = data;
  skb->data = data;
  skb->tail = 0;
  skb->end = size;
  skb->mac_header = kSkbHeaderUnset;
  skb->transport_header = kSkbHeaderUnset;
  auto* shinfo = new (data + size) SkbSharedInfo{};
  shinfo->dataref = 1;
}

SkBuff* SkbPool::alloc_skb(unsigned size) {
  SkBuff* skb = alloc(size);
  if (skb != nullptr) ++stats_.allocs;
  return skb;
}

// __alloc_skb: the sk_buff from its cache, then the head.
SkBuff* SkbPool::alloc(unsigned size) {
  SkBuff* skb = new_skb();
  if (skb == nullptr) {
    ++stats_.alloc_failures;
    return nullptr;
  }
  unsigned alloc = size;
  uint8_t* data = kmalloc_reserve(&alloc);
  if (data == nullptr) {
    skb->users = 0;
    skbs_.free(skb);
    ++stats_.alloc_failures;
    return nullptr;
  }
  init_head(skb, data, alloc);
  return skb;
}

namespace {

// __copy_skb_header: the packet's metadata, not its buffers or owner.
void copy_skb_header(SkBuff* to, const SkBuff* from) {
  to->dev = from->dev;
  to->dst = from->dst;
  to->tstamp = from->tstamp;
  std::memcpy(to->cb, from->cb, sizeof(to->cb));
  to->ip_summed = from->ip_summed;
  to->pkt_type = from->pkt_type;
  to->protocol = from->protocol;
  to->transport_header = from->transport_header;
  to->network_header = from->network_header;
  to->mac_header = from->mac_header;
  to->priority = from->priority;
  to->mark = from->mark;
  to->hash = from->hash;
  to->csum = from->csum;
  to->csum_start = from->csum_start;
  to->csum_offset = from->csum_offset;
}

// skb_headers_offset_update: header marks follow the data to a new headroom.
void headers_offset_update(SkBuff* skb, int off) {
  if (skb->mac_header != kSkbHeaderUnset)
    skb->mac_header = static_cast<uint16_t>(skb->mac_header + off);
  if (skb->transport_header != kSkbHeaderUnset)
    skb->transport_header = static_cast<uint16_t>(skb->transport_header + off);
  skb->network_header = static_cast<uint16_t>(skb->network_header + off);
  if (skb->ip_summed == CHECKSUM_PARTIAL)
    skb->csum_start = static_cast<uint16_t>(skb->csum_start + off);
}

// skb_copy_header: the metadata, the GSO fields, marks moved by the headroom change.
void skb_copy_header(SkBuff* to, const SkBuff* from) {
  copy_skb_header(to, from);
  headers_offset_update(to,
                        static_cast<int>(skb_headroom(to)) - static_cast<int>(skb_headroom(from)));
  skb_shinfo(to)->gso_size = skb_shinfo(from)->gso_size;
  skb_shinfo(to)->gso_segs = skb_shinfo(from)->gso_segs;
  skb_shinfo(to)->gso_type = skb_shinfo(from)->gso_type;
}

}  // namespace

SkBuff* SkbPool::skb_clone(SkBuff* skb) {
  check(skb, "skb_clone");
  SkBuff* n = new_skb();
  if (n == nullptr) {
    ++stats_.alloc_failures;
    return nullptr;
  }
  // __skb_clone: same head and window, no owner, no queue.
  copy_skb_header(n, skb);
  n->len = skb->len;
  n->data_len = skb->data_len;
  n->mac_len = skb->mac_len;
  n->hdr_len = skb->hdr_len;
  n->cloned = 1;
  n->peeked = 0;
  n->head = skb->head;
  n->data = skb->data;
  n->tail = skb->tail;
  n->end = skb->end;
  n->truesize = skb->truesize;
  n->users = 1;
  ++skb_shinfo(skb)->dataref;
  skb->cloned = 1;
  ++stats_.clones;
  return n;
}

SkBuff* SkbPool::skb_copy(const SkBuff* skb) {
  check(skb, "skb_copy");
  const unsigned headroom = skb_headroom(skb);
  SkBuff* n = alloc(skb_end_offset(skb) + skb->data_len);
  if (n == nullptr) return nullptr;
  skb_reserve(n, static_cast<int>(headroom));
  skb_put(n, skb->len);
  // The headroom's bytes too: skb_copy_bits from -headroom; frags become
  // part of the new head.
  const unsigned head_bytes = headroom + skb_headlen(skb);
  if (head_bytes != 0) std::memcpy(n->head, skb->head, head_bytes);
  if (skb->data_len != 0)
    skb_copy_bits(skb, static_cast<int>(skb_headlen(skb)), n->data + skb_headlen(skb),
                  skb->data_len);
  stats_.bytes_copied += headroom + skb->len;
  skb_copy_header(n, skb);
  ++stats_.copies;
  return n;
}

SkBuff* SkbPool::pskb_copy(const SkBuff* skb) {
  check(skb, "pskb_copy");
  const unsigned headroom = skb_headroom(skb);
  SkBuff* n = alloc(skb_headlen(skb) + headroom);
  if (n == nullptr) return nullptr;
  skb_reserve(n, static_cast<int>(headroom));
  skb_put(n, skb_headlen(skb));
  if (n->len != 0) std::memcpy(n->data, skb->data, n->len);
  stats_.bytes_copied += n->len;
  // The frags are shared: each page gains a reference.
  const SkbSharedInfo* from = skb_shinfo(skb);
  for (unsigned i = 0; i < from->nr_frags; ++i) {
    pages_.get_page(from->frags[i].page);
    skb_shinfo(n)->frags[i] = from->frags[i];
  }
  skb_shinfo(n)->nr_frags = from->nr_frags;
  n->truesize += skb->data_len;
  n->data_len = skb->data_len;
  n->len = skb->len;
  skb_copy_header(n, skb);
  ++stats_.pskb_copies;
  return n;
}

int SkbPool::pskb_expand_head(SkBuff* skb, int nhead, int ntail) {
  check(skb, "pskb_expand_head");
  if (nhead < 0 || ntail < 0) skb_panic(skb, "pskb_expand_head", "negative growth");
  if (skb_shared(skb)) skb_panic(skb, "pskb_expand_head", "sk_buff is shared");
  const unsigned osize = skb_end_offset(skb);
  unsigned size = osize + static_cast<unsigned>(nhead) + static_cast<unsigned>(ntail);
  uint8_t* data = kmalloc_reserve(&size);
  if (data == nullptr) {
    ++stats_.alloc_failures;
    return -ENOMEM;
  }
  size = skb_with_overhead(size);
  // Headroom and data move together; the shared info is rebuilt below.
  if (skb->tail != 0) std::memcpy(data + nhead, skb->head, skb->tail);
  stats_.bytes_copied += skb->tail;
  auto* shinfo = new (data + size) SkbSharedInfo(*skb_shinfo(skb));
  // A shared head loses one user, and the new head takes its own references
  // to the frags; a private one is freed, its frags moving over.
  if (skb_cloned(skb)) {
    for (unsigned i = 0; i < shinfo->nr_frags; ++i) pages_.get_page(shinfo->frags[i].page);
    release_data(skb);
  } else {
    free_head(skb->head, skb->end);
  }
  skb->data = data + nhead + (skb->data - skb->head);
  skb->head = data;
  skb->end = size;
  skb->tail += static_cast<uint32_t>(nhead);
  headers_offset_update(skb, nhead);
  skb->cloned = 0;
  skb->hdr_len = 0;
  shinfo->dataref = 1;
  // Only unowned skbs grow: an owner's charge must stay what its destructor
  // will uncharge.
  if (skb->sk == nullptr) skb->truesize += size - osize;
  ++stats_.head_expands;
  return 0;
}

int SkbPool::skb_cow_head(SkBuff* skb, unsigned headroom) {
  check(skb, "skb_cow_head");
  unsigned delta = 0;
  if (headroom > skb_headroom(skb)) delta = headroom - skb_headroom(skb);
  if (delta != 0 || skb_header_cloned(skb)) {
    const unsigned nhead =
        (delta + kNetSkbPad - 1) / kNetSkbPad * kNetSkbPad;  // ALIGN(delta, NET_SKB_PAD)
    return pskb_expand_head(skb, static_cast<int>(nhead), 0);
  }
  return 0;
}

int SkbPool::skb_unclone(SkBuff* skb) {
  check(skb, "skb_unclone");
  return skb_cloned(skb) ? pskb_expand_head(skb, 0, 0) : 0;
}

SkBuff* SkbPool::skb_share_check(SkBuff* skb) {
  check(skb, "skb_share_check");
  if (!skb_shared(skb)) return skb;
  SkBuff* n = skb_clone(skb);
  if (n != nullptr) {
    consume_skb(skb);
  } else {
    kfree_skb(skb);
  }
  return n;
}

// skb_release_data: the last sk_buff of a head frees it. An skb never
// cloned skips the count, so its dataref must be 1.
void SkbPool::release_data(SkBuff* skb) {
  SkbSharedInfo* shinfo = skb_shinfo(skb);
  if (skb->cloned != 0) {
    if (shinfo->dataref == 0) skb_panic(skb, "skb_release_data", "dataref already 0");
    if (--shinfo->dataref != 0) return;
  } else if (shinfo->dataref != 1) {
    skb_panic(skb, "skb_release_data", "dataref != 1 on an skb never cloned");
  }
  for (unsigned i = 0; i < shinfo->nr_frags; ++i) pages_.put_page(shinfo->frags[i].page);
  free_head(skb->head, skb->end);
}

void SkbPool::kfree_skb_reason(SkBuff* skb, SkbDropReason reason) {
  if (skb == nullptr) return;
  const char* fn = reason == SkbDropReason::kConsumed ? "consume_skb" : "kfree_skb";
  check(skb, fn);
  if (reason == SkbDropReason::kNotDroppedYet || reason >= SkbDropReason::kCount)
    skb_panic(skb, fn, "invalid drop reason");
  // skb_unref: only the last reference frees, and only then is it traced.
  if (skb->users != 1) {
    --skb->users;
    return;
  }
  if (skb->list != nullptr) skb_panic(skb, fn, "freeing an sk_buff still on a queue");
  if (reason == SkbDropReason::kConsumed) {
    ++stats_.consumed;
  } else {
    ++stats_.dropped;
    ++stats_.drops[static_cast<size_t>(reason)];
  }
  // skb_release_head_state: the destructor uncharges the owner.
  if (skb->destructor != nullptr) {
    skb->destructor(skb);
    skb->destructor = nullptr;
    skb->sk = nullptr;
  }
  release_data(skb);
  skb->users = 0;
  skbs_.free(skb);
}

void SkbPool::skb_queue_purge(SkBuffHead* list) {
  while (SkBuff* skb = skb_dequeue(list)) kfree_skb_reason(skb, SkbDropReason::kQueuePurge);
}

}  // namespace simloop::lnx
