// calibrate host's microbenchmarks (microbench.json): what a carry to
// another host scales by, and what a measurement records beside itself.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "sim/tools/cli/host_rescale.h"
#include "sim/tools/measure/kernel.h"

namespace simloop::cli {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::vector<double> host_loadavg() {
  std::ifstream f("/proc/loadavg");
  std::vector<double> v(3, -1);
  for (auto& x : v) f >> x;
  return v;
}

namespace {

// The clock the core runs at now (turbo, a guest's share), beside what
// /proc/cpuinfo says: `ops` dependent instructions of `cycles` cycles each,
// `chain` of them a call, over the time they take. Many short trials, the
// fastest kept: on a loaded machine some run without being preempted.
template <class Chain>
double chain_mhz(int64_t iters, double ops, Chain chain) {
  double best = 0;
  for (int trial = 0; trial < 100; ++trial) {
    const auto t0 = Clock::now();
    for (int64_t i = 0; i < iters; ++i) chain();
    const double ns = std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
    best = std::max(best, ops * static_cast<double>(iters) / ns * 1e3);
  }
  return best;
}

// Dependent adds, one cycle each on every x86-64 of the last twenty years
// that does not fold them (core_clock_mhz() says why they are only a check).
double measured_mhz() {
#if defined(__x86_64__)
  uint64_t x = 0;
  return chain_mhz(100'000, 16.0, [&x] {
    asm volatile(
        "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\t"
        "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\t"
        "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\t"
        "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0"
        : "+r"(x));
  });
#else
  return 0;
#endif
}

// The same from dependent multiplies (three cycles each on the x86-64 cores
// of the last decade): the core's clock, where the adds would be fooled by
// a core that folds immediate adds at rename.
double measured_mhz_imul() {
#if defined(__x86_64__)
  uint64_t x = 3;
  return chain_mhz(40'000, 3.0 * 8.0, [&x] {
    asm volatile(
        "imul %0, %0\n\timul %0, %0\n\timul %0, %0\n\timul %0, %0\n\t"
        "imul %0, %0\n\timul %0, %0\n\timul %0, %0\n\timul %0, %0"
        : "+r"(x));
  });
#else
  return 0;
#endif
}

// ns per memcpy of `bytes` between two buffers that stay in the cache, the
// fastest of a few trials. Both are cache-line aligned and half a page
// apart modulo 4 KiB, the same in every run: two separate allocations land
// at any offset, and where the destination trails the source by a multiple
// of 4 KiB, loads wait on stores to other addresses (4K aliasing) and one
// run measured 16 KiB at 4.3 times another's.
double memcpy_ns(size_t bytes) {
  constexpr size_t kPage = 4096;
  const size_t span = (bytes + kPage - 1) / kPage * kPage + kPage / 2;
  std::vector<unsigned char> buf(span + bytes + 2 * kPage, 1);
  const auto at = reinterpret_cast<uintptr_t>(buf.data());
  unsigned char* src = buf.data() + ((kPage - at % kPage) % kPage);
  unsigned char* dst = src + span;
  const int64_t calls = std::max<int64_t>(200, (int64_t{16} << 20) / static_cast<int64_t>(bytes));
  double best = 1e30;
  for (int trial = 0; trial < 7; ++trial) {
    const auto t0 = Clock::now();
    for (int64_t i = 0; i < calls; ++i) {
      std::memcpy(dst, src, bytes);
      asm volatile("" : : "r"(dst) : "memory");
    }
    const double ns = std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
    best = std::min(best, ns / static_cast<double>(calls));
  }
  return best;
}

std::string sysfs_line(const fs::path& p) {
  std::ifstream f(p);
  std::string s;
  std::getline(f, s);
  return s;
}

