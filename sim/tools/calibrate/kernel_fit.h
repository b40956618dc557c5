// Calibration of a kernel-measured stack (its kind's kMeasured is
// Measured::kernel: the Linux stack) from this machine's own kernel,
// function by function: `simloop calibrate --source STACK` on the rows of
// `measure kernel --split`.
//
// Each split row charges perf's samples of one (repeat, path, payload) to a
// function of the stack's table, the system call's entry and exit, user
// space, or nothing. A point's value of each is the statistic over its repeats.
// The simulated stack runs the same loop (sendto or send on a connected
// socket to 127.0.0.1, the softirq, one recvfrom per datagram) under a
// counting probe, which gives each function's calls, copies and bytes per
// packet. Each function's measured self time in cycles is then
//   calls x fixed_cycles[function] + copied bytes x copy.cycles_per_byte
// (+ bytes copied to the user x copy.to_user_extra_cycles_per_byte,
// + unaligned bytes x copy.unaligned_cycles_per_byte, + with an L1d,
// bytes through lines it no longer held x copy.l1d_miss_extra_cycles_per_byte), fitted by
// non-negative least squares over the training points; the system call's
// entry and exit and the user loop are per call and per packet. A function
// the kernel inlines (no sample of its own at any point) is observed with
// the caller it is inlined into, and priced 0.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sim/stack/net/fn_table.h"
#include "sim/stack/stack_set.h"
#include "sim/tools/calibrate/points.h"
#include "sim/tools/measure/kernel.h"

