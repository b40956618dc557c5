// The kernel measured run: a ttcp-like UDP sendto() loop over this machine's
// own loopback (or a veth pair between two namespaces of its own), with the
// cost of a null system call measured beside it; sendmmsg(), UDP GSO and
// nftables rules are knobs of a channel.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "sim/report/table.h"

namespace simloop::measure {

// How the sender addresses its datagrams: sendto() with the address each time
// (a route lookup per datagram in Linux), or send() on a connected socket
// (the route cached in the socket). The veth paths leave loopback: the
// sender in a network namespace of its own, the receiver in another, a veth
// pair between them (kernel_veth.h); unicast to the peer, unconnected or
// connected, or broadcast to the pair's subnet (SO_BROADCAST).
enum class KernelPath : uint8_t { unconnected, connected, veth, veth_connected, veth_broadcast };
const char* kernel_path_name(KernelPath p);
// Over the veth pair (needs root), not over lo.
constexpr bool kernel_path_veth(KernelPath p) {
  return p == KernelPath::veth || p == KernelPath::veth_connected ||
         p == KernelPath::veth_broadcast;
}
// The rows' dest: loopback, veth (unicast to the peer) or veth-broadcast.
const char* kernel_path_dest(KernelPath p);
// Every path, by name, for the command line.
const std::vector<std::pair<std::string, KernelPath>>& kernel_path_names();

struct KernelOptions {
  std::vector<int> payloads = {18};
  std::vector<KernelPath> paths = {KernelPath::unconnected};
  int64_t packets = 200000;  // timed datagrams per channel (path, payload, knobs) and repeat
  int64_t warmup = 5000;
  int repeats = 1;
  int64_t null_syscalls = 200000;  // getppid() calls timed per repeat
  int rounds = 10;  // a repeat's packets and null calls, in this many interleaved slices
  // A pause of random length in user space after each datagram (in
  // simloop_kernel_dither, whose samples a split leaves out): perf samples
  // at a fixed period, and a loop of nearly fixed period would otherwise be
  // seen at a few phases only, each payload's at different ones.
  bool dither = false;
  // Messages per sendmmsg(2) call, each value a channel of its own, timed
  // interleaved with the others; 1 is the sendto()/send() loop.
  std::vector<int> sendmmsg = {1};
  // Rule counts, each in a network namespace of its own (kernel_nft.h),
  // interleaved like the payloads; empty: the host's namespace, no rules.
  std::vector<int> nft_rules;
  // UDP GSO: datagrams per sendto() (UDP_SEGMENT set to the payload, the
  // send carrying that many payloads), interleaved like the payloads; 1 is
  // the plain send, without the socket option. `packets` counts datagrams.
  std::vector<int> gso_segments = {1};
  int veth_mtu = 1500;  // the veth pair's MTU (veth paths)
  // The receiver's SO_RCVBUF as a program sets it (the kernel doubles it);
  // 0: room for every datagram a call leaves queued. Datagrams that do not
  // fit are dropped by the kernel: `delivered` counts what arrived.
  int so_rcvbuf = 0;
  // With a profiler (measure kernel --split): every slice of a channel is
  // run twice, first plain (the profiler off, no dither) and then profiled,
  // so that the totals come from a run nobody profiles and the shares from
  // perf, both over the same stretch of time. Called with false before the
  // plain half and true before the profiled one.
  std::function<void(bool)> profile;
};
inline constexpr int kMaxSendmmsg = 1024;  // UIO_MAXIOV

// The largest segment count this kernel takes per send (UDP_MAX_SEGMENTS,
// 128 since Linux 6.5: a send of more fails with EINVAL).
inline constexpr int kUdpMaxSegments = 128;
// Why `segments` datagrams of `payload` bytes cannot go in one UDP_SEGMENT
// send on lo, or "" when they can: the segment count, and the whole send
// within a UDP datagram (EMSGSIZE past 65507 bytes).
std::string gso_problem(int payload, int segments);

// The largest payload a path carries with `opt`: lo's 65507, or the veth
// pair's MTU less the IP and UDP headers (no fragmentation is measured).
int kernel_max_payload(KernelPath p, const KernelOptions& opt);

// The pause: `n` turns of an empty loop, out of line under its own symbol.
extern "C" void simloop_kernel_dither(unsigned n);
inline constexpr const char* kDitherSymbol = "simloop_kernel_dither";

// What a channel turns beside its path and payload, each combination a
// point of its own; the defaults are the plain sendto() loop in the host's
// network namespace.
struct KernelKnobs {
  int sendmmsg = 1;    // messages per sendmmsg(2) call; 1: sendto()/send()
  int nft_rules = -1;  // rules on the output hook of a namespace of its own; -1: none made
  int segments = 1;    // UDP GSO datagrams per send; 1: no UDP_SEGMENT
  auto operator<=>(const KernelKnobs&) const = default;
  // ", sendmmsg 8, 10 nft rules" and the like; "" for the defaults.
  std::string label() const;
};

struct KernelResult {
  int repeat = 0;
  int payload = 0;
  KernelPath path = KernelPath::unconnected;
  int sendmmsg = 1;     // messages per call (1: sendto()/send())
  int nft_rules = -1;   // rules on the output hook; -1: run without --nft-rules
  int segments = 1;     // datagrams per send (UDP GSO when above 1)
  int64_t packets = 0;  // timed datagrams that went
  KernelKnobs knobs() const {
    return {.sendmmsg = sendmmsg, .nft_rules = nft_rules, .segments = segments};
  }
  double elapsed_s = 0;
  // This thread's CPU time in the same slices (CLOCK_THREAD_CPUTIME_ID): the
  // kernel's work done on its behalf, softirq included, and not the time
  // other programs held the CPU, so it holds up under load.
  double cpu_s = 0;
  // The plain half of each slice when a profiler runs (KernelOptions::
  // profile): its datagrams, thread CPU time and, of that, user time
  // (getrusage RUSAGE_THREAD, which the kernel splits by its ticks).
  int64_t plain_packets = 0;
  double plain_cpu_s = 0, plain_user_s = 0;
  int64_t delivered = 0, delivered_bytes = 0;  // read back by the receiver during the timed loop
  int64_t send_errors = 0;                     // sendto() failures (ENOBUFS and the like)
  int64_t empty_reads = 0;                     // recv() found nothing yet
  double null_syscall_ns = 0;                  // measured in the same repeat, interleaved
  double null_syscall_cpu_ns = 0;              // the same calls, in thread CPU time
  double loadavg_1m = 0;                       // the machine's load when the repeat ended
  std::string fault;
  double kpps() const { return elapsed_s > 0 ? static_cast<double>(packets) / elapsed_s / 1e3 : 0; }
  double ns_per_packet() const {
    return packets > 0 ? elapsed_s * 1e9 / static_cast<double>(packets) : 0;
  }
  double cpu_ns_per_packet() const {
    return packets > 0 ? cpu_s * 1e9 / static_cast<double>(packets) : 0;
  }
  double plain_cpu_ns_per_packet() const {
    return plain_packets > 0 ? plain_cpu_s * 1e9 / static_cast<double>(plain_packets) : 0;
  }
  double plain_user_ns_per_packet() const {
    return plain_packets > 0 ? plain_user_s * 1e9 / static_cast<double>(plain_packets) : 0;
  }
};

// This thread's CPU time so far, in ns (CLOCK_THREAD_CPUTIME_ID).
int64_t thread_cpu_ns();
// Of that, the time in user space (getrusage RUSAGE_THREAD), in ns: the
// kernel divides the thread's time between user and system by its ticks.
int64_t thread_user_ns();

// What this machine is: CPU model, core count, kernel version.
struct MachineInfo {
  std::string cpu_model, kernel;
  int cores = 0;
  double cpu_mhz = 0;
  int64_t l1d_bytes = 0;  // the L1 data cache (sysfs); 0: not known
  int l1d_ways = 0;
  nlohmann::json to_json() const;
};
MachineInfo machine_info();

// The 1-minute load average (/proc/loadavg), or -1 if it cannot be read.
double loadavg_1m();

// A getppid() system call's wall ns and this thread's CPU ns, each per call,
// over `calls` calls.
std::pair<double, double> null_syscall_ns(int64_t calls);

// One round trip of `bytes` through an AF_UNIX datagram socket pair (a
// send() and a recv() on this thread): the kernel's own socket-buffer code
// (allocation, queueing, copies, freeing) with no IP or UDP in it, a
// microbenchmark of how fast this kernel's code runs here. {wall, CPU} ns
// per round trip, the fastest of a few trials; {0, 0} when it cannot run.
std::pair<double, double> unix_dgram_round_trip_ns(int64_t trips, size_t bytes);

// One pread() of `small` and one of `large` bytes from an in-memory file
// (memfd) already in the page cache into a buffer of this thread's: the
// kernel's own copy to user space (copy_to_user, whatever routine this
// kernel picked for this CPU), which user space's memcpy does not stand for
// (it may use vector registers the kernel does not touch). This thread's CPU
// ns per call of each, the fastest of `trials` trials of `calls` calls, the
// two sizes in turn (a slow moment then slows both alike, and their
// difference is the copy); {0, 0} when it cannot run.
std::pair<double, double> kernel_copy_out_ns(int64_t calls, int trials, size_t small, size_t large);

// Each repeat is cut into `rounds` slices; every slice times a share of the
// null system calls and a share of every payload's packets, the payloads in
// an order that rotates from slice to slice. A slow moment of a shared
// machine thus falls on all sizes and on the null syscall alike, and each
// repeat's figures (the null syscall's too) are measured over the same
// stretch of time. The receiver is drained in the same thread right after
// each sendto(): one non-blocking recv() per datagram still outstanding.
// A stretch of CLOCK_MONOTONIC time in which one path and payload alone was
// timed (a slice of a repeat): what a profile's samples are sorted by.
struct KernelWindow {
  int repeat = 0;
  int payload = 0;
  KernelPath path = KernelPath::unconnected;
  int64_t t0_ns = 0, t1_ns = 0;  // CLOCK_MONOTONIC
  int64_t packets = 0;           // datagrams sent in it
  KernelKnobs knobs;             // as its channel's
};

// With `windows`, every timed slice is recorded there as it ends.
std::vector<KernelResult> run_kernel(const KernelOptions& opt,
                                     std::vector<KernelWindow>* windows = nullptr);

// CLOCK_MONOTONIC now, in ns: the clock `perf record -k CLOCK_MONOTONIC`
// stamps its samples with.
int64_t monotonic_ns();

// One tidy row per result, the columns of `measure native` plus the machine.
report::Row kernel_row(const KernelResult& r, const MachineInfo& m);

}  // namespace simloop::measure
