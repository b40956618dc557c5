#include "measure/native.h"

#include <fmt/format.h>

#include <chrono>
#include <vector>

#include "measure/stage_timer.h"

namespace simloop::measure {

namespace {

using Clock = std::chrono::steady_clock;
constexpr uint16_t kTtcpPort = 5001;  // ttcp's default port
constexpr int kSentinelLen = 4;       // ttcp's start/end marker datagrams

template <class P>
NativeResult run_once(const NativeOptions& opt, P& probe, int repeat) {
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

}  // namespace

uint32_t dest_addr(Dest d) {
  switch (d) {
    case Dest::loopback:
      return net::kLoopAddr;
    case Dest::broadcast:
      return net::kBroadcastAddr;
    case Dest::wire:
      return net::kPeerAddr;
    case Dest::self:
      return net::kHostAddr;
  }
  return net::kLoopAddr;
}

std::string_view dest_name(Dest d) {
  switch (d) {
    case Dest::loopback:
      return "loopback";
    case Dest::broadcast:
      return "broadcast";
    case Dest::wire:
      return "wire";
    case Dest::self:
      return "self";
  }
  return "?";
}

std::optional<Dest> parse_dest(std::string_view s) {
  for (auto d : {Dest::loopback, Dest::broadcast, Dest::wire, Dest::self})
    if (s == dest_name(d)) return d;
  return std::nullopt;
}

std::vector<NativeResult> run_native(const NativeOptions& opt) {
  std::vector<NativeResult> out;
  for (int i = 0; i < opt.repeats; ++i) {
    net::NullProbe probe;
    out.push_back(run_once(opt, probe, i));
    if (opt.split) {
      // A second, instrumented run: the probe's clock reads slow it down,
      // so it gives shares of time, not the rate.
      StageTimer timer;
      auto timed = run_once(opt, timer, i);
      const double per = timed.total_sent > 0 ? 1.0 / static_cast<double>(timed.total_sent) : 0;
      for (const auto& [name, ns] : timer.self_ns())
        out.back().stage_ns.emplace_back(name, ns * per);
    }
  }
  return out;
}

report::Row native_row(const NativeOptions& opt, const NativeResult& r) {
  report::Row row;
  row.set("source", std::string("native"))
      .set("repeat", int64_t{r.repeat})
      .set("payload", int64_t{opt.payload})
      .set("dest", std::string(dest_name(opt.dest)))
      .set("align", std::string(net::align_policy_name(opt.stack.align)))
      .set("copy", std::string(net::loop_copy_name(opt.stack.loop_copy)))
      .set("packets", r.packets)
      .set("elapsed_s", r.elapsed_s)
      .set("kpps", r.kpps())
      .set("ns_per_packet", r.ns_per_packet())
      .set("delivered", r.delivered)
      .set("delivered_bytes", r.delivered_bytes)
      .set("enobufs_retries", r.enobufs_retries);
  for (size_t d = 0; d < net::kDropCount; ++d)
    row.set(fmt::format("drop_{}", net::drop_name(static_cast<net::Drop>(d))),
            static_cast<int64_t>(r.drops[d]));
  row.set("fault", r.fault);
  for (const auto& [name, ns] : r.stage_ns) row.set("stage_" + name + "_ns", ns);
  return row;
}

}  // namespace simloop::measure
