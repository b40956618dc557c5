// simloop: one program, one subcommand per job.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/personality.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "sim/report/safe_file.h"
#include "sim/support/input_error.h"
#include "sim/support/text.h"
#include "sim/support/yaml_input.h"
#include "sim/tools/cli/commands.h"
#include "sim/tools/measure/programs.h"
#include "version.h"

namespace {

// Some commands start the program again before anything else, changed in
// one way each:
// - A sweep forks a process for every point, and with lazy binding each one
//   looked up again every library function it called (the program itself is
//   linked -z now; its libraries are not). For the commands that sweep, every
//   library is bound at start-up, and the forked points inherit it.
// - `speed` times the real stack against its simulation. With the address
//   space laid out at random, the native stack's time per packet moved by up
//   to 10 % between processes (Linux loopback: 312-348 ns, each process
//   steady within 1 %), and the ratio with it; laid out the same every time
//   it moves by about 1 %. So `speed` turns the randomization off for itself
//   and its children, or on with --randomize-layout (whatever it started
//   with, e.g. under `setarch -R`).
void start_again_if_needed(char** argv) {
  std::string_view command;
  bool sweep_flag = false, randomize_flag = false;
  for (char** a = argv + 1; *a != nullptr; ++a) {
    const std::string_view arg(*a);
    if (command.empty() && !arg.starts_with('-')) command = arg;
    sweep_flag = sweep_flag || arg == "--sweep";
    randomize_flag = randomize_flag || arg == "--randomize-layout";
  }
  bool bind_now = false;
  if ((command == "sweep" || (command == "speed" && sweep_flag)) &&
      std::getenv("LD_BIND_NOW") == nullptr)
    bind_now = ::setenv("LD_BIND_NOW", "1", 1) == 0;
  const int persona = ::personality(0xffffffff);
  bool new_layout = false;
  if (command == "speed" && persona != -1) {
    const auto now = static_cast<unsigned>(persona);
    const unsigned want = randomize_flag ? now & ~ADDR_NO_RANDOMIZE : now | ADDR_NO_RANDOMIZE;
    new_layout = want != now && ::personality(want) != -1;
  }
  if (!bind_now && !new_layout) return;
  ::execv("/proc/self/exe", argv);
  // It could not start again: go on as it is.
  if (bind_now) ::unsetenv("LD_BIND_NOW");
  if (new_layout) ::personality(static_cast<unsigned>(persona));
}

}  // namespace

int main(int argc, char** argv) {
  start_again_if_needed(argv);
  CLI::App app{
      "simloop: a discrete-event simulator of a host network stack.\n"
      "It predicts small-packet transmit rates (kpps) around a real mbuf stack\n"
      "and compares the predictions with measured runs."};
  // "Usage: simloop ..." however it was started, and a version line help2man
  // reads as name and version.
  app.name("simloop");
  app.set_version_flag("--version", std::string("simloop ") + SIMLOOP_VERSION);
  app.footer(
      "Exit status: 0 success, 2 bad input (the message names the file, line, column and key,\n"
      "or the option), 3 the run ended early (e.g. an alignment fault), 4 an output could not\n"
      "be written (e.g. a full disk: the message names the file and the system's reason).");
  app.require_subcommand(1);
  app.fallthrough();
  int verbosity = 0;
  bool quiet = false;
  app.add_flag("-v,--verbose", verbosity, "More log output (-vv for trace)");
  app.add_flag("-q,--quiet", quiet, "Only warnings and errors on the log");

  std::vector<simloop::cli::Command> commands;
  simloop::cli::add_run(app, commands);
  simloop::cli::add_explain(app, commands);
  simloop::cli::add_speed(app, commands);
  simloop::cli::add_measure(app, commands);
  simloop::cli::add_plot(app, commands);
  simloop::cli::add_sweep(app, commands);
  simloop::cli::add_calibrate(app, commands);
  simloop::cli::add_layout(app, commands);
  simloop::cli::add_icache(app, commands);
  simloop::cli::add_list(app, commands);

  if (argc >= 2 && std::string_view(argv[1]) == simloop::cli::kCompleteCommand)
    return simloop::cli::complete_cmd(app, {argv + 2, argv + argc});

  // A word where the subcommand goes that names none: say so, and which
  // was meant (CLI11 would only say that a subcommand is required).
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") break;
    if (!arg.empty() && arg[0] == '-') continue;
    std::vector<std::string> names;
    for (const auto* sub : app.get_subcommands({})) names.push_back(sub->get_name());
    if (std::find(names.begin(), names.end(), arg) != names.end()) break;
    std::string msg =
        fmt::format("simloop: unknown subcommand '{}'", simloop::config::printable(arg));
    if (const auto near = simloop::support::closest(arg, names, 2); !near.empty())
      msg += fmt::format("; did you mean '{}'?", near);
    std::fprintf(stderr, "[error] %s (subcommands: %s; see simloop --help)\n", msg.c_str(),
                 fmt::format("{}", fmt::join(names, ", ")).c_str());
    return 2;
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version print and succeed; a bad command line is bad
    // input, said on an [error] line like every other refusal.
    if (e.get_exit_code() == 0) return app.exit(e);
    std::string where = "simloop";
    for (const CLI::App* sub = &app; sub != nullptr;) {
      const auto parsed = sub->get_subcommands();
      sub = parsed.empty() ? nullptr : parsed.front();
      if (sub != nullptr) where += " " + sub->get_name();
    }
    std::fprintf(stderr, "[error] %s: %s (see %s --help)\n", where.c_str(), e.what(),
                 where.c_str());
    return 2;
  }

  // Logs go to stderr so that tables and CSV on stdout stay clean.
  auto logger = spdlog::stderr_color_mt("simloop");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("[%^%l%$] %v");
  spdlog::set_level(quiet            ? spdlog::level::warn
                    : verbosity >= 2 ? spdlog::level::trace
                    : verbosity == 1 ? spdlog::level::debug
                                     : spdlog::level::info);

  for (const auto& cmd : commands) {
    if (!cmd.app->parsed()) continue;
    try {
      return cmd.run();
    } catch (const simloop::cli::UserError& e) {
      spdlog::error("{}", e.what());
      return e.status;
    } catch (const simloop::config::ConfigError& e) {  // bad input a command did not wrap
      spdlog::error("{}", e.what());
      return 2;
    } catch (const simloop::report::OutputRefused& e) {  // a link, a device, a directory
      spdlog::error("{}", e.what());
      return 2;
    } catch (const simloop::report::WriteError& e) {
      spdlog::error("{}", e.what());
      return simloop::report::kWriteFailedStatus;
    } catch (const simloop::measure::Stopped& e) {
      // As a shell expects of a program a signal ended: 128 + its number.
      spdlog::error("{}", e.what());
      return 128 + e.signal;
    } catch (const std::exception& e) {
      spdlog::error("{}", e.what());
      return 1;
    }
  }
  return 2;
}
