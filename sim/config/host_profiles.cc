#include "sim/config/host_profiles.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <system_error>

#include "sim/support/host.h"
#include "sim/support/input_file.h"
#include "sim/support/yaml_input.h"

namespace simloop::config {

namespace fs = std::filesystem;

fs::path hosts_dir() {
  const char* xdg = std::getenv("XDG_DATA_HOME");
  if (xdg != nullptr && *xdg == '/') return fs::path(xdg) / "simloop" / "hosts";
  const char* home = std::getenv("HOME");
  if (home != nullptr && *home != '\0') return fs::path(home) / ".local/share/simloop/hosts";
  return {};
}

std::vector<std::string> host_profile_files(const std::string& kind, const std::string& ref) {
  if (kind == "machines") {
    if (ref == "host") return {"host-linux-machine.yaml", "host-bsd-machine.yaml"};
    if (ref == "host-linux" || ref == "host-bsd") return {ref + "-machine.yaml"};
  } else if (kind == "stacks") {
    if (ref == "host-linux" || ref == "host-bsd") return {ref + "-stack.yaml"};
  }
  return {};
}

HostProfileRef find_host_profile(const std::string& kind, const std::string& ref) {
  const auto names = host_profile_files(kind, ref);
  const fs::path root = hosts_dir();
  const auto here = support::this_host();
  const std::string fp = here.fingerprint();
  if (root.empty())
    return {std::nullopt, fmt::format("'{}' names this machine's host profile, but neither "
                                      "XDG_DATA_HOME nor HOME says where it would be",
                                      ref)};
  const fs::path dir = root / fp;
  for (const auto& n : names)
    if (support::input_problem(dir / n).empty()) return {dir / n, ""};
  std::error_code ec;
  const bool any = fs::is_directory(dir, ec);
  const std::string what = kind == "machines" ? "machine" : "stack";
  return {
      std::nullopt,
      any ? fmt::format("'{}': this machine's host profile {} has no {} {} (its kernel part "
                        "was skipped?); make it again with `simloop calibrate host` (as root, "
                        "with perf, for the Linux stack)",
                        ref, printable(dir.string(), 200), what, fmt::join(names, " or "))
          : fmt::format("'{}' names this machine's host profile, and there is none for this "
                        "host ({}: {}) under {}; make it with `simloop calibrate host` ("
                        "one to three minutes)",
                        ref, fp, printable(here.summary(), 200), printable(root.string(), 200))};
}

namespace {

std::string mtime_date(const fs::path& p) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) return "";
  std::tm tm{};
  if (gmtime_r(&st.st_mtime, &tm) == nullptr) return "";
  char buf[32];
  return std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm) > 0 ? buf : "";
}

}  // namespace

std::vector<HostProfile> host_profiles() {
  std::vector<HostProfile> out;
  const fs::path root = hosts_dir();
  if (root.empty()) return out;
  const std::string here = support::this_host().fingerprint();
  std::error_code ec;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code e2;
    if (!it->is_directory(e2) || it->is_symlink(e2)) continue;
    HostProfile h;
    h.dir = it->path();
    h.fingerprint = h.dir.filename().string();
    h.this_host = h.fingerprint == here;
    const fs::path info = h.dir / "host.json";
    try {
      if (support::input_problem(info).empty()) {
        std::ifstream f(info);
        const auto j = nlohmann::json::parse(f);
        h.date = j.value("date", "");
        h.summary = j.value("summary", "");
      }
    } catch (const std::exception&) {
    }
    if (h.date.empty()) h.date = mtime_date(h.dir);
    for (const std::string kind : {"machines", "stacks"})
      for (const std::string ref : {"host", "host-linux", "host-bsd"}) {
        const auto files = host_profile_files(kind, ref);
        if (std::any_of(files.begin(), files.end(), [&](const std::string& n) {
              return support::input_problem(h.dir / n).empty();
            }))
          h.names.push_back(fmt::format("{}: {}", kind == "machines" ? "machine" : "stack", ref));
      }
    h.summary = printable(h.summary, 200);
    out.push_back(std::move(h));
  }
  std::sort(out.begin(), out.end(),
            [](const HostProfile& a, const HostProfile& b) { return a.date > b.date; });
  return out;
}

}  // namespace simloop::config
