// The simulation engine: SimGrid actors that run the real stack and charge
// its cycles, as priced by the models, on a simulated CPU.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "models/cycle_account.h"
#include "models/fn_ledger.h"
#include "sim/config/experiment.h"
#include "sim/report/table.h"

namespace simloop::engine {
class Tracer;
}

namespace simloop::engine {

// A cost the experiment leaves undetermined (`~`: config::Experiment::
// undetermined) that the run used: it was priced 0, so the run's cycles
// leave it out (sim/engine/undetermined.h).
struct UndeterminedUse {
  std::string key;    // stack.functions.ndo_start_xmit, stack.cksum_cycles_per_byte, ...
  std::string where;  // where it was left undetermined: FILE:LINE:COL, or --set
  std::string unit;   // what the run used it for: calls, bytes checksummed, ...
  double uses = 0;    // how many over the run
};

struct SimResult {
  // Datagrams sent: where they go on the wire (wire, broadcast), those
  // whose frame left the NIC; else those sendto() took.
  int64_t packets = 0;
  // Simulated time from the first sendto() to the end of the last, or to
  // the moment the last frame left the NIC if later.
  double elapsed_s = 0;
  double clock_hz = 0;
  models::StageCycles cycles{};  // CPU cycles by stage over the run
  int64_t interrupts = 0;
  double interrupt_s = 0;  // time interrupt handlers held the CPU
  double sleep_s = 0;      // time the sender slept after ENOBUFS or blocked for send space
  int64_t enobufs = 0;
  std::array<uint64_t, net::kDropCount> drops{};
  int64_t delivered = 0, delivered_bytes = 0;  // to the receiving socket, or frames onto the wire
  int64_t peer_frames = 0;  // frames that reached the peer host by the end (wire, broadcast)
  int64_t l1i_misses = 0, l2_misses = 0;  // I-cache model, whole run (cache on)
  // The optional models' result columns (models/model_spec.h), of those on.
  std::vector<std::pair<std::string, double>> model_columns;
  std::string outcome = "ok";   // ok | alignment-fault | error
  std::string detail;           // what ended the run early
  double wall_s = 0;            // real time the simulation took
  double interval_kpps_cv = 0;  // variation of the rate within the run (over 20 slices)
  models::FnLedger ledger;      // the same cycles by function and kind of cost
  std::vector<models::SetMisses> icache_sets;  // L1 I-cache sets that missed (cache on)
  std::vector<UndeterminedUse> undetermined;   // undetermined costs the run used

  double kpps() const { return elapsed_s > 0 ? static_cast<double>(packets) / elapsed_s / 1e3 : 0; }
  double ns_per_packet() const {
    return packets > 0 ? elapsed_s * 1e9 / static_cast<double>(packets) : 0;
  }
  double cycles_per_packet() const { return ns_per_packet() * clock_hz / 1e9; }
  double interrupt_share() const { return elapsed_s > 0 ? interrupt_s / elapsed_s : 0; }
};

// Runs one experiment. SimGrid keeps global state, so run one simulation per
// process (the CLI does; sweeps start a process per point).
// With `tracer`, the timeline of its window of packets goes there
// (engine/trace.h).
SimResult simulate(const config::Experiment& x, Tracer* tracer = nullptr);

// Times one message of `bytes` over the platform's host-to-peer link, as the
// engine builds it: the check that the network model is set up as physics says.
double link_transfer_time(double bandwidth_bps, double latency_s, double bytes);

// A run's result row: engine/columns.h (result_row, identity_row).

// SimGrid configuration items ("tracing:yes", "tracing/filename:run.trace",
// ...) set on the engine before the first simulation builds its platform:
// SimGrid's own tracing (Paje) and options pass through. Throws
// std::invalid_argument naming an item SimGrid refuses.
void set_simgrid_config(const std::vector<std::string>& items);

// Routes SimGrid's own log through spdlog (call before any Engine exists).
void route_simgrid_log_to_spdlog();

// Starts SimGrid's engine now without running anything, so that processes
// forked afterwards (a sweep's runs) each run their one simulation without
// paying the engine's start-up. Routes SimGrid's log to spdlog first. The
// signal dispositions SimGrid would install (its own Ctrl-C handler) are
// put back as they were. Call it in a process that never simulates itself.
void prepare_engine();

}  // namespace simloop::engine
