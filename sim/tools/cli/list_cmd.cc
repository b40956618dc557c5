// simloop list: the shipped experiments, machines, stacks and layouts, each
// with its one-line description, grouped by kind.
#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <memory>

#include "sim/config/data_files.h"
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
  return 0;
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
      "experiment by their listed names.");
  list->add_option("--kind", *kinds,
                   "Only these kinds (repeatable): experiments, machines, stacks or layouts")
      ->check(CLI::IsMember(config::shipped_kinds()));
  commands.push_back({list, [kinds] { return list_cmd(*kinds); }});
}

}  // namespace simloop::cli
