// Each subcommand registers its options on the CLI11 app and returns what to
// run once parsing has succeeded and logging is set up.
#pragma once

#include <CLI/CLI.hpp>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/config/data_root.h"
#include "sim/config/experiment.h"
#include "sim/engine/simulation.h"
#include "sim/report/csv_table.h"
#include "sim/tools/measure/native.h"

#ifndef SIMLOOP_SOURCE_DIR
#define SIMLOOP_SOURCE_DIR "."
#endif

namespace simloop::cli {

// A shipped file (an experiment, a plotting script): from the working
// directory if it is a checkout, else from simloop's data directory (the
// installed share/simloop, or the tree simloop was built from).
inline std::filesystem::path tree_file(const std::string& relative) {
  if (std::filesystem::is_regular_file(relative)) return relative;
  return config::data_root() / relative;
}

// The owners file a command was given (--owners), or the harness's own.
inline std::string owners_file(const std::string& given) {
  return given.empty() ? tree_file("configs/harness/owners.txt").string() : given;
}

// An experiment named on the command line: a relative path from the
// working directory if it is there, else from the data directory (so that
// `simloop run experiments/netmap-2012.yaml` works from any directory); an
// info line says which was used. Empty stays empty.
std::filesystem::path experiment_path(const std::string& given);

// Warns, once a process, when `x` prices a machine measured on another
// host than this one, naming the facts that differ.
void warn_if_priced_elsewhere(const config::Experiment& x);
// Warns once when a machine of one fit of calibrate host goes with the
// stack of the other (machine: host with stack: host-bsd).
void warn_if_fits_mixed(const config::Experiment& x);

// The experiment simloop runs when none is named.
inline constexpr const char* kDefaultRunExperiment = "experiments/seed-athlon.yaml";

// Loads an experiment given on the command line (empty: the default), with
// its --set overrides and --unset keys, and logs what loading left out of
// the file; bad input is a UserError with exit status 2.
config::Experiment load_user_experiment(const std::string& file,
                                        const std::vector<std::string>& sets,
                                        const std::vector<std::string>& unset = {});

// What `simloop run` writes as <name>.json: versions, the result row, the
// per-function detail and the resolved configuration.
nlohmann::json run_document(const config::Experiment& x, const engine::SimResult& r);

struct Command {
  CLI::App* app;
  std::function<int()> run;
};

// An error the user can fix: printed as is, exit status `status`.
struct UserError : std::runtime_error {
  UserError(const std::string& what, int exit_status = 2)
      : std::runtime_error(what), status(exit_status) {}
  int status;
};

void add_measure(CLI::App& app, std::vector<Command>& commands);
void add_run(CLI::App& app, std::vector<Command>& commands);
void add_explain(CLI::App& app, std::vector<Command>& commands);
void add_speed(CLI::App& app, std::vector<Command>& commands);
void add_plot(CLI::App& app, std::vector<Command>& commands);
void add_sweep(CLI::App& app, std::vector<Command>& commands);
void add_calibrate(CLI::App& app, std::vector<Command>& commands);
// `simloop calibrate host`, registered by add_calibrate.
void add_calibrate_host(CLI::App& calibrate, std::vector<Command>& commands);
void add_layout(CLI::App& app, std::vector<Command>& commands);
void add_icache(CLI::App& app, std::vector<Command>& commands);
void add_list(CLI::App& app, std::vector<Command>& commands);
// `simloop __complete WORD...`: prints what may stand in place of the last
// word after the others (scripts/simloop-completion.bash calls it). Not a
// subcommand: main() answers it before parsing, and --help does not list it.
inline constexpr const char* kCompleteCommand = "__complete";
int complete_cmd(const CLI::App& app, const std::vector<std::string>& words);
// Under `simloop measure`: cachegrind and profile.
void add_measure_valgrind(CLI::App& measure, std::vector<Command>& commands);
void add_measure_kernel(CLI::App& measure, std::vector<Command>& commands);
// `simloop measure microbench`: calibrate host's microbenchmarks alone.
void add_measure_microbench(CLI::App& measure, std::vector<Command>& commands);

// Measured rows on standard output: a table of `columns`, CSV or JSON.
void print_rows(const std::vector<report::Row>& rows, const std::string& format,
                const std::vector<std::string>& columns);

// Reads a whole input file that must be UTF-8 text of at most `max_bytes`;
// throws UserError (exit status 2) naming the file (and line and column of
// a byte that is not text) and saying it expected `what`.
std::string read_input_file(const std::string& path, const std::string& what, size_t max_bytes);
// Refuses a file that is not a CSV of result rows: not text, no header, a
// missing `required` column (with "did you mean"), a row of another width,
// a non-number in a `numeric` column, no rows. Throws UserError naming the
// file, line and column.
// A file larger than `max_bytes` is refused before it is read, the message
// naming the limit and `limit_for` (what it bounds, e.g. "the most simloop
// plot draws").
void check_results_csv(const std::string& path, const std::vector<std::string>& required,
                       const std::vector<std::string>& numeric,
                       size_t max_bytes = report::kMaxCsvBytes, const std::string& limit_for = "");

// The largest measured CSV calibrate and compare read, and the largest
// results CSV plot draws: past them a run takes minutes and gigabytes (every
// repeat is resampled; every row is held in Python), so they are refused
// with exit status 2 (README: "Input sizes").
inline constexpr size_t kMaxMeasuredCsvBytes = size_t{8} << 20;
inline constexpr size_t kMaxPlotCsvBytes = size_t{16} << 20;

}  // namespace simloop::cli
