// Running the programs a measurement uses (valgrind, perf): a private scratch
// directory, and a child whose output goes to files there.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace simloop::measure {

// A scratch directory of an unpredictable name, removed with everything in it.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& prefix = "simloop");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

// A program stopped because we were asked to stop (SIGINT, SIGTERM or
// SIGHUP while it ran): not a failure of the program, so not to be taken
// as one (calibrate host goes on without the kernel when measure kernel
// fails, never when it is stopped).
struct Stopped : std::runtime_error {
  Stopped(const std::string& what, int sig) : std::runtime_error(what), signal(sig) {}
  int signal;  // the one that asked us to stop
};

// Runs argv with stdout to `out` (discarded if empty) and stderr to `err`;
// throws unless it exits with status 0, quoting the end of `err`; throws
// Stopped, having stopped it, on SIGINT, SIGTERM or SIGHUP where nothing
// else handles them (the program's temporary files go under the directory
// of `err`, ours).
void run_program(const std::vector<std::string>& argv, const std::filesystem::path& err,
                 const std::filesystem::path& out = {});

// The last `n` lines of a file, each on a line of its own, indented.
std::string last_lines(const std::filesystem::path& file, int n);

// The first `prog` on PATH that can be run (then /usr/sbin and /sbin), or
// "": its path.
std::string find_program(const std::string& prog);

}  // namespace simloop::measure