namespace simloop::measure {

// One repeat of one point: ns per packet by where the samples were charged.
// With the plain run's time (rows of a --split that ran each slice without
// perf too), every quantity is scaled so that they sum to it: the shares are
// perf's, the total the thread CPU time of the loop nobody profiled.
struct KernelRepeat {
  double wall_ns = 0;                   // the timed slices' wall time per packet
  double cpu_ns = 0;                    // the point's CPU time: plain if known, else perf's
  double perf_cpu_ns = 0;               // every sample of the point (perf's CPU time)
  double plain_cpu_ns = 0;              // the plain run's thread CPU time; 0: not measured
  double plain_user_ns = 0;             // of it, in user space (the kernel's ticks)
  int64_t packets = 0;                  // the repeat's timed datagrams (profiled half)
  double syscall_ns = 0, user_ns = 0;   // entry and exit; user space
  double other_ns = 0;                  // kernel samples charged to no function
  std::map<std::string, double> fn_ns;  // the stack's function name -> self ns
};

struct KernelPoint {
  std::string path;  // unconnected | connected | veth | veth-connected
  int payload = 0;
  int sendmmsg = 1;   // datagrams per sendmmsg() call (1: sendto() or send())
  int nft_rules = 0;  // rules on the output hook (measure kernel --nft-rules)
  int segments = 1;   // datagrams per send (UDP GSO above 1)
  KernelKnobs knobs() const {
    return {.sendmmsg = sendmmsg, .nft_rules = nft_rules, .segments = segments};
  }
  std::string where;  // file:line of its first row
  std::vector<KernelRepeat> repeats;
  KernelRepeat value;  // the statistic over the repeats, quantity by quantity
  std::string label() const;
  // The quantity's share of the point's CPU time (value).
  double share(const std::string& fn) const;
};

// The L1 data cache the rows were measured with (FILE.machine.json's l1d,
// from sysfs); 0 bytes: not known, and the fit prices a copy's bytes at
// its rates alone (models/l1d_copies.h).
struct L1dGeometry {
  int64_t bytes = 0;
  int ways = 0;
};

struct KernelMeasured {
  std::string stack;                // whose functions the rows are charged to
  std::vector<KernelPoint> points;  // in order of first appearance
  double clock_hz = 0;              // from FILE.machine.json (cpu_mhz)
  L1dGeometry l1d;                  // from FILE.machine.json (l1d), where it says
  std::string cpu_model, kernel;
  double loadavg = 0;  // the rows' 1-minute load average, largest
  // "plain": totals from the run without perf (every row had them); "perf":
  // from perf's samples (rows from before the plain run, or asked for).
  std::string time_base = "perf";
  double perf_over_plain = 0;  // median over repeats of perf's CPU time / plain's; 0: none
};

// Which totals a fit takes: the plain run's where every row has them.
enum class KernelTotals { plain, perf };

// Reads `measure kernel --split` CSVs, charged to the functions of stack
// `stack`, and their FILE.machine.json. Throws InputError naming the file,
// line and column: a missing column, a bad number, a function not in the
// stack's table, files of different machines.
// With `totals` plain, rows without the plain run's time are an error that
// says how to measure them or to ask for perf's totals.
KernelMeasured read_kernel_split(const std::vector<std::filesystem::path>& csvs, Stat stat,
                                 const std::string& stack,
                                 std::optional<KernelTotals> totals = std::nullopt);

// Drives stack `stack` (its default options) as `measure kernel` drives the
// kernel: sendto, or send on a socket connected once (`path` unconnected or
// connected), to 127.0.0.1, the softirq, one recvfrom per datagram; after a
// warm-up, `packets` datagrams (at least four sendmmsg() calls of
// `knobs.sendmmsg` when that is over 1). With `knobs.nft_rules` > 0, the
// stack's LOCAL_OUT chain holds that many rules (options.linux.nft_rules).
// Throws InputError on an unknown path, a payload lo does not carry, or a
// knob the stack has no key for. `knobs.segments` above 1 sends them per
// call with UDP GSO (options.linux.udp_segment); counts are per datagram.
// With `l1d` known, its copies' bytes that missed it are counted too
// (CallCounts::l1d_miss_bytes), the cache warmed by the warm-up.
stacks::CallCounts stack_counts(const std::string& stack, const std::string& path, int payload,
                                int packets = 256, const KernelKnobs& knobs = {},
                                const L1dGeometry& l1d = {});

struct KernelFit {
  std::string stack;  // the stack fitted (KernelMeasured's)
  Stat stat = Stat::median;
  Split split;
  double clock_hz = 0;
  L1dGeometry l1d;                 // KernelMeasured's: where known, copies pay for its misses
  std::vector<std::string> names;  // "fixed:FUNCTION", "copy.cycles_per_byte", ...
  std::vector<double> values;      // cycles
  std::vector<std::string> undetermined;            // no training observation moves them
  std::map<std::string, std::string> inlined_into;  // function -> its caller, here
  double syscall_cycles = 0;                        // entry plus exit, per system call
  double user_cycles = 0;                           // per packet
  std::string cpu_model, kernel;
  std::string time_base = "perf";  // KernelMeasured's
  double perf_over_plain = 0;
  std::vector<std::string> measured;
  double value(const std::string& name) const;
};

KernelFit fit_kernel(const KernelMeasured& m, const Split& split, Stat stat);

// A point as the fit prices it: ns per packet in total and by quantity (the
// functions, "syscall_entry", "user").
struct KernelPrediction {
  double cpu_ns = 0;
  std::map<std::string, double> ns;
};
KernelPrediction predict_kernel(const KernelFit& fit, const KernelPoint& p);

// Writes DIR/NAME-stack.yaml (kind: the stack fitted), DIR/NAME-machine.yaml and an
// experiment DIR/NAME.yaml (loopback, 18 B, a receiver), each headed by
// where its numbers came from; `extra` files (name, text) with them, all or
// none.
void write_kernel_profile(const KernelFit& fit, const std::filesystem::path& dir,
                          const std::string& name,
                          const std::vector<std::pair<std::string, std::string>>& extra = {});

// The fit and every point's measured and predicted values, for reports.
nlohmann::json kernel_fit_json(const KernelFit& fit, const KernelMeasured& m);

}  // namespace simloop::measure
