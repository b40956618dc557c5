// Runs a simulation in a forked child (SimGrid keeps global state per
// process) and returns the JSON the child produced.
#pragma once

#include <exception>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "sim/support/process_pool.h"

namespace simloop::testing {

template <class F>
nlohmann::json in_child(F f) {
  const proc::Outcome child = proc::run_one([&f](int fd) {
    std::string out;
    try {
      out = f().dump();
    } catch (const std::exception& e) {
      out = nlohmann::json{{"exception", e.what()}}.dump();
    }
    proc::write_all(fd, out);
    return 0;
  });
  if (child.exit_code() != 0 || child.output.empty())
    throw std::runtime_error("simulation child failed");
  nlohmann::json j = nlohmann::json::parse(child.output);
  if (j.contains("exception")) throw std::runtime_error(j["exception"].get<std::string>());
  return j;
}

}  // namespace simloop::testing
