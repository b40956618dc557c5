// simloop list: the shipped experiments, machines, stacks and layouts, each
// with its one-line description, grouped by kind.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <iostream>
#include <memory>

#include "sim/config/data_files.h"
#include "sim/config/host_profiles.h"
#include "sim/tools/cli/commands.h"

namespace simloop::cli {

namespace {

// How an experiment refers to a file of each kind.
const char* use_of(const std::string& kind) {
  if (kind == "experiments") return "simloop run NAME";
  if (kind == "machines") return "machine: NAME";
  if (kind == "stacks") return "stack: NAME";
  return "layout.kernel: NAME";
}

// The host profiles simloop calibrate host made (this user's), newest
// first: where, when, on what host, and the names that reach this host's.
void list_hosts(bool first) {
  const auto dir = config::hosts_dir();
  std::cout << fmt::format(
      "{}hosts (simloop calibrate host; machine: host, stack: host-linux, "
      "stack: host-bsd on the host it measured):\n",
      first ? "" : "\n");
  const auto all = config::host_profiles();
  if (all.empty())
    std::cout << fmt::format("  (none under {}; make this host's with simloop calibrate host)\n",
                             dir.empty() ? "$XDG_DATA_HOME/simloop/hosts" : dir.string());
  for (const auto& h : all) {
    std::cout << fmt::format("  {}  {}{}  {}\n", h.fingerprint, h.date,
                             h.this_host ? "  (this host)" : "", h.summary);
    std::cout << fmt::format(
        "  {:<12}  {}{}\n", "", h.dir.string(),
        h.this_host && !h.names.empty() ? fmt::format(": {}", fmt::join(h.names, ", ")) : "");
  }
}

int list_cmd(const std::vector<std::string>& kinds) {
  const auto root = config::data_root();
  const auto& all = config::shipped_kinds();
  bool first = true;
  for (const auto& kind : all) {
    if (!kinds.empty() && std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) continue;
    const auto files = config::shipped_files(root, kind);
    size_t width = 0;
    for (const auto& f : files) width = std::max(width, f.name.size());
    std::cout << fmt::format("{}{} ({}):\n", first ? "" : "\n", kind, use_of(kind));
    first = false;
    if (files.empty()) std::cout << "  (none)\n";
    for (const auto& f : files) {
      std::cout << fmt::format("  {:<{}}  {}\n", f.name, width, f.description);
      // A machine's prices hold for the host they were made for: say which.
      if (kind == "machines")
        if (const std::string origin = config::machine_origin(f.path); !origin.empty())
          std::cout << fmt::format("  {:<{}}  costs {}\n", "", width, origin);
    }
  }
  if (kinds.empty() || std::find(kinds.begin(), kinds.end(), "hosts") != kinds.end())
    list_hosts(first);
  return 0;
}

}  // namespace

namespace {
std::vector<std::string> list_kinds() {
  auto v = config::shipped_kinds();
  v.push_back("hosts");
  return v;
}
}  // namespace

void add_list(CLI::App& app, std::vector<Command>& commands) {
  auto kinds = std::make_shared<std::vector<std::string>>();
  auto* list = app.add_subcommand(
      "list",
      "List the shipped experiments, machines, stacks and layouts, each with its one-line\n"
      "description, grouped by kind. They are read from the data directory (SIMLOOP_DATA_DIR,\n"
      "else the installed share/simloop, else the source tree simloop was built from).\n"
      "An experiment is run by its listed path from any directory (a file of that path in\n"
      "the working directory comes first); machines, stacks and layouts are named in an\n"
      "experiment by their listed names. Last, the host profiles simloop calibrate host made\n"
      "(machine: host, stack: host-linux, stack: host-bsd on the host each measured).");
  list->add_option("--kind", *kinds,
                   "Only these kinds (repeatable): experiments, machines, stacks, layouts or\n"
                   "hosts (the host profiles of simloop calibrate host)")
      ->check(CLI::IsMember(list_kinds()));
  commands.push_back({list, [kinds] { return list_cmd(*kinds); }});
}

}  // namespace simloop::cli
