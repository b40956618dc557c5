#include "sim/support/host.h"

#include <fmt/format.h>
#include <sys/utsname.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>

#include "sim/support/text.h"

namespace simloop::support {

std::string cpuinfo_field(const std::string& key) {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (!line.starts_with(key)) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string v = line.substr(colon + 1);
    v.erase(0, v.find_first_not_of(" \t"));
    return v;
  }
  return "";
}

namespace {

std::string first_line(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::string line;
  std::getline(f, line);
  return line;
}

// cpu0's caches from sysfs, by level and type, with their ways.
std::string sysfs_caches() {
  namespace fs = std::filesystem;
  std::map<std::string, std::string> by_name;  // "L1d" -> "32K 8-way"
  std::error_code ec;
  for (fs::directory_iterator it("/sys/devices/system/cpu/cpu0/cache", ec), end; !ec && it != end;
       it.increment(ec)) {
    if (!it->path().filename().string().starts_with("index")) continue;
    const std::string level = first_line(it->path() / "level");
    const std::string type = first_line(it->path() / "type");
    const std::string size = first_line(it->path() / "size");
    const std::string ways = first_line(it->path() / "ways_of_associativity");
    if (level.empty() || size.empty()) continue;
    const std::string t = type == "Data" ? "d" : type == "Instruction" ? "i" : "";
    by_name["L" + level + t] = size + (ways.empty() || ways == "0" ? "" : " " + ways + "-way");
  }
  std::string out;
  for (const auto& [name, what] : by_name) out += (out.empty() ? "" : ", ") + name + " " + what;
  return out;
}

}  // namespace

L1dCache l1d_in(const std::string& caches) {
  // "L1d 48K 12-way": the size in K (or M) and the ways.
  static const std::regex re(R"((?:^|, )L1d ([0-9]+)([KM]) ([0-9]+)-way)");
  std::smatch m;
  if (!std::regex_search(caches, m, re)) return {};
  try {
    const int64_t unit = m[2] == "M" ? int64_t{1} << 20 : int64_t{1} << 10;
    return {std::stoll(m[1]) * unit, std::stoi(m[3])};
  } catch (const std::exception&) {
    return {};
  }
}

std::string HostFacts::fingerprint() const {
  const long clock = std::lround(clock_mhz / 10) * 10;
  return fmt::format("{:012x}",
                     fnv1a(fmt::format("{}|{}|{}|{}", cpu, clock, kernel, caches)) >> 16);
}

std::string HostFacts::summary() const {
  std::string out;
  auto add = [&](const std::string& s) {
    if (!s.empty()) out += (out.empty() ? "" : ", ") + s;
  };
  add(cpu);
  add(clock_mhz > 0 ? fmt::format("{:.0f} MHz", clock_mhz) : "");
  add(kernel);
  add(caches);
  return out.empty() ? "unknown" : out;
}

HostFacts this_host() {
  HostFacts h;
  if (const char* file = std::getenv("SIMLOOP_THIS_HOST"); file != nullptr && *file != '\0') {
    try {
      const YAML::Node n = YAML::LoadFile(file);
      h.cpu = n["cpu"].as<std::string>("");
      h.clock_mhz = n["clock_mhz"].as<double>(0);
      h.kernel = n["kernel"].as<std::string>("");
      h.caches = n["caches"].as<std::string>("");
      return h;
    } catch (const YAML::Exception&) {
      h = {};  // a stand-in that cannot be read stands in for nothing
    }
  }
  h.cpu = cpuinfo_field("model name");
  // The clock a host is known by: cpufreq's highest where the kernel scales
  // it (cpuinfo's "cpu MHz" is then the clock of the moment, which moves),
  // else cpuinfo's, which a guest reports fixed.
  try {
    const std::string max_khz = first_line("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");
    h.clock_mhz = max_khz.empty() ? std::stod(cpuinfo_field("cpu MHz")) : std::stod(max_khz) / 1000;
  } catch (const std::exception&) {
    h.clock_mhz = 0;
  }
  utsname u{};
  if (uname(&u) == 0) h.kernel = fmt::format("{} {} {}", u.sysname, u.release, u.machine);
  h.caches = sysfs_caches();
  return h;
}

std::vector<std::string> host_differences(const HostFacts& profile, const HostFacts& here) {
  std::vector<std::string> out;
  auto text = [&](const char* what, const std::string& a, const std::string& b) {
    if (!a.empty() && !b.empty() && a != b)
      out.push_back(fmt::format("{} '{}' against '{}' here", what, a, b));
  };
  text("CPU", profile.cpu, here.cpu);
  if (profile.clock_mhz > 0 && here.clock_mhz > 0 &&
      std::lround(profile.clock_mhz / 10) != std::lround(here.clock_mhz / 10))
    out.push_back(fmt::format("clock {:.0f} MHz against {:.0f} MHz here ({:+.1f} %)",
                              profile.clock_mhz, here.clock_mhz,
                              100 * (here.clock_mhz / profile.clock_mhz - 1)));
  text("kernel", profile.kernel, here.kernel);
  text("caches", profile.caches, here.caches);
  return out;
}

}  // namespace simloop::support
