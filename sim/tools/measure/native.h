// The native measured run: a ttcp-like sender driving the real stack with
// no simulator, timed with the machine's clock.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/report/table.h"
#include "sim/stack/harness.h"
#include "sim/stack/net/probe.h"
#include "sim/stack/stack_set.h"
#include "sim/stack/workload/driver.h"
#include "sim/stack/workload/path.h"

namespace simloop::measure {

using workload::Dest;
using workload::dest_addr;
using workload::dest_name;
using workload::parse_dest;

struct NativeOptions {
  int payload = 18;
  int64_t packets = 1000000;
  double duration_s = 0;   // > 0: run for this long instead of `packets`
  int64_t warmup = 10000;  // untimed packets first
  workload::Path path;     // its service: full (drained) or send-only
  // The rest of the harness stack's options (the path sets its own).
  stacks::HarnessKind::Options stack;
  int repeats = 1;
  bool split = false;  // also measure a per-stage time split (slower run)
};

// How a native run drives the stack: ttcp's sentinels around the warm-up
// and the timed packets. Calibration drives its points so too.
// (Inline: the loop's header is compiled alone into test programs.)
inline workload::DriveOptions drive_options(const NativeOptions& opt) {
  return {.path = opt.path, .payload = opt.payload, .warmup = opt.warmup, .sentinels = true};
}

struct NativeResult {
  int repeat = 0;
  int64_t packets = 0;     // timed datagrams sent (a UDP GSO send carries several)
  int64_t total_sent = 0;  // all datagrams sent, with warm-up and sentinels
  double elapsed_s = 0;
  double cpu_s = 0;  // this thread's CPU time in the same loop (CLOCK_THREAD_CPUTIME_ID)
  int64_t delivered = 0, delivered_bytes = 0;  // received by the socket / sent on the ring
  int64_t enobufs_retries = 0;
  std::array<uint64_t, net::kDropCount> drops{};
  std::string fault;  // empty, or what stopped the run
  // Per-stage self time in ns per packet (only with `split`).
  std::vector<std::pair<std::string, double>> stage_ns;
  // The instrumented run's own ns per packet (only with `split`): what the
  // clock reads cost in place, and the time outside every function.
  double split_ns_per_packet = 0;
  double kpps() const { return elapsed_s > 0 ? packets / elapsed_s / 1e3 : 0; }
  double ns_per_packet() const { return packets > 0 ? elapsed_s * 1e9 / packets : 0; }
  double cpu_ns_per_packet() const { return packets > 0 ? cpu_s * 1e9 / packets : 0; }
};

// Runs `opt.repeats` independent runs (a fresh pool and stack each).
std::vector<NativeResult> run_native(const NativeOptions& opt);
// The same on the stack named `stack` (sim/stack/stacks.h), built with the
// host's options `host` and its own in `own` (opt.stack is not used).
std::vector<NativeResult> run_native(const NativeOptions& opt, std::string_view stack,
                                     const net::HostOptions& host,
                                     const stacks::StackOptionSet& own);

// The columns that name a point's path: payload, dest, align, copy.
report::Row& set_path_columns(report::Row& row, const NativeOptions& opt);

// One tidy row per result, with the options that produced it.
report::Row native_row(const NativeOptions& opt, const NativeResult& r);

}  // namespace simloop::measure
