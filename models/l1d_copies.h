// The L1 data cache as copies see it: which of a copy's bytes are still
// in the cache and which move from further out. A copy reads faster
// from L1 than from L2, and the working set of a datagram's copies (the
// sender's buffer, the socket buffer, the receiver's buffer) outgrows L1
// at payloads of a few tens of kilobytes, so one rate per byte cannot
// price both small and large datagrams.
//
// Both ends of every copy occupy the cache, line by line as the copy runs
// (a source line read, then the destination's written), and a byte of
// either end whose line the cache did not hold is a missed byte: a load
// waits for L2, and a store must first fetch its line from there, both
// over the same path. Set-associative with least-recently-used
// replacement, at the host's geometry (sysfs). Nothing else the stack
// touches is modelled here: headers and allocator state are small beside a
// large datagram, and a small one fits either way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace simloop::models {

class L1dCopies {
 public:
  // Why a geometry cannot be modelled ("" when it can): line_bytes a power
  // of two, ways 1 to 1024, bytes up to 1 GiB and a positive multiple of
  // ways x line_bytes. Allocates nothing.
  static std::string problem(int64_t bytes, int ways, int line_bytes);
  // Throws std::invalid_argument with problem()'s text.
  L1dCopies(int64_t bytes, int ways, int line_bytes);
  // One copy of `len` bytes from `src` to `dst`: touches their lines in
  // the order a forward copy does and returns how many of its bytes, source
  // and destination counted apart (0 to 2 x len), lay in lines the cache
  // did not hold.
  size_t copy(uintptr_t src, uintptr_t dst, size_t len);
  uint64_t lines() const { return lines_; }  // looked up, both ends
  uint64_t misses() const { return misses_; }

 private:
  bool touch(uint64_t line);  // true: a hit
  // The line's set. Where the sets span no more than a 4 KiB page (every
  // L1d measured: 64 sets of 64 B), the set is the line's place in its page,
  // which is the same in every run. Past that the page's number would
  // matter, and where the process's pages land changes from run to run, so
  // pages are numbered in the order copies first touch them (as frames
  // from a fresh allocator), and every run sees the same sets.
  size_t set_of(uint64_t line);
  std::vector<uint64_t> tags_;  // sets_ x ways_, line address + 1 (0: empty), most recent first
  size_t sets_, ways_;
  bool pow2_ = false;      // sets_ is a power of two
  uint64_t set_mask_ = 0;  // then sets_ - 1 (a division saved)
  int shift_;
  bool by_frame_ = false;                         // the sets span more than a page
  std::unordered_map<uint64_t, uint64_t> frame_;  // page -> its number, in order of first touch
  uint64_t lines_ = 0, misses_ = 0;
};

}  // namespace simloop::models
