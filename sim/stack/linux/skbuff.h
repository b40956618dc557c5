// Linux socket buffers: struct sk_buff, its shared info and the operations
// the UDP/IPv4 path uses, with the semantics of Linux 6.x
// (include/linux/skbuff.h, net/core/skbuff.c) on x86-64.
//
// Layout. An sk_buff describes a window [data, tail) of a head buffer
// [head, head + end); skb_shared_info sits right after `end`, in the same
// allocation, and holds `dataref`, the number of sk_buffs sharing the head
// (clones). `users` counts references to the sk_buff itself (skb_get). As
// on 64-bit Linux (NET_SKBUFF_DATA_USES_OFFSET), tail and end are offsets
// from head, and the header marks are 16-bit offsets from head.
//
// Memory. sk_buffs come from their own cache (skbuff_head_cache), heads from
// skb_small_head_cache or the power-of-two kmalloc caches; nothing calls the
// general heap once the pool exists. The sizes are Linux's, so truesize
// (what sockets are charged) is too:
//   alloc = SKB_HEAD_ALIGN(size) = SKB_DATA_ALIGN(size) + 320, then 640 (the
//           small-head cache) if alloc <= 640, else the next power of two (>= 512);
//   end   = alloc - 320 (all of the allocation is usable: tailroom may exceed size);
//   truesize = SKB_TRUESIZE(end) = end + 256 + 320 = alloc + 256,
// where 256 = SKB_DATA_ALIGN(sizeof(struct sk_buff)) (232 bytes) and
// 320 = SKB_DATA_ALIGN(sizeof(struct skb_shared_info)) (MAX_SKB_FRAGS 17).
//
// Page frags hold what a datagram too large for a linear head carries
// (page_frag.h); there is no frag_list. Refcounts are plain
// integers: the simulator runs one thread. Misuse that Linux answers with
// BUG()/panic (skb_over_panic, skb_under_panic, expanding a shared skb, a
// double free, use of a freed skb) throws std::logic_error; functions that
// fail softly in Linux (skb_pull, allocations) fail softly here.
#pragma once

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

#include "sim/stack/linux/page_frag.h"
#include "sim/stack/linux/slab.h"

