// The native harness's sender loop, for any probe: timed with NullProbe,
// split by stage with StageTimer, and followed by the I-cache model's code
// tracer when the model is checked against the harness binary.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

#include "sim/stack/workload/ttcp.h"
#include "sim/tools/measure/native.h"

namespace simloop::measure {

namespace native_detail {
using Clock = std::chrono::steady_clock;
constexpr int kSentinelLen = 4;  // ttcp's start/end marker datagrams
}  // namespace native_detail

// One run: a fresh pool and stack, a start sentinel, warm-up, the timed
// packets, an end sentinel.
template <class P>
NativeResult run_native_loop(const NativeOptions& opt, P& probe, int repeat) {
  using namespace native_detail;
  workload::TtcpLoop<P> loop(probe, {opt.path}, opt.stack);
  auto& st = loop.stack();

  // The storage starts a page: the payload starts `buffer_misalign` bytes
  // past an 8-byte boundary.
  const auto skip = static_cast<size_t>(opt.path.buffer_misalign);
  workload::PageBytes storage(skip + static_cast<size_t>(std::max(opt.payload, kSentinelLen)));
  uint8_t* const buf = storage.data() + skip;
  for (size_t i = 0; i + skip < storage.size(); ++i) buf[i] = static_cast<uint8_t>(i * 7 + 1);

  NativeResult r;
  r.repeat = repeat;
  // Counts ttcp's retries after ENOBUFS.
  struct Retries : workload::NoHooks {
    int64_t* n;
    void retry() { ++*n; }
  } retries{{}, &r.enobufs_retries};
  auto send = [&](int len) { return loop.send(buf, len, retries).err; };

  if (int err = send(kSentinelLen); err != 0) {
    r.fault = fmt::format("start sentinel failed: {}", std::strerror(err));
    return r;
  }
  for (int64_t i = 0; i < opt.warmup && !st.fault(); ++i) send(opt.payload);
  const auto before = st.counters();
  const uint64_t ring_before = st.ether_if().opackets, ring_bytes_before = st.ether_if().obytes;
  const bool timed_by_duration = opt.duration_s > 0;
  const auto t0 = Clock::now();
  auto deadline = t0 + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(opt.duration_s));
  int64_t n = 0;
  int err = 0;
  while (timed_by_duration ? true : n < opt.packets) {
    err = send(opt.payload);
    if (err != 0 || st.fault()) break;
    ++n;
    if (timed_by_duration && (n & 1023) == 0 && Clock::now() >= deadline) break;
  }
  const auto t1 = Clock::now();
  r.packets = n;
  r.elapsed_s = std::chrono::duration<double>(t1 - t0).count();
  const auto& after = st.counters();
  if (opt.path.dest == Dest::wire) {
    r.delivered = static_cast<int64_t>(st.ether_if().opackets - ring_before);
    r.delivered_bytes = static_cast<int64_t>(st.ether_if().obytes - ring_bytes_before);
  } else {
    r.delivered = static_cast<int64_t>(after.delivered - before.delivered);
    r.delivered_bytes = static_cast<int64_t>(after.delivered_bytes - before.delivered_bytes);
  }
  for (size_t d = 0; d < net::kDropCount; ++d) r.drops[d] = after.drops[d] - before.drops[d];
  if (st.fault())
    r.fault = st.fault()->describe();
  else if (err != 0)
    r.fault = fmt::format("sendto failed: {}", std::strerror(err));
  else
    send(kSentinelLen);  // end sentinel
  r.total_sent = static_cast<int64_t>(st.counters().sent);
  return r;
}

}  // namespace simloop::measure
