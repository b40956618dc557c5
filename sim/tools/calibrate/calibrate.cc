#include "sim/tools/calibrate/calibrate.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <vector>

#include "models/cycle_account.h"
#include "sim/config/experiment.h"
#include "sim/stack/harness.h"
#include "sim/stack/workload/driver.h"
#include "sim/tools/calibrate/calibrate_detail.h"
#include "sim/tools/measure/native.h"

// The real stack driven for calibration: the native model's features (each
// cost's count per packet, by function), and the bytes a path copies. The
// stack is the native harness's (stacks::HarnessKind), the one whose rows
// `measure native` writes.
namespace simloop::measure {

using detail::key_default;
using detail::path_of;

// ---------------------------------------------------------------- native features

// Every cost key but the copy to a user's extra and the L1 data cache's:
// the native harness's stack copies out as it copies in
// (CopyKind::uiomove), and its fit models no cache of copies (its largest
// datagram, 9188 B, fits L1 three times over on every host measured), so
// nothing determines them; and fits saved before they existed keep their
// values' order.
std::vector<std::string> native_params() {
  std::vector<std::string> keys = config::cost_keys();
  std::erase(keys, std::string("machine.copy.to_user_extra_cycles_per_byte"));
  std::erase(keys, std::string("machine.copy.l1d_miss_extra_cycles_per_byte"));
  return keys;
}

namespace {

// The timing model's price of what the stack did under several sets of
// costs at once (an account each), attributed to the stack function running
// when it was charged (the innermost one; kOutside for the sender's own
// loop), with the calls and child calls of each function. Nothing is priced
// or counted while `pricing` is off.
class Attributing : public net::NullProbe {
 public:
  // One account per experiment's costs; `xs` must outlive the probe.
  explicit Attributing(const std::vector<config::Experiment>& xs)
      : by_fn(xs.size()), last_(xs.size(), 0.0) {
    acc_.reserve(xs.size());
    for (const auto& x : xs) {
      acc_.emplace_back(x.machine, x.stack);
      loop_cycles_.push_back(x.machine.user_loop_cycles);
    }
  }
  static constexpr size_t kOutside = net::kMaxFns;
  void enter(net::FnId fn) { open(fn, net::Call::work); }
  // Timed like any call (the clock reads are there), priced as idle.
  void enter_idle(net::FnId fn) { open(fn, net::Call::idle); }
  void leave(net::FnId fn) {
    if (!pricing) return;
    for (auto& a : acc_) a.leave(fn);
    if (depth_ > 0) --depth_;
  }
  void copy(net::CopyKind k, const void* s, const void* d, size_t len) {
    each([&](models::CycleAccount& a) { a.copy(k, s, d, len); });
  }
  void cksum(const void* p, size_t len) {
    each([&](models::CycleAccount& a) { a.cksum(p, len); });
  }
  void alloc(net::Obj o, const void* p) {
    each([&](models::CycleAccount& a) { a.alloc(o, p); });
  }
  void free(net::Obj o, const void* p) {
    each([&](models::CycleAccount& a) { a.free(o, p); });
  }
  void header(net::FnId fn, const void* p, unsigned size, bool w) {
    each([&](models::CycleAccount& a) { a.header(fn, p, size, w); });
  }
  // The sender's loop itself (outside every function), before each send.
  void outside() {
    if (!pricing) return;
    for (size_t j = 0; j < acc_.size(); ++j) by_fn[j][kOutside] += loop_cycles_[j];
  }
  // Starts the count over.
  void reset() {
    for (auto& b : by_fn) b = {};
    calls = {};
    child_calls = {};
    for (size_t j = 0; j < acc_.size(); ++j) last_[j] = models::total(acc_[j].pending());
  }

  bool pricing = true;
  std::vector<std::array<double, net::kMaxFns + 1>> by_fn;  // per account
  std::array<double, net::kMaxFns> calls{}, child_calls{};

