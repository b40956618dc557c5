// simloop plot: draws result files with the matplotlib scripts in plots/.
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <memory>

#include "cli/commands.h"

#ifndef SIMLOOP_SOURCE_DIR
#define SIMLOOP_SOURCE_DIR "."
#endif

namespace simloop::cli {

namespace fs = std::filesystem;

namespace {

// Debian's interpreter: the one that has python3-matplotlib.
constexpr const char* kPython = "/usr/bin/python3";

fs::path plot_script() {
  for (const fs::path& p : {fs::path("plots/simloop_plot.py"),
                            fs::path(SIMLOOP_SOURCE_DIR) / "plots/simloop_plot.py"})
    if (fs::is_regular_file(p)) return p;
  throw UserError("cannot find plots/simloop_plot.py (run from the source tree)", 1);
}

int run_plot(const std::string& results, const std::string& kind, const std::string& output) {
  if (!fs::is_regular_file(results)) throw UserError(results + ": no such results file", 2);
  const std::string script = plot_script().string();
  std::vector<std::string> args = {kPython, script, results};
  if (!kind.empty()) args.insert(args.end(), {"--kind", kind});
  if (!output.empty()) args.insert(args.end(), {"-o", output});
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw UserError("cannot start the plotting script", 1);
  if (pid == 0) {
    execv(kPython, argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) == 127)
    throw UserError(std::string(kPython) + " with matplotlib is needed (apt-get install python3-matplotlib)", 1);
  return WEXITSTATUS(status);
}

}  // namespace

void add_plot(CLI::App& app, std::vector<Command>& commands) {
  struct Args {
    std::string results, kind, output;
  };
  auto a = std::make_shared<Args>();
  auto* plot = app.add_subcommand(
      "plot",
      "Draw a results CSV as PNG and SVG next to it. The kind is chosen from the columns:\n"
      "breakdown (cycles per packet by stage) for single runs, payload (kpps against payload\n"
      "size, with error bars over repeats) when the payload varies.");
  plot->add_option("results", a->results, "CSV written by simloop run or simloop measure")->required();
  plot->add_option("--kind", a->kind, "breakdown or payload")->check(CLI::IsMember({"breakdown", "payload"}));
  plot->add_option("-o,--output", a->output, "Output file stem (default: next to the results)");
  commands.push_back({plot, [a] { return run_plot(a->results, a->kind, a->output); }});
}

}  // namespace simloop::cli