namespace simloop::lnx {

struct Sock;
struct SkBuff;
struct SkBuffHead;

// ---- Sizes (x86-64, Linux 6.x, a distribution kernel's configuration) ----

inline constexpr unsigned kSmpCacheBytes = 64;  // SMP_CACHE_BYTES, L1_CACHE_BYTES
inline constexpr unsigned kNetSkbPad = 64;      // NET_SKB_PAD = max(32, L1_CACHE_BYTES)
inline constexpr unsigned kMaxSkbFrags = 17;    // MAX_SKB_FRAGS

// SKB_DATA_ALIGN: heads and shared info start on their own cache lines.
constexpr unsigned skb_data_align(unsigned x) {
  return (x + kSmpCacheBytes - 1) & ~(kSmpCacheBytes - 1);
}
inline constexpr unsigned kSkbStructSize = 256;      // SKB_DATA_ALIGN(sizeof(struct sk_buff))
inline constexpr unsigned kSkbSharedInfoSize = 320;  // SKB_DATA_ALIGN(sizeof(skb_shared_info))
// SKB_HEAD_ALIGN: the allocation a head of `x` usable bytes needs.
constexpr unsigned skb_head_align(unsigned x) {
  return skb_data_align(x) + kSkbSharedInfoSize;
}
// SKB_WITH_OVERHEAD: the usable bytes of an allocation of `x`.
constexpr unsigned skb_with_overhead(unsigned x) {
  return x - kSkbSharedInfoSize;
}
// SKB_TRUESIZE: what an skb with `x` usable head bytes costs in memory.
constexpr unsigned skb_truesize(unsigned x) {
  return x + kSkbStructSize + kSkbSharedInfoSize;
}
// SKB_SMALL_HEAD_CACHE_SIZE (Linux >= 6.3): SKB_HEAD_ALIGN(MAX_TCP_HEADER),
// MAX_TCP_HEADER being 320 with LL_MAX_HEADER 128 and tunnels configured.
inline constexpr unsigned kSkbSmallHeadCacheSize = skb_head_align(320);
inline constexpr unsigned kSkbSmallHeadHeadroom = skb_with_overhead(kSkbSmallHeadCacheSize);
// kmalloc size classes for heads: 512 B (the smallest a head can need) to
// 128 KiB (a 64 KiB datagram on loopback). Above 8 KiB Linux takes whole
// pages (kmalloc_large), also powers of two, so one rule serves all.
inline constexpr unsigned kKmallocMinShift = 9;
inline constexpr unsigned kKmallocMaxShift = 17;
inline constexpr size_t kKmallocClasses = kKmallocMaxShift - kKmallocMinShift + 1;
inline constexpr unsigned kKmallocMaxSize = 1u << kKmallocMaxShift;
// The largest `size` alloc_skb accepts.
inline constexpr unsigned kSkbMaxAlloc = skb_with_overhead(kKmallocMaxSize);
// KMALLOC_MAX_CACHE_SIZE: larger heads are whole pages (kmalloc_large).
inline constexpr unsigned kKmallocMaxCacheSize = 8192;
// SKB_MAX_ALLOC (SKB_MAX_ORDER(0, 2)): __ip_append_data builds a datagram
// whose head would reach this in page frags, on a device with
// scatter-gather.
inline constexpr unsigned kSkbMaxLinearAlloc = skb_with_overhead(4096u << 2);

// ---- Drop reasons (a subset of enum skb_drop_reason) ----

enum class SkbDropReason : uint8_t {
  kNotDroppedYet,  // never a valid reason to free with
  kConsumed,       // SKB_CONSUMED: kfree_skb_reason with it is consume_skb
  kNotSpecified,
  kNoSocket,
  kPktTooSmall,
  kSocketFilter,
  kUdpCsum,
  kOtherHost,
  kIpCsum,
  kIpInHdr,
  kIpRpFilter,
  kIpNoProto,
  kIpOutNoRoutes,
  kXfrmPolicy,
  kSocketRcvbuff,
  kProtoMem,
  kNoMem,
  kFullRing,
  kQueuePurge,
  kNetfilterDrop,  // SKB_DROP_REASON_NETFILTER_DROP: a rule's drop verdict
  kCount
};
inline constexpr size_t kSkbDropReasonCount = static_cast<size_t>(SkbDropReason::kCount);
const char* skb_drop_reason_name(SkbDropReason reason);

// ---- The structures ----

// ip_summed values.
inline constexpr uint8_t CHECKSUM_NONE = 0;
inline constexpr uint8_t CHECKSUM_UNNECESSARY = 1;
inline constexpr uint8_t CHECKSUM_COMPLETE = 2;
inline constexpr uint8_t CHECKSUM_PARTIAL = 3;

// pkt_type values.
inline constexpr uint8_t PACKET_HOST = 0;
inline constexpr uint8_t PACKET_BROADCAST = 1;
inline constexpr uint8_t PACKET_MULTICAST = 2;
inline constexpr uint8_t PACKET_OTHERHOST = 3;
inline constexpr uint8_t PACKET_LOOPBACK = 5;

inline constexpr uint16_t kSkbHeaderUnset = 0xffff;  // (typeof(skb->mac_header))~0U

struct SkBuff {
  SkBuff* next;  // in a queue (sk_buff_head)
  SkBuff* prev;
  SkBuffHead* list;  // the queue holding it: not in Linux, here to refuse freeing a queued skb
  Sock* sk;          // owner, charged truesize; set with its destructor
  void (*destructor)(SkBuff* skb);
  void* dev;                  // struct net_device, opaque to this layer
  const void* dst;            // the route (skb_dst, _skb_refdst), opaque to this layer
  int64_t tstamp;             // ktime_t
  alignas(8) uint8_t cb[48];  // control buffer: each layer's private per-packet state

  uint32_t len;       // bytes of data: the linear part plus data_len
  uint32_t data_len;  // bytes in page frags
  uint16_t mac_len;
  uint16_t hdr_len;  // writable header length of a clone
  uint8_t cloned;    // the head is (or was) shared with a clone: see skb_cloned
  uint8_t ip_summed;
  uint8_t pkt_type;
  uint8_t peeked;
  uint16_t protocol;          // __be16
  uint16_t transport_header;  // offsets from head; kSkbHeaderUnset when unset
  uint16_t network_header;
  uint16_t mac_header;
  uint32_t priority;
  uint32_t mark;
  uint32_t hash;
  uint32_t csum;  // __wsum
  uint16_t csum_start;
  uint16_t csum_offset;