 private:
  void open(net::FnId fn, net::Call call) {
    if (!pricing) return;
    if (depth_ > 0) ++child_calls[static_cast<size_t>(top())];
    if (depth_ < stack_.size()) stack_[depth_] = fn;
    ++depth_;
    ++calls[static_cast<size_t>(fn)];
    for (auto& a : acc_) {
      if (call == net::Call::idle)
        a.enter_idle(fn);
      else
        a.enter(fn);
    }
    settle();
  }
  net::FnId top() const { return stack_[std::min(depth_, stack_.size()) - 1]; }
  template <class F>
  void each(F&& event) {
    if (!pricing) return;
    for (auto& a : acc_) event(a);
    settle();
  }
  void settle() {
    const size_t at = depth_ > 0 ? static_cast<size_t>(top()) : kOutside;
    for (size_t j = 0; j < acc_.size(); ++j) {
      const double t = models::total(acc_[j].pending());
      by_fn[j][at] += t - last_[j];
      last_[j] = t;
    }
  }
  std::vector<models::CycleAccount> acc_;
  std::vector<double> loop_cycles_;
  std::array<net::FnId, 32> stack_{};
  size_t depth_ = 0;
  std::vector<double> last_;
};

// A point as `measure native` measured it (its default warm-up).
NativeOptions native_options(const Point& p) {
  NativeOptions o;
  o.path = path_of(p);
  o.payload = p.payload();
  o.stack.ether_mtu = std::stoi(p.key("ether_mtu", key_default("ether_mtu")));
  o.stack.max_linkhdr = std::stoi(p.key("max_linkhdr", key_default("max_linkhdr")));
  return o;
}

// Charges the sender's own loop, outside every function, before each send.
struct OutsideLoop : workload::NoHooks {
  Attributing& probe;
  void user_loop() { probe.outside(); }
};

// Prices `packets` packets of `p`'s configuration, driven exactly as
// `measure native` drives them (drive_options: the same buffer, sentinels and
// warm-up, which leaves zones and queues in their steady state, with nothing
// serving the netisr its queue full). Only those packets are priced: not the
// warm-up, nor the end sentinel and the stack's teardown, which frees what its
// queues still hold (a full netisr queue when nothing serves it).
void drive(const Point& p, int packets, Attributing& probe) {
  const NativeOptions o = native_options(p);
  workload::Driver<Attributing, stacks::HarnessKind::Stack<Attributing>> drv(
      probe, drive_options(o), o.stack);
  OutsideLoop hooks{{}, probe};
  probe.pricing = false;
  if (auto why = drv.start(hooks); !why.empty())
    throw InputError(fmt::format("{}: {}", p.label(), why));
  probe.pricing = true;
  probe.reset();
  for (int i = 0; i < packets; ++i)
    if (const workload::Step s = drv.send(hooks); !s.ok())
      throw InputError(fmt::format("{}: the stack stops: {}", p.label(), drv.why(s)));
  probe.pricing = false;
  drv.finish(hooks);
}

}  // namespace

Features native_features(const Point& p, int packets) {
  const auto params = native_params();
  Features f;
  f.total.assign(params.size(), 0);
  const double per = 1.0 / packets;
  // One set of costs per parameter: it 1, every other 0; all priced in one run.
  std::vector<config::Experiment> xs(params.size());
  for (size_t j = 0; j < params.size(); ++j) {
    for (const auto& k : params) config::set_number(xs[j], k, 0);
    config::set_number(xs[j], params[j], 1);
  }
  Attributing probe(xs);
  drive(p, packets, probe);
  for (size_t j = 0; j < params.size(); ++j) {
    // The stack's functions in table order, then the loop outside them.
    const net::FnTable& fns = *xs[j].stack.fns;
    for (size_t i = 0; i <= fns.size(); ++i) {
      const size_t fn = i < fns.size() ? i : Attributing::kOutside;
      const double v = probe.by_fn[j][fn] * per;
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

// A point's path: its columns, each at the path's default where it has none.
workload::Path path_of(const Point& p) {
  // The path's fields by the columns that hold them.
  static constexpr std::pair<const char*, std::string_view> kColumns[] = {
      {"dest", "dest"},       {"align", "align"},
      {"copy", "copy"},       {"misalign", "sockaddr_misalign"},
      {"service", "service"}, {"buffer_misalign", "buffer_misalign"}};
  workload::Path path;
  try {
    for (const auto& [column, field] : kColumns)
      if (const auto it = p.keys.find(column); it != p.keys.end()) path.set(field, it->second);
  } catch (const workload::PathError& e) {
    throw InputError(fmt::format("{}: {}", p.label(), e.what()));
  }
  return path;
}

// Bytes the simulated stack copies per byte of payload on `dest`'s path
// with a receiver where there is one: the slope between two payloads.
double copied_bytes_per_payload_byte(const std::string& dest) {
  auto copied = [&](int payload) {
    workload::Path path;
    path.set("dest", dest);
    net::CountingProbe probe;
    using Stack = stacks::HarnessKind::Stack<net::CountingProbe>;
    workload::Driver<net::CountingProbe, Stack> drv(probe, {.path = path, .payload = payload}, {});
    if (const workload::Step s = drv.send(); !s.ok())
      throw std::runtime_error("counting copies: " + drv.why(s));
    uint64_t n = 0;
    for (uint64_t b : probe.copied_bytes) n += b;
    return static_cast<double>(n);
  };
  return (copied(1100) - copied(100)) / 1000.0;
}

}  // namespace detail

}  // namespace simloop::measure
