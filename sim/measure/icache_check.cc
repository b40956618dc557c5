#include "measure/icache_check.h"

#include <stdexcept>

#include "measure/native_loop.h"
#include "net/stack_impl.h"

namespace simloop::measure {

namespace {

// Notes code only for the chosen window of sends: the harness's loop calls
// sendto once per packet (its sentinels included), then everything the
// packet leaves behind, so a packet's code runs from one top-level sendto to
// the next.
struct WindowTracer : models::CodeTracer {
  std::vector<uint8_t>* out = nullptr;
  int64_t sends = 0, first = 0, last = 0;  // record sends [first, last]
  void enter(net::Fn fn) {
    if (fn == net::Fn::sendto && depth == 0) {
      ++sends;
      trace = sends >= first && sends <= last ? out : nullptr;
    }
    CodeTracer::enter(fn);
  }
};

}  // namespace

models::PathTrace harness_trace(const NativeOptions& opt, int packets) {
  if (packets < 1) throw std::invalid_argument("harness_trace: packets must be at least 1");
  NativeOptions o = opt;
  o.packets = packets;
  o.duration_s = 0;
  models::PathTrace t;
  WindowTracer tracer;
  tracer.out = &t.code;
  // Send 1 is the start sentinel; then the warm-up; then the timed packets.
  tracer.first = 1 + o.warmup + 1;
  tracer.last = 1 + o.warmup + packets;
  const NativeResult r = run_native_loop(o, tracer, 0);
  if (!r.fault.empty()) throw std::runtime_error("the harness's path faulted: " + r.fault);
  t.packets = packets;
  return t;
}

double predict_i1_misses(const models::LinkedLayout& linked, const models::CacheGeometry& i1,
                         const models::PathTrace& trace) {
  models::ICacheConfig c;
  c.l1 = i1;
  c.next_line_prefetch = false;
  c.l2_enabled = false;
  return models::evaluate(linked, c, trace).l1_misses_per_packet;
}

RankAgreement rank_agreement(const std::vector<double>& measured,
                             const std::vector<double>& predicted) {
  if (measured.size() != predicted.size())
    throw std::invalid_argument("rank_agreement: lists of different lengths");
  RankAgreement r;
  const size_t n = measured.size();
  if (n < 2) return r;
  double concordant = 0, discordant = 0;
  for (size_t i = 0; i < n; ++i)
    for (size_t j = i + 1; j < n; ++j) {
      const double a = measured[j] - measured[i], b = predicted[j] - predicted[i];
      if (a * b > 0) ++concordant;
      if (a * b < 0) {
        ++discordant;
        r.same_order = false;
      }
    }
  r.kendall_tau = (concordant - discordant) / (static_cast<double>(n * (n - 1)) / 2);
  return r;
}

}  // namespace simloop::measure
