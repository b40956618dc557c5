#include "sim/tools/advise/layout_advisor.h"

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cmath>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include "models/sender_costs.h"
#include "models/tee.h"
#include "sim/stack/harness.h"
#include "sim/stack/net/inet.h"
#include "sim/stack/workload/driver.h"

template class simloop::stacks::harness::Stack<simloop::models::CodeTracer>;

namespace simloop::models {

stacks::HarnessKind::Options recorded_stack_options(const net::HostOptions& host,
                                                    const stacks::StackOptionSet& own) {
  using K = stacks::HarnessKind;
  return K::options(host, own.get<K::Own>(K::kName));
}

namespace {

// Prices the stack's events like the simulator and notes the code that runs.
struct Recorder {
  using Probe = Tee<CycleAccount&, CodeTracer&>;
  Recorder(const MachineCosts& m, const StackCosts& s) : acct(m, s), probe(acct, code) {}
  CycleAccount acct;
  CodeTracer code;
  Probe probe;
};

struct PathRun {
  double cycles = 0, interrupt_cycles = 0;
  std::vector<uint8_t> trace;
  int trace_packets = 0;
};

// The ttcp loop as the simulator's sender drives it (workload::Driver with
// the same SenderCosts), interrupts included every `ppi` packets (0: none;
// the driver reaps as it queues).
PathRun run_path(const PathSpec& spec, int ppi, int price_packets, int trace_packets) {
  using Driver = workload::Driver<Recorder::Probe, stacks::HarnessKind::Stack<Recorder::Probe>>;
  // Priced as the functions of the stack that runs.
  StackCosts stack_costs = spec.stack;
  stack_costs.fns = &Driver::Stack::fn_table();
  Recorder rec(spec.machine, stack_costs);
  Driver drv(rec.probe, {spec.path, spec.payload, spec.receive}, spec.options);
  auto& stack = drv.stack();
  SenderCosts<Recorder::Probe> costs(rec.probe, spec.machine);
  const bool uses_ring = workload::uses_ring(spec.path.dest);
  PathRun out;
  const int all = price_packets + trace_packets;
  auto priced = [&] {
    const StageCycles c = rec.acct.take();
    out.cycles = total(c);
    out.interrupt_cycles = c[static_cast<size_t>(Stage::interrupt)];
    rec.code.trace = &out.trace;
  };
  for (int n = 0; n < all; ++n) {
    if (n == price_packets) priced();
    // Without interrupts the driver reaps as it queues (thread context).
    if (uses_ring && ppi == 0 && stack.nic_pending() > 0) drv.loop().reap();
    if (const workload::Step s = drv.send(costs); !s.ok())
      throw PathStopped("recording the path: " + drv.why(s));
    if (uses_ring && ppi > 0 && (n + 1) % ppi == 0) {
      rec.acct.set_context(Context::interrupt);
      const int k = drv.loop().reap();
      rec.acct.add(Stage::interrupt,
                   spec.interrupts.handler_cycles + spec.interrupts.per_packet_cycles * k);
      rec.acct.set_context(Context::thread);
    }
  }
  if (trace_packets == 0) priced();
  out.trace_packets = trace_packets;
  return out;
}

// Which symbols and owners hold each line (for conflict reports), from the
// lookup a run's I-cache detail uses too (code_by_line).
struct LineInfo {
  std::string symbols, owners;
};

std::unordered_map<uint64_t, LineInfo> line_info(const LinkedLayout& linked, int line_shift) {
  std::unordered_map<uint64_t, LineInfo> info;
  auto add = [](std::string& list, const std::string& name) {
    // Comma-separated, without repeats.
    if (("," + list + ",").find("," + name + ",") != std::string::npos) return;
    list += (list.empty() ? "" : ",") + name;
  };
  for (const auto& [line, code] : code_by_line(linked, uint64_t{1} << line_shift)) {
    LineInfo& li = info[line];
    for (const LineCode& c : code) {
      add(li.symbols, c.symbol);
      add(li.owners, c.owner);
    }
  }
  return info;
}

// Replays trace events through a fetcher.
template <class F>
void replay_event(CodeFetcher& f, uint8_t ev, F& fetch) {
  const size_t owner = ev & static_cast<uint8_t>(~kLeave);
  if ((ev & kLeave) != 0) return f.leave(owner, fetch);
  if (owner < kCodeBase) return f.enter(owner, fetch);
  f.point(owner, fetch);
}

}  // namespace

PathTrace record_path(const PathSpec& spec) {
  const bool uses_ring = workload::uses_ring(spec.path.dest);
  const bool irqs = uses_ring && spec.interrupts.enabled;
  PathTrace t;
  t.path = spec.path;
  t.payload = spec.payload;
  t.fns = &stacks::HarnessKind::fns();
  int ppi = 0;
  if (irqs) {
    ppi = spec.packets_per_interrupt;
    if (ppi <= 0 && spec.interrupts.moderation_interval_s > 0) {
      // One interrupt per interval: the packets sent in one, at the rate
      // without interrupts.
      const PathRun plain = run_path(spec, 0, spec.price_packets, 0);
      const double cpp = plain.cycles / std::max(1, spec.price_packets);
      ppi = static_cast<int>(std::lround(spec.interrupts.moderation_interval_s *
                                         spec.machine.clock_hz / std::max(cpp, 1.0)));
    } else if (ppi <= 0) {
      ppi = spec.interrupts.moderation_packets;
    }
    ppi = std::max(ppi, 1);
  }
  const int period = std::max(ppi, 1);
  const int trace_packets = (std::max(spec.trace_packets, 1) + period - 1) / period * period;
  // Pricing covers whole interrupt periods too, so the interrupt share is exact.
  const int price = std::max((spec.price_packets + period - 1) / period * period, period);
  PathRun run = run_path(spec, ppi, price, trace_packets);
  t.code = std::move(run.trace);
  t.packets = trace_packets;
  t.packets_per_interrupt = ppi;
  t.cycles_per_packet = run.cycles / price;
  t.interrupt_cycles_per_packet = run.interrupt_cycles / price;
  return t;
}

Evaluation evaluate(const LinkedLayout& linked, const ICacheConfig& cache, const PathTrace& trace,
                    const EvalOptions& opt) {
  const FetchPlan plan = fetch_plan(linked, opt.fetch, cache.l1.line_bytes, *trace.fns);
  const int shift = std::countr_zero(static_cast<unsigned>(cache.l1.line_bytes));
  ICache ic(cache);
  CodeFetcher fetcher;
  fetcher.attach(&plan);
  std::unordered_map<uint64_t, uint64_t> line_misses;
  std::set<uint64_t> lines_run;
  bool measuring = false;
  double s = 0;  // the stall of the event being replayed
  auto fetch = [&](uint32_t segment) {
    for (const auto& [start, bytes] : plan.segments[segment]) s += ic.fetch(start, bytes);
  };
  // With detail, line by line: which lines run, which of them miss.
  auto fetch_detail = [&](uint32_t segment) {
    for (const auto& [start, bytes] : plan.segments[segment])
      for (uint64_t l = start >> shift; l <= (start + bytes - 1) >> shift; ++l) {
        const uint64_t before = ic.stats().l1_misses;
        const uint64_t a = std::max(start, l << shift);
        s += ic.fetch(a, std::min(start + bytes, (l + 1) << shift) - a);
        if (!measuring) continue;
        lines_run.insert(l);
        if (ic.stats().l1_misses != before) ++line_misses[l];
      }
  };
  const int passes = opt.warmup_passes + opt.measure_passes;
  double stall = 0;
  for (int pass = 0; pass < passes; ++pass) {
    measuring = pass >= opt.warmup_passes;
    if (pass == opt.warmup_passes) ic.reset_stats();
    for (uint8_t ev : trace.code) {
      s = 0;
      if (opt.detail)
        replay_event(fetcher, ev, fetch_detail);
      else
        replay_event(fetcher, ev, fetch);
      if (measuring) stall += s;
    }
  }
  Evaluation e;
  const double packets = static_cast<double>(trace.packets) * std::max(opt.measure_passes, 1);
  e.l1_misses_per_packet = static_cast<double>(ic.stats().l1_misses) / packets;
  e.l2_misses_per_packet = static_cast<double>(ic.stats().l2_misses) / packets;
  e.stall_cycles_per_packet = stall / packets;
  if (!opt.detail) return e;

  // Distinct lines the trace runs, by L1 set.
  const auto info = line_info(linked, shift);
  std::map<int64_t, std::set<uint64_t>> by_set;
  for (uint64_t l : lines_run) by_set[ic.l1_set_of(l << shift)].insert(l);
  for (const auto& [set, lines] : by_set) {
    if (lines.size() <= static_cast<size_t>(cache.l1.assoc)) continue;
    SetConflict sc;
    sc.set = set;
    for (uint64_t l : lines) {
      const auto li = info.find(l);
      const auto m = line_misses.find(l);
      const double mpp = m == line_misses.end() ? 0 : static_cast<double>(m->second) / packets;
      sc.lines.push_back({l << shift, li == info.end() ? std::string() : li->second.symbols,
                          li == info.end() ? std::string() : li->second.owners, mpp});
      sc.misses_per_packet += mpp;
    }
    e.conflicts.push_back(std::move(sc));
  }
  std::set<std::string> fetched, hot;
  for (const auto& [owner, ranges] : linked.by_owner)
    for (const HotRange& r : ranges) {
      if (r.bytes == 0) continue;
      hot.insert(r.symbol);
      const auto l = lines_run.lower_bound(r.start >> shift);
      if (l != lines_run.end() && *l <= (r.start + r.bytes - 1) >> shift) fetched.insert(r.symbol);
    }
  std::set_difference(hot.begin(), hot.end(), fetched.begin(), fetched.end(),
                      std::back_inserter(e.never_fetched));
  std::stable_sort(e.conflicts.begin(), e.conflicts.end(),
                   [](const SetConflict& a, const SetConflict& b) {
                     return a.misses_per_packet > b.misses_per_packet;
                   });
  return e;
}

LinkedLayout link_with(const Layout& kernel, const LinkedLayout& user) {
  LinkedLayout k = link(kernel);
  if (user.objects.empty() && user.by_owner.empty()) return k;
  return merge(k, user);
}

namespace {

// Lexicographic: stall cycles, then L1 misses (stalls can be 0 with misses).
bool better(const Evaluation& a, const Evaluation& b) {
  constexpr double eps = 1e-9;
  if (a.stall_cycles_per_packet < b.stall_cycles_per_packet - eps) return true;
  if (a.stall_cycles_per_packet > b.stall_cycles_per_packet + eps) return false;
  return a.l1_misses_per_packet < b.l1_misses_per_packet - eps;
}

struct Candidate {
  std::vector<size_t> order;  // indices into the input's objects
  size_t pad_object = 0;
  uint64_t pad_bytes = 0;
};

Layout build(const Layout& base, const Candidate& c) {
  Layout l = base;
  l.objects.clear();
  for (size_t i : c.order) l.objects.push_back(base.objects[i]);
  if (c.pad_bytes > 0) l = pad_object(l, base.objects[c.pad_object].name, c.pad_bytes);
  return l;
}

}  // namespace

SearchResult search_layout(const Layout& kernel, const LinkedLayout& user,
                           const ICacheConfig& cache, const PathTrace& trace,
                           const SearchOptions& opt) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  EvalOptions fast;
  fast.fetch = opt.fetch;
  EvalOptions detailed = fast;
  detailed.detail = true;

