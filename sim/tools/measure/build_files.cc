#include "sim/tools/measure/build_files.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string_view>

#include "sim/layout/build.h"
#include "sim/support/input_error.h"
#include "sim/support/input_file.h"
#include "sim/tools/measure/harness_run.h"
#include "sim/tools/measure/programs.h"

namespace simloop::measure {

std::string read_build_file(const std::string& file) {
  try {
    return models::read_text_file(file);
  } catch (const models::LayoutError& e) {
    throw config::ConfigError(e.what());
  }
}

std::string read_nm_map(const std::string& file) {
  // An ordinary file, before it is opened to look at its first bytes: a
  // FIFO would hold the open up (read_build_file words the refusal).
  if (!support::input_problem(file).empty()) return read_build_file(file);
  std::ifstream in(file, std::ios::binary);
  char magic[4] = {};
  if (in && in.read(magic, sizeof magic) && std::string_view(magic, 4) == "\177ELF") {
    try {
      return nm_output(file);
    } catch (const Stopped&) {
      throw;  // asked to stop: not a bad file
    } catch (const std::runtime_error& e) {
      throw config::ConfigError(fmt::format("{}: cannot list its symbols: {}", file, e.what()));
    }
  }
  return read_build_file(file);
}

std::multimap<std::string, std::string> read_owners(const std::string& file) {
  std::istringstream in(read_build_file(file));
  try {
    return models::load_owners(in, file);
  } catch (const models::LayoutError& e) {
    throw config::ConfigError(e.what());
  }
}

std::multimap<std::string, std::string> program_owners(const std::set<std::string>& loops,
                                                       const std::string& owners_file,
                                                       bool owners_given,
                                                       const std::string& profile) {
  if (owners_given) {
    auto owners = read_owners(owners_file);
    if (std::none_of(owners.begin(), owners.end(),
                     [](const auto& so) { return so.second == "user_loop"; }))
      throw config::ConfigError(fmt::format(
          "{}: no function is owned by user_loop, and a program's iterations run only its loop: "
          "name the loop (SYMBOL user_loop), or give no --owners",
          owners_file));
    return owners;
  }
  if (loops.empty())
    throw config::ConfigError(fmt::format(
        "{}: no loop in the profile (no function that runs every iteration without being "
        "called each time): profile the program again with more iterations, or give --owners",
        profile));
  std::multimap<std::string, std::string> owners;
  for (const auto& loop : loops) owners.emplace(loop, "user_loop");
  return owners;
}

}  // namespace simloop::measure
