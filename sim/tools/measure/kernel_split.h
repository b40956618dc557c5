// The kernel's UDP path function by function: `measure kernel --split`.
//
// The kernel loop of measure kernel runs while `perf record -e cpu-clock`
// samples this process, kernel call chains included. Each sample is charged
// to the path and payload whose timed slice (a KernelWindow) it fell in, and
// to the function of the simulated stack that its kernel symbol stands for,
// through one table: that of a stack measured on the kernel (its kind's
// kPerfSymbols: configs/stacks/linux-perf-symbols.yaml for the Linux stack).
// What the table does not name is listed under its own symbol, never dropped.
#pragma once

#include <cstdint>
#include <filesystem>
#include <istream>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "sim/report/table.h"
#include "sim/tools/measure/kernel.h"

namespace simloop::measure {

// Which kernel symbols stand for which simulated function.
struct SymbolMap {
  std::string file;
  std::string stack;                               // whose functions: the table's `stack`
  std::map<std::string, std::string> function_of;  // kernel symbol -> the stack's function
  std::set<std::string> syscall_entry;  // entry and exit code: the system call's own cost
  std::set<std::string> hypervisor;     // charged to their nearest caller outside the set
};

// Reads and checks a symbol table: `stack` names a stack measured on the
// kernel (without it, the list's first such stack), every function named
// must be one of that stack's, every symbol listed once. Throws config::ConfigError
// "FILE:LINE:COL: KEY: what".
SymbolMap load_symbol_map(const std::filesystem::path& file);

// Where one sample's time goes.
enum class ChargeKind : uint8_t {
  function,       // a simulated function, by the table
  syscall_entry,  // entry and exit glue of the system call
  user,           // user space (the loop itself, the C library)
  unmapped,       // a kernel symbol the table does not name
};
const char* charge_kind_name(ChargeKind k);

struct Charge {
  ChargeKind kind = ChargeKind::unmapped;
  std::string name;  // the function, or the symbol
  // Who the time belongs to in the simulated stack: the function itself;
  // for an unmapped symbol, its nearest caller the table names (a helper's
  // time is its caller's), or "syscall_entry", or "" if none; "user".
  std::string charged_to;
  bool via_hypervisor = false;  // the sample's own symbol was a hypervisor one
};

// One sample's call chain, innermost frame first: (address, symbol).
using Frame = std::pair<uint64_t, std::string>;
Charge charge(const SymbolMap& map, const std::vector<Frame>& chain);

// A kernel symbol without the compiler's suffixes (".constprop.0", ".isra.0",
// ".part.0", ".cold"): the name in the source.
std::string source_symbol(const std::string& symbol);

// The samples of one repeat of one path, payload and set of knobs.
struct SplitGroup {
  int64_t packets = 0;
  int64_t window_ns = 0;  // wall time of its slices
  int64_t samples = 0;
  int64_t hypervisor_samples = 0;
  int64_t dither_samples = 0;  // in simloop_kernel_dither: left out of every figure
  // The same channel's plain half of each slice (no perf, no dither): its
  // datagrams, and this thread's CPU and user time over them, in ns.
  int64_t plain_packets = 0;
  double plain_cpu_ns = 0, plain_user_ns = 0;
  // (kind, name, charged_to) -> samples
  std::map<std::tuple<ChargeKind, std::string, std::string>, int64_t> charged;
};

struct KernelSplit;
// A group's wall time per packet, its dither pauses left out.
double wall_ns_per_packet(const KernelSplit& split, const SplitGroup& g);

struct KernelSplit {
  int64_t period_ns = 0;           // cpu-clock time per sample
  int64_t outside_samples = 0;     // samples in no timed slice (warm-up, null calls)
  int64_t unresolved_samples = 0;  // samples without a call chain
  // (repeat, path, payload, knobs) -> its samples
  std::map<std::tuple<int, KernelPath, int, KernelKnobs>, SplitGroup> groups;
};

// Adds the samples of `perf script -F tid,time,ip,sym --ns` output to
// `split`, each to the window it fell in. Throws std::runtime_error naming
// `what` and the line on output it cannot read.
void add_perf_samples(std::istream& perf_script, const std::string& what,
                      const std::vector<KernelWindow>& windows, const SymbolMap& map,
                      KernelSplit& split);

// One tidy row per (repeat, path, payload, charge), with the machine; with
// an nft_rules column when the run had rule counts.
std::vector<report::Row> split_rows(const KernelSplit& split, const MachineInfo& m, double loadavg);

// Why perf cannot profile the kernel here, or "" when it can: not root, no
// perf program, or kernel symbols hidden (/proc/kallsyms).
std::string perf_unavailable(const std::string& perf);

struct SplitOptions {
  std::string perf = "perf";    // the perf program
  int64_t period_ns = 100'000;  // cpu-clock sampling period
  std::filesystem::path symbols;
};

// Runs the kernel loop under perf and charges its samples. The loop's own
// results (the same as measure kernel's, timed under sampling) go to
// `results`.
KernelSplit run_kernel_split(const KernelOptions& opt, const SplitOptions& split,
                             std::vector<KernelResult>& results);

}  // namespace simloop::measure
