// The native harness's sender loop, for any probe: timed with NullProbe,
// split by stage with StageTimer, and followed by the I-cache model's code
// tracer when the model is checked against the harness binary.
#pragma once

#include <time.h>

#include <chrono>
#include <utility>

#include "sim/stack/workload/driver.h"
#include "sim/tools/measure/native.h"

namespace simloop::measure {

// This thread's CPU time so far, in ns. (Here, not in kernel.h: the loop's
// header is compiled alone into the harness and test programs.)
inline int64_t loop_thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// One run: a fresh pool and stack, driven as every native run is
// (drive_options: a start sentinel, warm-up, the timed packets, an end
// sentinel).
// Frames and bytes the stack has put on its Ethernet ring so far.
template <class S>
std::pair<uint64_t, uint64_t> ring_frames(const S& st) {
  if constexpr (requires { st.ether_if(); })
    return {st.ether_if().opackets, st.ether_if().obytes};
  else
    return {st.eth0().tx_packets, st.eth0().tx_bytes};
}

// On stack `S` (the native harness's unless said), with its options `so`.
template <class P, class S = stacks::HarnessKind::Stack<P>>
NativeResult run_native_loop(const NativeOptions& opt, P& probe, int repeat,
                             const typename S::Options& so) {
  using Clock = std::chrono::steady_clock;
  workload::Driver<P, S> drv(probe, drive_options(opt), so);
  auto& st = drv.stack();

  NativeResult r;
  r.repeat = repeat;
  // Counts ttcp's retries after ENOBUFS.
  struct Retries : workload::NoHooks {
    int64_t* n;
    void retry() { ++*n; }
  } retries{{}, &r.enobufs_retries};

  if (r.fault = drv.start(retries); !r.fault.empty()) return r;
  const auto before = st.counters();
  const auto [ring_before, ring_bytes_before] = ring_frames(st);
  const bool timed_by_duration = opt.duration_s > 0;
  const int64_t c0 = loop_thread_cpu_ns();
  const auto t0 = Clock::now();
  auto deadline = t0 + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(opt.duration_s));
  int64_t n = 0;
  workload::Step last;
  while (timed_by_duration ? true : n < opt.packets) {
    last = drv.send(retries);
    if (!last.ok()) break;
    ++n;
    if (timed_by_duration && (n & 1023) == 0 && Clock::now() >= deadline) break;
  }
  const auto t1 = Clock::now();
  r.cpu_s = static_cast<double>(loop_thread_cpu_ns() - c0) * 1e-9;
  r.packets = n * drv.segments();  // datagrams: a UDP GSO send carries several
  r.elapsed_s = std::chrono::duration<double>(t1 - t0).count();
  const auto& after = st.counters();
  if (opt.path.dest == Dest::wire) {
    const auto [frames, bytes] = ring_frames(st);
    r.delivered = static_cast<int64_t>(frames - ring_before);
    r.delivered_bytes = static_cast<int64_t>(bytes - ring_bytes_before);
  } else {
    r.delivered = static_cast<int64_t>(after.delivered - before.delivered);
    r.delivered_bytes = static_cast<int64_t>(after.delivered_bytes - before.delivered_bytes);
  }
  for (size_t d = 0; d < net::kDropCount; ++d) r.drops[d] = after.drops[d] - before.drops[d];
  r.fault = drv.why(last);
  drv.finish(retries);  // the end sentinel, unless the run stopped
  r.total_sent = static_cast<int64_t>(st.counters().sent);
  return r;
}
template <class P>
NativeResult run_native_loop(const NativeOptions& opt, P& probe, int repeat) {
  return run_native_loop<P>(opt, probe, repeat, opt.stack);
}

}  // namespace simloop::measure
