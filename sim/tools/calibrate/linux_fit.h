// Calibration of the simulated Linux stack (sim/stack/linux) from this
// machine's own kernel, function by function: `simloop calibrate --source
// linux` on the rows of `measure kernel --split`.
//
// Each split row charges perf's samples of one (repeat, path, payload) to a
// function of the Linux table, the system call's entry and exit, user space,
// or nothing. A point's value of each is the statistic over its repeats.
// The simulated stack runs the same loop (sendto or send on a connected
// socket to 127.0.0.1, the softirq, one recvfrom per datagram) under a
// counting probe, which gives each function's calls, copies and bytes per
// packet. Each function's measured self time in cycles is then
//   calls x fixed_cycles[function] + copied bytes x copy.cycles_per_byte
// (+ unaligned bytes x copy.unaligned_cycles_per_byte), fitted by
// non-negative least squares over the training points; the system call's
// entry and exit and the user loop are per call and per packet. A function
// the kernel inlines (no sample of its own at any point) is observed with
// the caller it is inlined into, and priced 0.
#pragma once

#include <array>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/stack/net/fn_table.h"
#include "sim/tools/calibrate/points.h"

namespace simloop::measure {

// One repeat of one point: ns per packet by where the samples were charged.
struct LinuxRepeat {
  double wall_ns = 0;                   // the timed slices' wall time per packet
  double cpu_ns = 0;                    // every sample of the point (CPU time)
  double syscall_ns = 0, user_ns = 0;   // entry and exit; user space
  double other_ns = 0;                  // kernel samples charged to no function
  std::map<std::string, double> fn_ns;  // Linux table name -> self ns
};

struct LinuxPoint {
  std::string path;  // unconnected | connected
  int payload = 0;
  std::string where;  // file:line of its first row
  std::vector<LinuxRepeat> repeats;
  LinuxRepeat value;  // the statistic over the repeats, quantity by quantity
  std::string label() const;
  // The quantity's share of the point's CPU time (value).
  double share(const std::string& fn) const;
};

struct LinuxMeasured {
  std::vector<LinuxPoint> points;  // in order of first appearance
  double clock_hz = 0;             // from FILE.machine.json (cpu_mhz)
  std::string cpu_model, kernel;
  double loadavg = 0;  // the rows' 1-minute load average, largest
};

// Reads `measure kernel --split` CSVs and their FILE.machine.json. Throws
// InputError naming the file, line and column: a missing column, a bad
// number, a function not in the Linux table, files of different machines.
LinuxMeasured read_linux_split(const std::vector<std::filesystem::path>& csvs, Stat stat);

// What the simulated Linux stack does per packet on a path, by function.
struct LinuxFeatures {
  std::array<double, net::kMaxFns> calls{}, copy_bytes{}, unaligned_bytes{}, cksum_bytes{};
  std::array<int, net::kMaxFns> parent{};  // the innermost caller seen (-1: none)
  double syscalls = 0;                     // sendto and recvfrom calls
};
// Drives the simulated stack as `measure kernel` drives the kernel: after a
// warm-up, `packets` datagrams. Throws InputError on an unknown path or a
// payload lo does not carry.
LinuxFeatures linux_features(const std::string& path, int payload, int packets = 256);

struct LinuxFit {
  Stat stat = Stat::median;
  Split split;
  double clock_hz = 0;
  std::vector<std::string> names;                   // "fixed:FUNCTION", "copy.cycles_per_byte", ...
  std::vector<double> values;                       // cycles
  std::vector<std::string> undetermined;            // no training observation moves them
  std::map<std::string, std::string> inlined_into;  // function -> its caller, here
  double syscall_cycles = 0;                        // entry plus exit, per system call
  double user_cycles = 0;                           // per packet
  std::string cpu_model, kernel;
  std::vector<std::string> measured;
  double value(const std::string& name) const;
};

LinuxFit fit_linux(const LinuxMeasured& m, const Split& split, Stat stat);

// A point as the fit prices it: ns per packet in total and by quantity (the
// functions, "syscall_entry", "user").
struct LinuxPrediction {
  double cpu_ns = 0;
  std::map<std::string, double> ns;
};
LinuxPrediction predict_linux(const LinuxFit& fit, const LinuxPoint& p);

// Writes DIR/NAME-stack.yaml (kind linux), DIR/NAME-machine.yaml and an
// experiment DIR/NAME.yaml (loopback, 18 B, a receiver), each headed by
// where its numbers came from; `extra` files (name, text) with them, all or
// none.
void write_linux_profile(const LinuxFit& fit, const std::filesystem::path& dir,
                         const std::string& name,
                         const std::vector<std::pair<std::string, std::string>>& extra = {});

// The fit and every point's measured and predicted values, for reports.
nlohmann::json linux_fit_json(const LinuxFit& fit, const LinuxMeasured& m);

}  // namespace simloop::measure
