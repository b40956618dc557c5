// The I-cache model pointed at the native harness: the harness's own symbol
// map gives the addresses, a hot profile (or a fraction of each symbol) the
// bytes that run, and the real stack, run through the harness's loop behind a
// code tracer, the order they run in. The result is L1 misses per packet for
// an I1 geometry, to be put beside what cachegrind counts for the same build.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "models/icache.h"
#include "sim/layout/layout.h"
#include "sim/tools/advise/layout_advisor.h"
#include "sim/tools/measure/native.h"

namespace simloop::measure {

// The code the harness runs for `packets` steady-state packets (after its
// start sentinel and `opt.warmup` packets), as the simulator's replay takes
// it. Throws std::runtime_error if the run faults.
models::PathTrace harness_trace(const NativeOptions& opt, int packets = 50);

// A program's loop, as a trace: what `iterations` iterations run is the walk
// of its loop (the owner user_loop) and every function it calls.
models::PathTrace program_trace(int iterations = 20);

// Misses per packet of `linked` on `trace` for an I1 cache of geometry `i1`,
// as cachegrind models one: LRU, no prefetch. With `ll`, a last level behind
// it that sees only I1 misses and never evicts from I1 (cachegrind's, with a
// D1 large enough that data misses do not reach it).
struct Prediction {
  double i1_misses = 0, ll_misses = 0;
};
Prediction predict_misses(const models::LinkedLayout& linked, const models::CacheGeometry& i1,
                          const models::PathTrace& trace,
                          models::FetchMode fetch = models::FetchMode::call_sites,
                          const models::CacheGeometry* ll = nullptr);
double predict_i1_misses(const models::LinkedLayout& linked, const models::CacheGeometry& i1,
                         const models::PathTrace& trace,
                         models::FetchMode fetch = models::FetchMode::call_sites);

// How two lists of values order their items. Two values differ only by more
// than `noise` (cachegrind's run-to-run noise); pairs that differ in one list
// and not the other count against tau-b as ties do.
struct RankAgreement {
  int pairs = 0, concordant = 0, discordant = 0;
  int tied_measured = 0, tied_predicted = 0, tied_both = 0;
  // Kendall's tau-b; NaN where a list has no pair that differs.
  double kendall_tau = 0;
  // Every pair ordered alike (ties as ties), and the measured list orders at
  // least one pair: only then is "ranked in the same order" said.
  bool same_order = false;
  bool meaningful = false;  // the measured list orders at least one pair
};
RankAgreement rank_agreement(const std::vector<double>& measured,
                             const std::vector<double>& predicted, double noise = 0);

// Errors of predicted against measured misses per packet: relative where the
// measured figure is at least `min_relative` misses, absolute elsewhere.
struct MissErrors {
  int relative_points = 0, absolute_points = 0;
  double median_rel_pct = 0, worst_rel_pct = 0;  // worst: the largest magnitude, signed
  double median_abs = 0, worst_abs = 0;          // misses per packet, of the other points
  // Predicted minus measured, misses per packet, over every point: the
  // model's bias (0 when it errs as often high as low).
  double mean_signed = 0;
};
MissErrors summarize_errors(const std::vector<double>& measured,
                            const std::vector<double>& predicted, double min_relative = 1);

}  // namespace simloop::measure
