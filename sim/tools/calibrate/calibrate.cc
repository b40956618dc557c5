#include "sim/tools/calibrate/calibrate.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <vector>

#include "models/cycle_account.h"
#include "sim/config/experiment.h"
#include "sim/stack/bsd/stack.h"
#include "sim/stack/workload/ttcp.h"
#include "sim/tools/calibrate/calibrate_detail.h"
#include "sim/tools/measure/native.h"

// The real stack driven for calibration: the native model's features (each
// cost's count per packet, by function), and the bytes a path copies.
namespace simloop::measure {

using detail::key_default;

// ---------------------------------------------------------------- native features

std::vector<std::string> native_params() {
  return config::cost_keys();
}

namespace {

// The timing model's price of what the stack did, attributed to the stack
// function running when it was charged (the innermost one; kOutside for
// the sender's own loop), with the calls and child calls of each function.
class Attributing : public net::NullProbe {
 public:
  Attributing(const models::MachineCosts& m, const models::StackCosts& s) : acc_(m, s) {}
  static constexpr size_t kOutside = net::kMaxFns;
  void enter(net::FnId fn) {
    if (depth_ > 0) ++child_calls[static_cast<size_t>(top())];
    if (depth_ < stack_.size()) stack_[depth_] = fn;
    ++depth_;
    ++calls[static_cast<size_t>(fn)];
    acc_.enter(fn);
    settle();
  }
  void leave(net::FnId fn) {
    acc_.leave(fn);
    if (depth_ > 0) --depth_;
  }
  void copy(net::CopyKind k, const void* s, const void* d, size_t len) {
    acc_.copy(k, s, d, len);
    settle();
  }
  void cksum(const void* a, size_t len) {
    acc_.cksum(a, len);
    settle();
  }
  void alloc(net::Obj o, const void* a) {
    acc_.alloc(o, a);
    settle();
  }
  void free(net::Obj o, const void* a) {
    acc_.free(o, a);
    settle();
  }
  void header(net::FnId fn, const void* a, unsigned size, bool w) {
    acc_.header(fn, a, size, w);
    settle();
  }
  // Charged by the sender's loop itself (outside every function).
  void outside(double cycles) { by_fn[kOutside] += cycles; }
  void reset() {
    by_fn = {};
    calls = {};
    child_calls = {};
    last_ = models::total(acc_.pending());
  }

  std::array<double, net::kMaxFns + 1> by_fn{};
  std::array<double, net::kMaxFns> calls{}, child_calls{};