  SearchResult r;
  Candidate cur;
  for (size_t i = 0; i < kernel.objects.size(); ++i) cur.order.push_back(i);
  r.before = evaluate(link_with(kernel, user), cache, trace, detailed);
  Evaluation cur_eval = r.before;

  // Objects whose hot code the trace runs: the only ones worth moving.
  std::vector<bool> runs(kCodeCount, false);
  for (uint8_t c : trace.code) runs[c & static_cast<uint8_t>(~kLeave)] = true;
  std::vector<size_t> hot;
  for (size_t i = 0; i < kernel.objects.size(); ++i)
    for (const auto& f : kernel.objects[i].functions)
      if (!f.owner.empty() && f.hot_bytes > 0) {
        const auto at = owner_slot(*trace.fns, f.owner);
        if (at && runs[*at]) {
          hot.push_back(i);
          break;
        }
      }

  std::mt19937_64 rng(opt.seed);
  const size_t n = kernel.objects.size();
  // The budget is in evaluations; the time cap only cuts it short (noted).
  auto out_of_budget = [&] {
    if (r.evaluations >= opt.max_evaluations) return true;
    if (std::chrono::duration<double>(Clock::now() - t0).count() >= opt.budget_s)
      r.stopped_by_time = true;
    return r.stopped_by_time;
  };
  bool improved = true;
  while (improved && cur_eval.l1_misses_per_packet > 0 && !out_of_budget()) {
    improved = false;
    // Objects holding lines of the sets that miss, most misses first.
    std::vector<size_t> culprits;
    {
      const LinkedLayout linked = link(build(kernel, cur));
      for (const auto& sc : cur_eval.conflicts)
        for (const auto& line : sc.lines)
          for (size_t k = 0; k < n; ++k) {
            const auto& [start, end] = linked.objects.at(kernel.objects[k].name);
            if (line.addr + static_cast<uint64_t>(cache.l1.line_bytes) > start && line.addr < end &&
                std::find(culprits.begin(), culprits.end(), k) == culprits.end())
              culprits.push_back(k);
          }
    }
    if (culprits.empty()) culprits = hot;
    std::vector<Candidate> cands;
    auto pos_of = [&](size_t obj) {
      return static_cast<size_t>(std::find(cur.order.begin(), cur.order.end(), obj) -
                                 cur.order.begin());
    };
    for (size_t c : culprits) {
      const size_t p = pos_of(c);
      for (size_t j = 0; j < n; ++j) {
        if (j == p) continue;
        Candidate m = cur;  // move c to position j
        m.order.erase(m.order.begin() + static_cast<std::ptrdiff_t>(p));
        m.order.insert(m.order.begin() + static_cast<std::ptrdiff_t>(j), c);
        cands.push_back(std::move(m));
      }
      for (size_t h : hot) {
        if (h == c) continue;
        Candidate s = cur;
        std::swap(s.order[p], s.order[pos_of(h)]);
        cands.push_back(std::move(s));
      }
      // Padding the object before c (or c itself) shifts c and what follows.
      for (size_t q : {p == 0 ? p : p - 1, p}) {
        for (uint64_t b = 16; b <= opt.max_pad; b += 16) {
          Candidate pd = cur;
          pd.pad_object = cur.order[q];
          pd.pad_bytes = b;
          if (pd.pad_object == cur.pad_object && pd.pad_bytes == cur.pad_bytes) continue;
          cands.push_back(std::move(pd));
        }
      }
    }
    std::shuffle(cands.begin(), cands.end(), rng);
    for (const auto& cand : cands) {
      if (out_of_budget()) break;
      ++r.evaluations;
      const Evaluation e = evaluate(link_with(build(kernel, cand), user), cache, trace, fast);
      if (better(e, cur_eval)) {
        cur = cand;
        cur_eval = evaluate(link_with(build(kernel, cur), user), cache, trace, detailed);
        improved = true;
        break;
      }
    }
  }
  r.layout = build(kernel, cur);
  for (size_t i : cur.order) r.order.push_back(kernel.objects[i].name);
  if (cur.pad_bytes > 0) r.padding = {kernel.objects[cur.pad_object].name, cur.pad_bytes};
  r.after = cur_eval;
  return r;
}

}  // namespace simloop::models