// cpu0's caches, one object each, as sysfs gives them.
nlohmann::json cache_geometry() {
  nlohmann::json out = nlohmann::json::array();
  std::error_code ec;
  std::vector<fs::path> dirs;
  for (fs::directory_iterator it("/sys/devices/system/cpu/cpu0/cache", ec), end; !ec && it != end;
       it.increment(ec))
    if (it->path().filename().string().starts_with("index")) dirs.push_back(it->path());
  std::sort(dirs.begin(), dirs.end());
  for (const auto& d : dirs)
    out.push_back({{"level", sysfs_line(d / "level")},
                   {"type", sysfs_line(d / "type")},
                   {"size", sysfs_line(d / "size")},
                   {"ways", sysfs_line(d / "ways_of_associativity")},
                   {"line_bytes", sysfs_line(d / "coherency_line_size")},
                   {"sets", sysfs_line(d / "number_of_sets")}});
  return out;
}

// The kernel's speculation mitigations on this CPU, as sysfs states them:
// they set how fast kernel code runs here (a guard on every return costs
// every function), so a carry between hosts can say why it failed.
nlohmann::json vulnerabilities() {
  nlohmann::json out = nlohmann::json::object();
  std::error_code ec;
  for (fs::directory_iterator it("/sys/devices/system/cpu/vulnerabilities", ec), end;
       !ec && it != end; it.increment(ec))
    out[it->path().filename().string()] = sysfs_line(it->path());
  return out;
}

}  // namespace

double core_clock_now_mhz() {
  return measured_mhz_imul();
}

nlohmann::json host_facts_json(const support::HostFacts& h) {
  return {{"cpu", h.cpu},       {"clock_mhz", h.clock_mhz},       {"kernel", h.kernel},
          {"caches", h.caches}, {"fingerprint", h.fingerprint()}, {"summary", h.summary()}};
}

nlohmann::json host_microbenchmarks(const support::HostFacts& h) {
  nlohmann::json j;
  j["host"] = host_facts_json(h);
  j["loadavg_before"] = host_loadavg();
  j["clock"] = {{"cpuinfo_mhz", h.clock_mhz},
                {"measured_mhz", measured_mhz()},
                {"measured_mhz_imul", measured_mhz_imul()},
                {"how",
                 "dependent multiplies (3 cycles each: the clock) and adds (1 cycle each "
                 "where the core does not fold them), the fastest of 100 short trials"}};
  const auto [wall, cpu] = measure::null_syscall_ns(200000);
  j["null_syscall"] = {{"wall_ns", wall}, {"cpu_ns", cpu}, {"call", "syscall(SYS_getppid)"}};
  // How fast this kernel's own code runs: its return thunks, retpolines and
  // allocator, which the null system call's entry and exit do not exercise.
  const auto [sock_wall, sock_cpu] = measure::unix_dgram_round_trip_ns(50000, 64);
  if (sock_cpu > 0)
    j["kernel_socket"] = {{"wall_ns", sock_wall},
                          {"cpu_ns", sock_cpu},
                          {"call", "send() and recv() of 64 B on an AF_UNIX datagram socketpair"}};
  // The kernel's own copy, per byte: a pread() of 4 KiB less one of 256 B
  // from a file in memory, over the 3840 B between them. Both read one page,
  // so the call's and the page's fixed work cancel (past a page, each page
  // adds about 290 ns of lookup on an AMD guest, four times the copy). The
  // Linux stack's copies are this routine, not user space's memcpy.
  {
    const auto [small, page] = measure::kernel_copy_out_ns(10000, 6, 256, 4096);
    if (small > 0 && page > small)
      j["kernel_copy"] = {{"call", "pread() from a memfd into a user buffer, 256 B and 4096 B"},
                          {"cpu_ns_256", small},
                          {"cpu_ns_4096", page},
                          {"ns_per_byte", (page - small) / (4096 - 256)}};
  }
  nlohmann::json copies = nlohmann::json::array();
  for (size_t bytes : {64, 256, 1024, 4096, 16384, 65536}) {
    const double ns = memcpy_ns(bytes);
    copies.push_back({{"bytes", bytes}, {"ns", ns}, {"bytes_per_ns", bytes / ns}});
  }
  j["memcpy"] = copies;
  j["caches"] = cache_geometry();
  j["vulnerabilities"] = vulnerabilities();
  j["loadavg_after"] = host_loadavg();
  return j;
}

}  // namespace simloop::cli