 private:
  net::FnId top() const { return stack_[std::min(depth_, stack_.size()) - 1]; }
  void settle() {
    const double t = models::total(acc_.pending());
    by_fn[depth_ > 0 ? static_cast<size_t>(top()) : kOutside] += t - last_;
    last_ = t;
  }
  models::CycleAccount acc_;
  std::array<net::FnId, 32> stack_{};
  size_t depth_ = 0;
  double last_ = 0;
};

struct PathOf {
  Dest dest;
  net::StackOptions so;
  workload::Service service = workload::Service::drained;
  int buffer_misalign = 0;
};

PathOf path_of(const Point& p) {
  const auto dest = parse_dest(p.key("dest", "loopback"));
  const auto align = net::parse_align_policy(p.key("align", "none"));
  const auto copy = net::parse_loop_copy(p.key("copy", "m_copy"));
  if (!dest || !align || !copy) throw InputError("unknown dest, align or copy in " + p.label());
  PathOf r{*dest, {}};
  r.so.align = *align;
  r.so.loop_copy = *copy;
  r.so.sockaddr_misalign = std::stoi(p.key("misalign", key_default("misalign")));
  if (p.key("service", key_default("service")) == "send-only")
    r.service = workload::Service::send_only;
  r.buffer_misalign = std::stoi(p.key("buffer_misalign", key_default("buffer_misalign")));
  return r;
}

// Charges the sender's own loop, outside every function, before each send.
struct OutsideLoop : workload::NoHooks {
  Attributing& probe;
  double cycles;
  void user_loop() { probe.outside(cycles); }
};

// Runs `packets` packets of `p`'s configuration, driven exactly as
// `measure native` drives them (the same ttcp loop), under the given costs.
void drive(const Point& p, double loop_cycles, int packets, Attributing& probe) {
  const PathOf path = path_of(p);
  auto loop = std::make_unique<workload::TtcpLoop<Attributing>>(
      probe, workload::TtcpOptions{path.dest, path.service}, path.so);
  const auto& st = loop->stack();
  // Sent from `buffer_misalign` bytes past an 8-byte boundary, as measured.
  const auto skip = static_cast<size_t>(path.buffer_misalign);
  workload::PageBytes buf(skip + static_cast<size_t>(std::max(p.payload(), 1)), 0x5a);
  OutsideLoop hooks{{}, probe, loop_cycles};
  auto send = [&] { return loop->send(buf.data() + skip, p.payload(), hooks).err; };
  // Zones and queues in their steady state (with nothing serving the
  // netisr, its queue full).
  const int warmup =
      64 + (path.service == workload::Service::send_only ? path.so.netisr_maxlen : 0);
  for (int i = 0; i < warmup; ++i) send();
  probe.reset();
  for (int i = 0; i < packets && !st.fault(); ++i)
    if (int err = send(); err != 0)
      throw InputError(
          fmt::format("{}: sendto fails in the stack: {}", p.label(), std::strerror(err)));
  if (st.fault()) throw InputError(p.label() + ": the stack faulted: " + st.fault()->describe());
  // The stack's teardown frees what its queues still hold (a full netisr
  // queue when nothing serves it): no packet's cost.
  const auto by_fn = probe.by_fn;
  const auto calls = probe.calls, child_calls = probe.child_calls;
  loop.reset();
  probe.by_fn = by_fn, probe.calls = calls, probe.child_calls = child_calls;
}

}  // namespace

Features native_features(const Point& p, int packets) {
  const auto params = native_params();
  Features f;
  f.total.assign(params.size(), 0);
  const double per = 1.0 / packets;
  for (size_t j = 0; j < params.size(); ++j) {
    config::Experiment x;
    for (const auto& k : params) config::set_number(x, k, 0);
    config::set_number(x, params[j], 1);
    Attributing probe(x.machine, x.stack);
    drive(p, x.machine.user_loop_cycles, packets, probe);
    // The stack's functions in table order, then the loop outside them.
    const net::FnTable& fns = *x.stack.fns;
    for (size_t i = 0; i <= fns.size(); ++i) {
      const size_t fn = i < fns.size() ? i : Attributing::kOutside;
      const double v = probe.by_fn[fn] * per;
      f.total[j] += v;
      if (fn == Attributing::kOutside) continue;
      const std::string name(fns.name(net::fn_at(fn)));
      if (j == 0) {
        f.calls[name] = probe.calls[fn] * per;
        f.child_calls[name] = probe.child_calls[fn] * per;
      }
      if (probe.calls[fn] == 0) continue;
      auto& row = f.split[name];
      row.resize(params.size(), 0);
      row[j] = v;
    }
  }
  return f;
}

// ---------------------------------------------------------------- copies

namespace detail {

// Bytes the simulated stack copies per byte of payload on `dest`'s path
// with a receiver where there is one: the slope between two payloads.
double copied_bytes_per_payload_byte(const std::string& dest) {
  auto copied = [&](int payload) {
    Point p;
    p.keys = {{"payload", std::to_string(payload)}, {"dest", dest}};
    const PathOf path = path_of(p);
    net::CountingProbe probe;
    workload::TtcpLoop<net::CountingProbe> loop(probe, {path.dest, workload::Service::drained},
                                                path.so);
    std::vector<uint8_t> buf(static_cast<size_t>(payload));
    if (loop.send(buf.data(), payload).err != 0)
      throw std::runtime_error("counting copies: sendto failed");
    uint64_t n = 0;
    for (uint64_t b : probe.copied_bytes) n += b;
    return static_cast<double>(n);
  };
  return (copied(1100) - copied(100)) / 1000.0;
}

}  // namespace detail

}  // namespace simloop::measure