  uint32_t tail;  // offsets from head (sk_buff_data_t on 64-bit)
  uint32_t end;
  uint8_t* head;
  uint8_t* data;
  uint32_t truesize;
  uint32_t users;  // refcount_t; 0 once freed
};
static_assert(sizeof(SkBuff) <= kSkbStructSize);

// skb_frag_t: a run of bytes in a page, which the frag holds a reference to.
struct SkbFrag {
  uint8_t* page;
  uint32_t offset;
  uint32_t size;
};

// At the end of every head: what clones share.
struct SkbSharedInfo {
  uint8_t flags;
  uint8_t meta_len;
  uint8_t nr_frags;
  uint8_t tx_flags;
  uint16_t gso_size;
  uint16_t gso_segs;
  SkBuff* frag_list;  // always nullptr
  int64_t hwtstamp;
  uint32_t gso_type;
  uint32_t tskey;
  uint32_t dataref;  // sk_buffs sharing this head (atomic_t; no nohdr half)
  uint32_t xdp_frags_size;
  void* destructor_arg;
  SkbFrag frags[kMaxSkbFrags];
};
static_assert(sizeof(SkbSharedInfo) == kSkbSharedInfoSize);

// struct sk_buff_head: a doubly linked queue with its length. Linux makes it
// circular through the head; here it is nullptr-terminated.
struct SkBuffHead {
  SkBuff* next = nullptr;  // first
  SkBuff* prev = nullptr;  // last
  uint32_t qlen = 0;
};

// ---- Checks behind BUG() ----

// Out of line: throws std::logic_error naming the function and the skb.
[[noreturn]] void skb_panic(const SkBuff* skb, const char* fn, const char* what);
[[noreturn]] void skb_over_panic(const SkBuff* skb, unsigned len);
[[noreturn]] void skb_under_panic(const SkBuff* skb, unsigned len);

// A freed sk_buff has users == 0 (until its memory is reused; under ASan
// the read itself is reported). refcount_t warns likewise on use after free.
inline void skb_check_live(const SkBuff* skb, const char* fn) {
  if (skb->users == 0) skb_panic(skb, fn, "use of a freed sk_buff");
}

// ---- Accessors ----

inline SkbSharedInfo* skb_shinfo(const SkBuff* skb) {
  return reinterpret_cast<SkbSharedInfo*>(skb->head + skb->end);
}
inline uint8_t* skb_tail_pointer(const SkBuff* skb) {
  return skb->head + skb->tail;
}
inline uint8_t* skb_end_pointer(const SkBuff* skb) {
  return skb->head + skb->end;
}
inline unsigned skb_end_offset(const SkBuff* skb) {
  return skb->end;
}
inline unsigned skb_headroom(const SkBuff* skb) {
  return static_cast<unsigned>(skb->data - skb->head);
}
inline unsigned skb_tailroom(const SkBuff* skb) {
  return skb->end - skb->tail;
}
inline unsigned skb_headlen(const SkBuff* skb) {
  return skb->len - skb->data_len;
}
inline bool skb_is_nonlinear(const SkBuff* skb) {
  return skb->data_len != 0;
}

// The head is shared with a clone still alive.
inline bool skb_cloned(const SkBuff* skb) {
  return skb->cloned != 0 && skb_shinfo(skb)->dataref != 1;
}
// Whether the header part may not be written: without nohdr clones, skb_cloned.
inline bool skb_header_cloned(const SkBuff* skb) {
  return skb_cloned(skb);
}
// More than one reference to this sk_buff.
inline bool skb_shared(const SkBuff* skb) {
  return skb->users != 1;
}
inline SkBuff* skb_get(SkBuff* skb) {
  skb_check_live(skb, "skb_get");
  ++skb->users;
  return skb;
}

// ---- Moving the window ----

// Room at the front of an empty skb, for headers pushed later.
inline void skb_reserve(SkBuff* skb, int len) {
  skb_check_live(skb, "skb_reserve");
  const long data = skb->data - skb->head + len;
  const long tail = static_cast<long>(skb->tail) + len;
  if (data < 0 || tail > static_cast<long>(skb->end))
    skb_panic(skb, "skb_reserve", "out of the head");
  skb->data += len;
  skb->tail = static_cast<uint32_t>(tail);
}

// Extends the data at the end; returns where the new bytes go.
inline uint8_t* skb_put(SkBuff* skb, unsigned len) {
  skb_check_live(skb, "skb_put");
  if (skb_is_nonlinear(skb)) skb_panic(skb, "skb_put", "nonlinear skb");
  if (len > skb_tailroom(skb)) skb_over_panic(skb, len);
  uint8_t* tmp = skb_tail_pointer(skb);
  skb->tail += len;
  skb->len += len;
  return tmp;
}
inline uint8_t* skb_put_data(SkBuff* skb, const void* from, unsigned len) {
  uint8_t* tmp = skb_put(skb, len);
  if (len != 0) std::memcpy(tmp, from, len);
  return tmp;
}
inline uint8_t* skb_put_zero(SkBuff* skb, unsigned len) {
  uint8_t* tmp = skb_put(skb, len);
  if (len != 0) std::memset(tmp, 0, len);
  return tmp;
}

// Extends the data at the front (a header); returns the new data pointer.
inline uint8_t* skb_push(SkBuff* skb, unsigned len) {
  skb_check_live(skb, "skb_push");
  if (len > skb_headroom(skb)) skb_under_panic(skb, len);
  skb->data -= len;
  skb->len += len;
  return skb->data;
}

// Removes bytes at the front; returns the new data pointer, or nullptr (and
// changes nothing) when the skb holds fewer than `len` bytes.
inline uint8_t* skb_pull(SkBuff* skb, unsigned len) {
  skb_check_live(skb, "skb_pull");
  if (len > skb->len) return nullptr;
  skb->len -= len;
  return skb->data += len;
}
// Whether `len` bytes are in the linear part. Linux would pull them from
// the frags; here every header a path reads is built in the head.
inline bool pskb_may_pull(const SkBuff* skb, unsigned len) {
  skb_check_live(skb, "pskb_may_pull");
  return len <= skb_headlen(skb);
}

// Cuts the data to `len` bytes (no-op if already shorter).
inline void skb_trim(SkBuff* skb, unsigned len) {
  skb_check_live(skb, "skb_trim");
  if (skb->len <= len) return;
  if (skb_is_nonlinear(skb)) skb_panic(skb, "skb_trim", "trimming page frags is not modelled");
  skb->len = len;
  skb->tail = static_cast<uint32_t>(skb->data - skb->head) + len;
}
// The nonlinear-aware trim: 0 (frags are never trimmed here).
inline int pskb_trim(SkBuff* skb, unsigned len) {
  skb_trim(skb, len);
  return 0;
}

// Copies `len` bytes from `offset` in the data (the head, then the frags)
// to `to`: 0, or -EFAULT when the range is not inside the data.
int skb_copy_bits(const SkBuff* skb, int offset, void* to, unsigned len);

// ---- Page frags ----

inline uint8_t* skb_frag_address(const SkbFrag& f) {
  return f.page + f.offset;
}
// skb_can_coalesce: the next bytes at `page` + `off` extend frag i - 1.
inline bool skb_can_coalesce(const SkBuff* skb, unsigned i, const uint8_t* page, unsigned off) {
  if (i == 0) return false;
  const SkbFrag& f = skb_shinfo(skb)->frags[i - 1];
  return f.page == page && f.offset + f.size == off;
}
// skb_fill_page_desc: frag i is `size` bytes at `page` + `off` (the caller
// holds the page reference it hands over); nr_frags becomes i + 1.
inline void skb_fill_page_desc(SkBuff* skb, unsigned i, uint8_t* page, unsigned off,
                               unsigned size) {
  skb_shinfo(skb)->frags[i] = SkbFrag{page, off, size};
  skb_shinfo(skb)->nr_frags = static_cast<uint8_t>(i + 1);
}
// skb_len_add: bytes added to the frags count in len, data_len and truesize.
inline void skb_len_add(SkBuff* skb, unsigned delta) {
  skb->len += delta;
  skb->data_len += delta;
  skb->truesize += delta;
}

// Calls f(src, n) for each run of the `len` bytes from `offset` in the
// data, in order: the head's, then each frag's. The range must be inside
// the data.
template <class F>
void skb_for_each_run(const SkBuff* skb, unsigned offset, unsigned len, F&& f) {
  const unsigned headlen = skb_headlen(skb);
  if (offset < headlen) {
    const unsigned n = std::min(len, headlen - offset);
    if (n != 0) f(static_cast<const uint8_t*>(skb->data + offset), n);
    len -= n;
    offset = 0;
  } else {
    offset -= headlen;
  }
  const SkbSharedInfo* shinfo = skb_shinfo(skb);
  for (unsigned i = 0; i < shinfo->nr_frags && len != 0; ++i) {
    const SkbFrag& f_i = shinfo->frags[i];
    if (offset >= f_i.size) {
      offset -= f_i.size;
      continue;
    }
    const unsigned n = std::min(len, f_i.size - offset);
    f(static_cast<const uint8_t*>(skb_frag_address(f_i) + offset), n);
    len -= n;
    offset = 0;
  }
}

// ---- Header marks ----

inline void skb_reset_mac_header(SkBuff* skb) {
  skb->mac_header = static_cast<uint16_t>(skb->data - skb->head);
}
inline void skb_reset_network_header(SkBuff* skb) {
  skb->network_header = static_cast<uint16_t>(skb->data - skb->head);
}
inline void skb_reset_transport_header(SkBuff* skb) {
  skb->transport_header = static_cast<uint16_t>(skb->data - skb->head);
}
inline void skb_set_mac_header(SkBuff* skb, int offset) {
  skb->mac_header = static_cast<uint16_t>(skb->data - skb->head + offset);
}
inline void skb_set_network_header(SkBuff* skb, int offset) {
  skb->network_header = static_cast<uint16_t>(skb->data - skb->head + offset);
}
inline void skb_set_transport_header(SkBuff* skb, int offset) {
  skb->transport_header = static_cast<uint16_t>(skb->data - skb->head + offset);
}
inline bool skb_mac_header_was_set(const SkBuff* skb) {
  return skb->mac_header != kSkbHeaderUnset;
}
inline bool skb_transport_header_was_set(const SkBuff* skb) {
  return skb->transport_header != kSkbHeaderUnset;
}
inline uint8_t* skb_mac_header(const SkBuff* skb) {
  return skb->head + skb->mac_header;
}
inline uint8_t* skb_network_header(const SkBuff* skb) {
  return skb->head + skb->network_header;
}
inline uint8_t* skb_transport_header(const SkBuff* skb) {
  return skb->head + skb->transport_header;
}
inline int skb_network_offset(const SkBuff* skb) {
  return static_cast<int>(skb_network_header(skb) - skb->data);
}
inline int skb_transport_offset(const SkBuff* skb) {
  return static_cast<int>(skb_transport_header(skb) - skb->data);
}
inline unsigned skb_network_header_len(const SkBuff* skb) {
  return static_cast<unsigned>(skb->transport_header - skb->network_header);
}

// ---- Ownership ----

// Detaches the skb from its socket, running the destructor (which uncharges).
inline void skb_orphan(SkBuff* skb) {
  skb_check_live(skb, "skb_orphan");
  if (skb->destructor != nullptr) {
    skb->destructor(skb);
    skb->destructor = nullptr;
    skb->sk = nullptr;
  } else if (skb->sk != nullptr) {
    skb_panic(skb, "skb_orphan", "an owner without a destructor");
  }
}

// ---- Queues ----
//
// One thread runs the simulator, so Linux's locked and unlocked (__skb_*)
// variants are the same functions; they carry the plain names (names with
// a double underscore are reserved in C++).

inline void skb_queue_head_init(SkBuffHead* list) {
  *list = SkBuffHead{};
}
inline uint32_t skb_queue_len(const SkBuffHead* list) {
  return list->qlen;
}
inline bool skb_queue_empty(const SkBuffHead* list) {
  return list->next == nullptr;
}
inline SkBuff* skb_peek(const SkBuffHead* list) {
  return list->next;
}
inline SkBuff* skb_peek_tail(const SkBuffHead* list) {
  return list->prev;
}
inline void skb_queue_tail(SkBuffHead* list, SkBuff* skb) {
  skb_check_live(skb, "skb_queue_tail");
  if (skb->list != nullptr) skb_panic(skb, "skb_queue_tail", "already on a queue");
  skb->list = list;
  skb->next = nullptr;
  skb->prev = list->prev;
  if (list->prev != nullptr) {
    list->prev->next = skb;
  } else {
    list->next = skb;
  }
  list->prev = skb;
  ++list->qlen;
}
inline void skb_queue_head(SkBuffHead* list, SkBuff* skb) {
  skb_check_live(skb, "skb_queue_head");
  if (skb->list != nullptr) skb_panic(skb, "skb_queue_head", "already on a queue");
  skb->list = list;
  skb->prev = nullptr;
  skb->next = list->next;
  if (list->next != nullptr) {
    list->next->prev = skb;
  } else {
    list->prev = skb;
  }
  list->next = skb;
  ++list->qlen;
}
inline void skb_unlink(SkBuff* skb, SkBuffHead* list) {
  if (skb->list != list) skb_panic(skb, "skb_unlink", "not on this queue");
  if (skb->prev != nullptr) {
    skb->prev->next = skb->next;
  } else {
    list->next = skb->next;
  }
  if (skb->next != nullptr) {
    skb->next->prev = skb->prev;
  } else {
    list->prev = skb->prev;
  }
  skb->next = skb->prev = nullptr;
  skb->list = nullptr;
  --list->qlen;
}
inline SkBuff* skb_dequeue(SkBuffHead* list) {
  SkBuff* skb = list->next;
  if (skb != nullptr) skb_unlink(skb, list);
  return skb;
}
// Moves every skb of `list` to the end of `head`, leaving `list` empty. Linux
// relinks the two ends only; here each skb also learns its new queue.
inline void skb_queue_splice_tail_init(SkBuffHead* list, SkBuffHead* head) {
  if (skb_queue_empty(list)) return;
  for (SkBuff* skb = list->next; skb != nullptr; skb = skb->next) skb->list = head;
  list->next->prev = head->prev;
  if (head->prev != nullptr) {
    head->prev->next = list->next;
  } else {
    head->next = list->next;
  }
  head->prev = list->prev;
  head->qlen += list->qlen;
  skb_queue_head_init(list);
}

// ---- The allocator and the operations that allocate or free ----

struct SkbPoolConfig {
  size_t skbs = 8192;         // skbuff_head_cache objects
  size_t small_heads = 8192;  // skb_small_head_cache objects; 0: no such cache (Linux < 6.3)
  // Bytes of one such object (SKB_SMALL_HEAD_CACHE_SIZE, /proc/slabinfo's
  // skbuff_small_head objsize): 640 where MAX_TCP_HEADER is 320 (tunnels
  // configured), 576 where it is 256 (the Linux stack's default,
  // options.h).
  unsigned small_head_size = kSkbSmallHeadCacheSize;
  // kmalloc-512 ... kmalloc-128k objects usable for heads.
  std::array<size_t, kKmallocClasses> kmalloc = {4096, 4096, 4096, 2048, 1024, 256, 128, 64, 64};
  size_t pages = 512;  // 32 KiB pages for frags
};

struct SkbStats {
  uint64_t allocs = 0;          // alloc_skb successes
  uint64_t clones = 0;          // skb_clone successes
  uint64_t copies = 0;          // skb_copy successes
  uint64_t pskb_copies = 0;     // pskb_copy successes
  uint64_t head_expands = 0;    // pskb_expand_head successes (a new head each)
  uint64_t alloc_failures = 0;  // operations refused for want of memory
  uint64_t consumed = 0;        // sk_buffs freed by consume_skb (trace_consume_skb)
  uint64_t dropped = 0;         // sk_buffs freed by kfree_skb (trace_kfree_skb)
  std::array<uint64_t, kSkbDropReasonCount> drops{};  // `dropped`, by reason
  uint64_t bytes_copied = 0;                          // by skb_copy, pskb_copy and pskb_expand_head
  uint64_t large_heads = 0;       // heads above kKmallocMaxCacheSize taken (kmalloc_large)
  uint64_t large_head_frees = 0;  // and freed (free_large_kmalloc)
};

class SkbPool {
 public:
  explicit SkbPool(const SkbPoolConfig& config = SkbPoolConfig{});
  ~SkbPool();
  SkbPool(const SkbPool&) = delete;
  SkbPool& operator=(const SkbPool&) = delete;

