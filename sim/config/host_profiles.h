// Host profiles: what `simloop calibrate host` measured and fitted on one
// machine, kept per host under the user's data directory
// ($XDG_DATA_HOME/simloop/hosts/FINGERPRINT/, by default
// ~/.local/share/simloop/hosts/FINGERPRINT/), and found by name from any
// experiment: `machine: host` and `stack: host-linux` / `stack: host-bsd`
// stand for this machine's own profile (support::this_host()'s fingerprint).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace simloop::config {

// $XDG_DATA_HOME/simloop/hosts (an absolute XDG_DATA_HOME only, as the XDG
// specification says), else $HOME/.local/share/simloop/hosts; empty when
// neither variable is set.
std::filesystem::path hosts_dir();

// What a host profile's directory holds, by the names experiments use:
// machines host (the Linux fit's machine where the kernel was measured,
// else the BSD fit's), host-linux and host-bsd; stacks host-linux and
// host-bsd. The file names inside the profile's directory that `ref` may
// stand for, first found first; empty when `ref` is no host profile name
// of `kind` ("machines" or "stacks").
std::vector<std::string> host_profile_files(const std::string& kind, const std::string& ref);

// The file `ref` stands for in this machine's host profile, or a message
// saying why there is none (no profile for this host, naming the command
// that makes one and the directory it looked in). Exactly one is set.
struct HostProfileRef {
  std::optional<std::filesystem::path> file;
  std::string problem;
};
HostProfileRef find_host_profile(const std::string& kind, const std::string& ref);

// One host profile directory under hosts_dir(), for simloop list.
struct HostProfile {
  std::filesystem::path dir;
  std::string fingerprint;         // the directory's name
  std::string date;                // when it was made (host.json's "date", else the files' mtime)
  std::string summary;             // the host's facts (host.json), or ""
  std::vector<std::string> names;  // the machine and stack names it answers
  bool this_host = false;          // this machine's fingerprint
};
// Every profile under hosts_dir(), newest first. Never throws.
std::vector<HostProfile> host_profiles();

}  // namespace simloop::config
