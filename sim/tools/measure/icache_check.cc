#include "sim/tools/measure/icache_check.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "sim/stack/harness.h"
#include "sim/tools/measure/native_loop.h"

namespace simloop::measure {

namespace {

// Notes code only for the chosen window of sends: the harness's loop calls
// sendto once per packet (its sentinels included), then everything the
// packet leaves behind, so a packet's code runs from one top-level sendto to
// the next, and the loop's own code (Code::user_loop) runs before it.
struct WindowTracer : models::CodeTracer {
  std::vector<uint8_t>* out = nullptr;
  int64_t sends = 0, first = 0, last = 0;  // record sends [first, last]
  // The stack's send system call: where a packet's code starts.
  net::FnId syscall = *stacks::HarnessKind::fns().with_role(net::FnRole::syscall);
  void enter(net::FnId fn) {
    if (fn == syscall && depth == 0) {
      ++sends;
      trace = sends >= first && sends <= last ? out : nullptr;
      run(models::Code::user_loop);
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
  t.path = o.path;
  t.payload = o.payload;
  t.fns = &stacks::HarnessKind::fns();
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

models::PathTrace program_trace(int iterations) {
  models::PathTrace t;
  t.fns = &stacks::HarnessKind::fns();
  t.code.assign(static_cast<size_t>(iterations), static_cast<uint8_t>(models::Code::user_loop));
  t.packets = iterations;
  return t;
}

Prediction predict_misses(const models::LinkedLayout& linked, const models::CacheGeometry& i1,
                          const models::PathTrace& trace, models::FetchMode fetch,
                          const models::CacheGeometry* ll) {
  models::ICacheConfig c;
  c.l1 = i1;
  c.next_line_prefetch = false;
  c.l2_enabled = ll != nullptr;
  if (ll != nullptr) {
    c.l2 = *ll;
    c.l2_exclusive = false;
    c.l2_back_invalidate = false;
  }
  models::EvalOptions opt;
  opt.fetch = fetch;
  const auto e = models::evaluate(linked, c, trace, opt);
  return {e.l1_misses_per_packet, e.l2_misses_per_packet};
}

double predict_i1_misses(const models::LinkedLayout& linked, const models::CacheGeometry& i1,
                         const models::PathTrace& trace, models::FetchMode fetch) {
  return predict_misses(linked, i1, trace, fetch).i1_misses;
}

RankAgreement rank_agreement(const std::vector<double>& measured,
                             const std::vector<double>& predicted, double noise) {
  if (measured.size() != predicted.size())
    throw std::invalid_argument("rank_agreement: lists of different lengths");
  RankAgreement r;
  const size_t n = measured.size();
  auto sign = [noise](double d) { return d > noise ? 1 : d < -noise ? -1 : 0; };
  for (size_t i = 0; i < n; ++i)
    for (size_t j = i + 1; j < n; ++j) {
      ++r.pairs;
      const int a = sign(measured[j] - measured[i]), b = sign(predicted[j] - predicted[i]);
      if (a == 0 && b == 0)
        ++r.tied_both;
      else if (a == 0)
        ++r.tied_measured;
      else if (b == 0)
        ++r.tied_predicted;
      else if (a == b)
        ++r.concordant;
      else
        ++r.discordant;
    }
  const double n0 = r.pairs;
  const double n1 = r.tied_measured + r.tied_both, n2 = r.tied_predicted + r.tied_both;
  const double denom = std::sqrt((n0 - n1) * (n0 - n2));
  r.kendall_tau =
      denom > 0 ? (r.concordant - r.discordant) / denom : std::numeric_limits<double>::quiet_NaN();
  r.meaningful = n0 - n1 > 0;
  r.same_order = r.meaningful && r.discordant == 0 && r.tied_measured == 0 && r.tied_predicted == 0;
  return r;
}

namespace {
double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 == 1 ? v[m] : (v[m - 1] + v[m]) / 2;
}
double worst(const std::vector<double>& v) {
  double w = 0;
  for (double x : v)
    if (std::abs(x) > std::abs(w)) w = x;
  return w;
}
}  // namespace

MissErrors summarize_errors(const std::vector<double>& measured,
                            const std::vector<double>& predicted, double min_relative) {
  if (measured.size() != predicted.size())
    throw std::invalid_argument("summarize_errors: lists of different lengths");
  std::vector<double> rel, rel_abs, abs_err, abs_abs;
  double signed_sum = 0;
  for (size_t i = 0; i < measured.size(); ++i) {
    const double d = predicted[i] - measured[i];
    signed_sum += d;
    if (measured[i] >= min_relative) {
      rel.push_back(100 * d / measured[i]);
      rel_abs.push_back(std::abs(rel.back()));
    } else {
      abs_err.push_back(d);
      abs_abs.push_back(std::abs(d));
    }
  }
  MissErrors s;
  s.relative_points = static_cast<int>(rel.size());
  s.absolute_points = static_cast<int>(abs_err.size());
  s.median_rel_pct = median(rel_abs);
  s.worst_rel_pct = worst(rel);
  s.median_abs = median(abs_abs);
  s.worst_abs = worst(abs_err);
  if (!measured.empty()) s.mean_signed = signed_sum / static_cast<double>(measured.size());
  return s;
}

}  // namespace simloop::measure