  // A linear skb with at least `size` bytes of tailroom (the whole head
  // allocation is usable), no headroom, users == dataref == 1. nullptr if
  // a cache is at its limit or size > kSkbMaxAlloc.
  SkBuff* alloc_skb(unsigned size);

  // A new sk_buff sharing the head: both become cloned, dataref + 1. The
  // clone has no owner (sk, destructor) and its own users == 1.
  SkBuff* skb_clone(SkBuff* skb);
  // A private copy of head and data: same headroom and data, same head size.
  SkBuff* skb_copy(const SkBuff* skb);
  // A private copy of the data, with the same headroom (not its bytes) and a
  // head sized headroom + len; nonlinear data would stay shared.
  SkBuff* pskb_copy(const SkBuff* skb);

  // Moves the data to a new head with `nhead` more bytes before and `ntail`
  // more after, which the skb alone owns (dataref 1, not cloned). The skb
  // must not be shared. truesize grows only for skbs without an owner, so a
  // socket is uncharged what it was charged. 0, or -ENOMEM (skb unchanged).
  int pskb_expand_head(SkBuff* skb, int nhead, int ntail);
  // Makes the header writable with `headroom` bytes before data: expands
  // (headroom rounded up to NET_SKB_PAD) if cloned or short. 0 or -ENOMEM.
  int skb_cow_head(SkBuff* skb, unsigned headroom);
  // Makes the head private if it is shared with a clone. 0 or -ENOMEM.
  int skb_unclone(SkBuff* skb);
  // A reference the caller may modify: the skb itself if not shared, else a
  // clone, the caller's reference to the original being consumed (or, if
  // the clone fails, dropped: nullptr).
  SkBuff* skb_share_check(SkBuff* skb);

