// simloop: one program, one subcommand per job.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "cli/commands.h"
#include "version.h"

int main(int argc, char** argv) {
  CLI::App app{
      "simloop: a discrete-event simulator of a host network stack.\n"
      "It predicts small-packet transmit rates (kpps) around a real mbuf stack\n"
      "and compares the predictions with measured runs."};
  app.set_version_flag("--version", std::string(SIMLOOP_VERSION));
  app.require_subcommand(1);
  app.fallthrough();
  int verbosity = 0;
  bool quiet = false;
  app.add_flag("-v,--verbose", verbosity, "More log output (-vv for trace)");
  app.add_flag("-q,--quiet", quiet, "Only warnings and errors on the log");

  std::vector<simloop::cli::Command> commands;
  simloop::cli::add_run(app, commands);
  simloop::cli::add_speed(app, commands);
  simloop::cli::add_measure(app, commands);
  simloop::cli::add_plot(app, commands);
  simloop::cli::add_sweep(app, commands);
  simloop::cli::add_calibrate(app, commands);
  simloop::cli::add_layout(app, commands);
  simloop::cli::add_icache(app, commands);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
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
    } catch (const std::exception& e) {
      spdlog::error("{}", e.what());
      return 1;
    }
  }
  return 2;
}
