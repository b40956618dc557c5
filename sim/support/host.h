// A host as its profiles name it: what a machine profile was measured on,
// and what this machine is. Two hosts that differ in any of these facts
// price a packet differently, so a profile carries the facts of the host
// it was fitted on and a run compares them with its own.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace simloop::support {

struct HostFacts {
  std::string cpu;       // /proc/cpuinfo's model name
  double clock_mhz = 0;  // its nominal clock ("cpu MHz")
  std::string kernel;    // uname: "Linux 6.18.44 x86_64"
  std::string caches;    // "L1d 32K 8-way, L1i 32K 8-way, L2 1024K 8-way, L3 32768K 16-way"

  bool empty() const { return cpu.empty() && clock_mhz == 0 && kernel.empty() && caches.empty(); }
  // 12 hex digits of a hash of the facts (the clock to 10 MHz, which a
  // guest's reported clock wanders within): equal facts, equal fingerprint.
  std::string fingerprint() const;
  // "AMD EPYC, 2596 MHz, Linux 6.18.44 x86_64, L1d 32K ..." (what is known).
  std::string summary() const;
};

// The L1 data cache a caches text names ("L1d 48K 12-way, ..." as
// HostFacts holds it): its bytes and ways, both 0 when the text does not
// say them.
struct L1dCache {
  int64_t bytes = 0;
  int ways = 0;
};
L1dCache l1d_in(const std::string& caches);

// The first value of `key` in /proc/cpuinfo ("model name", "cpu MHz"), or "".
std::string cpuinfo_field(const std::string& key);

// This machine's facts, from /proc/cpuinfo, uname and sysfs; a fact that
// cannot be read stays empty. SIMLOOP_THIS_HOST=FILE reads them from a
// YAML file of the same keys instead (cpu, clock_mhz, kernel, caches), so
// that another host can be stood in for.
HostFacts this_host();

// How two hosts differ, one phrase per fact ("clock 2596 MHz against 2100
// MHz (+23.6 %)", "kernel ... against ...", "CPU ...", "caches ..."); empty
// when every fact both know is the same.
std::vector<std::string> host_differences(const HostFacts& profile, const HostFacts& here);

}  // namespace simloop::support
