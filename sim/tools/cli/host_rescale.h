// calibrate host's parts that carrying a profile to another host shares
// with measuring one (host_cmd.cc), and the carrying itself
// (host_rescale.cc).
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "sim/support/host.h"

namespace simloop::cli {

// The host's facts, as host.json and microbench.json hold them.
nlohmann::json host_facts_json(const support::HostFacts& h);
// The clock (cpuinfo's, and chains of dependent multiplies and adds), a
// null system call, an AF_UNIX datagram round trip, the kernel's copy to
// user space, memcpy from 64 B to 64 KiB, the caches and mitigations from
// sysfs, the load before and after: microbench.json (host_microbench.cc).
nlohmann::json host_microbenchmarks(const support::HostFacts& h);
// The 1, 5 and 15 minute load averages (-1 where unreadable).
std::vector<double> host_loadavg();
// The core's clock now, in MHz, by a chain of dependent multiplies.
double core_clock_now_mhz();
// The core's clock from a microbench.json's "clock": the dependent
// multiplies' (3 cycles each on every x86-64 core of the last decade), or
// the adds' in a file without them. Adds alone are not a clock: a core that
// folds immediate adds at rename (Intel's since Golden Cove) runs a chain
// of them several times faster than one a cycle.
double core_clock_mhz(const nlohmann::json& clock);
// The kernel's own work in the AF_UNIX datagram round trip (its CPU ns less
// two null system calls' entry and exit), or 0 in a file without it.
double kernel_socket_work_ns(const nlohmann::json& bench);

// The kernel's copy to user space in ns per byte (microbench.json's
// kernel_copy), or 0 where the file has none (those before it was taken).
double kernel_copy_ns_per_byte(const nlohmann::json& bench);

// A fitted machine file made this host's: `costs: measured`, the year, and
// the host's facts in place of the host map it had.
std::string with_host_facts(const std::string& text, const support::HostFacts& h,
                            const std::string& year);

// Refuses (UserError) a profile directory that is a link or not a directory.
void check_profile_dir(const std::filesystem::path& dir);
// Writes `files` (name, text) into `dir` all or none, never through a link;
// with `replace_whole` (the hosts directory, simloop's own) the profile
// files it did not write (host-*, kernel-split*, native-split*) go too, so
// that the one before does not outlive it in part.
void write_host_profile(const std::filesystem::path& dir,
                        const std::vector<std::pair<std::string, std::string>>& files,
                        bool replace_whole);

// How an experiment names a host profile's files (host.json's "names"):
// with its Linux half, `machine: host` is the Linux fit's machine.
std::vector<std::string> host_profile_names(bool has_linux);

// calibrate host --from FROM --scale SCALE (micro | clock | none): FROM's
// host-linux and host-bsd profiles carried to this host into `dir`;
// `out_given` is -o as the user gave it (empty: the hosts directory). With
// `bench_file`, that microbench.json stands for this host's (another
// host's, to check a carry against what was measured there).
int host_rescale_cmd(const std::string& from, const std::string& scale,
                     const std::filesystem::path& dir, const std::string& out_given,
                     const std::string& bench_file);

}  // namespace simloop::cli