  // Drops a reference; the last one frees the sk_buff (running its
  // destructor) and, if no clone shares it, the head. kfree_skb reports a
  // drop with a reason, consume_skb a normal end. nullptr is ignored.
  void kfree_skb(SkBuff* skb) { kfree_skb_reason(skb, SkbDropReason::kNotSpecified); }
  void kfree_skb_reason(SkBuff* skb, SkbDropReason reason);
  void consume_skb(SkBuff* skb) { kfree_skb_reason(skb, SkbDropReason::kConsumed); }
  // Frees every skb of a queue (reason kQueuePurge).
  void skb_queue_purge(SkBuffHead* list);

  // The allocation a head for `size` usable bytes takes (0: too large):
  // kmalloc_reserve's rounding. end = result - 320.
  unsigned head_alloc_size(unsigned size) const;

  KmemCache& skbuff_cache() { return skbs_; }
  const KmemCache& skbuff_cache() const { return skbs_; }
  // nullptr when configured without one.
  KmemCache* small_head_cache() { return small_heads_.get(); }
  const KmemCache* small_head_cache() const { return small_heads_.get(); }
  PagePool& pages() { return pages_; }
  const PagePool& pages() const { return pages_; }
  KmemCache& kmalloc_cache(size_t i) { return *kmalloc_[i]; }
  const KmemCache& kmalloc_cache(size_t i) const { return *kmalloc_[i]; }
  // The cache a head of this allocation size comes from (nullptr: none).
  KmemCache* head_cache(unsigned alloc_size);

  // A live sk_buff of this pool (not freed, not a foreign pointer).
  bool is_live(const SkBuff* skb) const { return skbs_.is_live(skb); }
  size_t heads_in_use() const;
  // Nothing allocated: every cache back to 0 in use.
  bool idle() const {
    return skbs_.stats().in_use == 0 && heads_in_use() == 0 && pages_.in_use() == 0;
  }
  const SkbStats& stats() const { return stats_; }

 private:
  SkBuff* alloc(unsigned size);
  uint8_t* kmalloc_reserve(unsigned* size);
  void free_head(uint8_t* head, unsigned end);
  SkBuff* new_skb();
  static void init_head(SkBuff* skb, uint8_t* data, unsigned alloc_size);
  void release_data(SkBuff* skb);
  void check(const SkBuff* skb, const char* fn) const;

  KmemCache skbs_;
  std::unique_ptr<KmemCache> small_heads_;
  unsigned small_head_size_ = kSkbSmallHeadCacheSize;  // its objects' bytes
  std::array<std::unique_ptr<KmemCache>, kKmallocClasses> kmalloc_;
  PagePool pages_;
  SkbStats stats_;
};

}  // namespace simloop::lnx
