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

#include "measure/native.h"

namespace simloop::measure {

namespace native_detail {
using Clock = std::chrono::steady_clock;
constexpr uint16_t kTtcpPort = 5001;  // ttcp's default port
constexpr int kSentinelLen = 4;       // ttcp's start/end marker datagrams
}  // namespace native_detail

// One run: a fresh pool and stack, a start sentinel, warm-up, the timed
// packets, an end sentinel.
template <class P>
NativeResult run_native_loop(const NativeOptions& opt, P& probe, int repeat) {
  using namespace native_detail;
  net::MbufPool pool;
  net::StackOptions so = opt.stack;
  if (opt.dest == Dest::self) so.useloopback = false;
  net::Stack<P> st(pool, probe, so);
  const int rx = st.socket();
  const int tx = st.socket();
  st.bind(rx, 0, kTtcpPort);
  const uint32_t dst = dest_addr(opt.dest);

  std::vector<uint8_t> buf(static_cast<size_t>(std::max(opt.payload, kSentinelLen)));
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<uint8_t>(i * 7 + 1);
  std::vector<uint8_t> rbuf(65536);

  NativeResult r;
  r.repeat = repeat;
  // Everything a packet leaves behind runs before the next send: input,
  // receive, transmit completion. That is the whole path per packet.
  auto service = [&] {
    st.netisr_run();
    int got = 0;
    while (st.recvfrom(rx, rbuf.data(), static_cast<int>(rbuf.size()), &got) == 0) {
    }
    st.nic_txeof();
  };
  // Like ttcp: on ENOBUFS, let the queues drain and try again.
  auto send = [&](int len) -> int {
    int err = st.sendto(tx, buf.data(), len, dst, kTtcpPort);
    for (int tries = 0; err == ENOBUFS && tries < 1000; ++tries) {
      ++r.enobufs_retries;
      service();
      err = st.sendto(tx, buf.data(), len, dst, kTtcpPort);
    }
    service();
    return err;
  };

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
  if (opt.dest == Dest::wire) {
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
