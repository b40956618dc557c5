// Layout advice: predicts a code layout's I-cache misses per packet and
// searches link orders and padding for fewer.
//
// The instruction stream of a packet is the path the real stack takes. It is
// recorded once (record_path: the functional stack runs behind a probe that
// notes every function entered, with the code the simulator runs around it:
// the sender's loop, system call entry and exit, the netisr, the receiver and
// transmit-completion interrupts), and then replayed through an ICache for
// each candidate layout (evaluate). That replay touches the same lines in the
// same order as the full simulation, so its misses per packet match what
// `simloop run` reports, without SimGrid.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/costs.h"
#include "models/cycle_account.h"
#include "models/icache.h"
#include "sim/layout/code.h"
#include "sim/layout/layout.h"
#include "sim/stack/harness.h"
#include "sim/stack/stack_set.h"
#include "sim/stack/workload/path.h"

namespace simloop::models {

// What the sender does, as the simulator's sender_main does it.
// The advisor records the native harness's stack (stacks::HarnessKind): its
// options from an experiment's host options and each stack's own.
stacks::HarnessKind::Options recorded_stack_options(const net::HostOptions& host,
                                                    const stacks::StackOptionSet& own);

struct PathSpec {
  workload::Path path{.dest = workload::Dest::wire, .service = workload::Service::simulated};
  int payload = 18;
  bool receive = true;  // a receiver drains looped datagrams
  // The rest of the stack's options (the path sets its own).
  stacks::HarnessKind::Options options;
  MachineCosts machine;
  StackCosts stack;
  InterruptCosts interrupts;
  // Packets between transmit-completion interrupts; 0: derived from the
  // moderation settings and the rate without stalls.
  int packets_per_interrupt = 0;
  // Packets priced to average the cycles per packet.
  int price_packets = 400;
  // At least this many packets in the recorded trace (rounded up to whole
  // interrupt periods, so interrupts come at their share).
  int trace_packets = 20;
};

// A trace event: an owner slot (sim/layout/code.h);
// with kLeave set, a stack function left.
inline constexpr uint8_t kLeave = 0x80;
static_assert(kCodeCount < kLeave);

struct PathTrace {
  // The path recorded, and its payload.
  workload::Path path;
  int payload = 0;
  // The stack whose owner slots the events are.
  const net::FnTable* fns = &kNoFns;
  // Code run, in order: events as above.
  std::vector<uint8_t> code;
  int packets = 0;
  int packets_per_interrupt = 0;  // 0: no interrupts on this path
  // Without I-cache stalls, averaged over PathSpec::price_packets.
  double cycles_per_packet = 0;
  double interrupt_cycles_per_packet = 0;  // part of cycles_per_packet
};

// The path cannot be recorded: a send stopped (sendto failed or the stack
// faulted), so the run it stands for would end early.
struct PathStopped : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Runs the real stack. Throws PathStopped if a send stops.
PathTrace record_path(const PathSpec& spec);

// A probe that notes the code that runs: each function entered and left,
// each helper event, and the code around the stack it is told of (run: the
// simulator's sender reports its loop and system calls so; a program
// without those hooks, such as the native harness, notes them itself).
struct CodeTracer : net::NullProbe {
  std::vector<uint8_t>* trace = nullptr;  // nothing is noted while null
  int depth = 0;

  void note(size_t code) {
    if (trace != nullptr) trace->push_back(static_cast<uint8_t>(code));
  }
  void run(Code c) { note(static_cast<size_t>(c)); }
  void enter(net::FnId fn) {
    ++depth;
    note(static_cast<size_t>(fn));
  }
  void leave(net::FnId fn) {
    if (depth > 0) --depth;
    note(static_cast<size_t>(fn) | kLeave);
  }
  void copy(net::CopyKind /*k*/, const void* /*s*/, const void* /*d*/, size_t /*len*/) {
    note(static_cast<size_t>(Code::copy));
  }
  void cksum(const void* /*a*/, size_t /*len*/) { note(static_cast<size_t>(Code::cksum)); }
  void alloc(net::Obj /*o*/, const void* /*a*/) { note(static_cast<size_t>(Code::mbuf_alloc)); }
  void free(net::Obj /*o*/, const void* /*a*/) { note(static_cast<size_t>(Code::mbuf_free)); }
  void header(net::FnId /*fn*/, const void* /*a*/, unsigned /*size*/, bool /*w*/) {
    note(static_cast<size_t>(Code::header_access));
  }
};

// A hot line that shares its L1 set with more hot lines than there are ways.
struct CollidingLine {
  uint64_t addr = 0;  // line start
  std::string symbol, owner;
  double misses_per_packet = 0;
};
struct SetConflict {
  int64_t set = 0;
  std::vector<CollidingLine> lines;  // by address
  double misses_per_packet = 0;      // all L1 misses in this set
};

struct Evaluation {
  double l1_misses_per_packet = 0;
  double l2_misses_per_packet = 0;
  double stall_cycles_per_packet = 0;
  // Sets with more distinct hot lines than ways, most misses first (only
  // filled with `detail`).
  std::vector<SetConflict> conflicts;
  // Symbols with hot bytes of which the replay fetched no line (only
  // filled with `detail`): code the profile says runs that no event of the
  // trace reaches, such as a callee listed under an owner whose event never
  // comes where it is called. By line: a function whose lines others fetch
  // counts as fetched.
  std::vector<std::string> never_fetched;
};

struct EvalOptions {
  int warmup_passes = 2;  // whole traces run before counting
  int measure_passes = 1;
  bool detail = false;  // fill Evaluation::conflicts
  FetchMode fetch = FetchMode::call_sites;
};

// Steady-state misses of `linked` (identity page map) on the trace.
Evaluation evaluate(const LinkedLayout& linked, const ICacheConfig& cache, const PathTrace& trace,
                    const EvalOptions& opt = {});

struct SearchOptions {
  // Seconds: a cap on the budget below only (the result says when it cut in).
  double budget_s = 600;
  // The budget, in layouts evaluated: the same inputs give the same layout
  // however busy the machine is.
  int max_evaluations = 20000;
  uint64_t seed = 1;
  uint64_t max_pad = 2048;  // padding of one object, in 16-byte steps, at most this
  FetchMode fetch = FetchMode::call_sites;
};

struct Padding {
  std::string object;
  uint64_t bytes = 0;
};

struct SearchResult {
  Layout layout;  // the recommendation
  std::vector<std::string> order;
  Padding padding;  // bytes == 0: none added
  Evaluation before, after;
  int evaluations = 0;
  // The time cap cut the budget short: the result may depend on the
  // machine's speed and load.
  bool stopped_by_time = false;
};

// Local search from `kernel` (never returns anything worse than it): moves
// and swaps of one object at a time, and padding at the end of one object.
// `user` is linked beside every candidate unchanged (may be empty).
// Deterministic for a seed and budget unless stopped by the time cap.
SearchResult search_layout(const Layout& kernel, const LinkedLayout& user,
                           const ICacheConfig& cache, const PathTrace& trace,
                           const SearchOptions& opt = {});

// merge(link(kernel), user), or link(kernel) when user has no objects.
LinkedLayout link_with(const Layout& kernel, const LinkedLayout& user);

}  // namespace simloop::models

extern template class simloop::stacks::harness::Stack<simloop::models::CodeTracer>;
