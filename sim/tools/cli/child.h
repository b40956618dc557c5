// One simulation in a forked child: SimGrid keeps one engine per process, so
// commands that run several simulations (explain, speed --scaling) give each
// its own process (proc::run_one) and get back the JSON it made.
#pragma once

#include <sys/resource.h>

#include <exception>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "sim/support/process_pool.h"

namespace simloop::cli {

struct ChildResult {
  // What `f` returned, or {"error": MESSAGE} if it threw; nothing if the
  // child died (a crash, a signal) before it could say.
  std::optional<nlohmann::json> doc;
  rusage usage{};  // the child's, e.g. its peak resident memory
};

template <class F>
ChildResult json_from_child(F&& f) {
  const proc::Outcome child = proc::run_one([&f](int fd) {
    std::string out;
    try {
      out = nlohmann::json(f()).dump();
    } catch (const std::exception& e) {
      out = nlohmann::json{{"error", e.what()}}.dump();
    }
    proc::write_all(fd, out);
    return 0;
  });
  ChildResult r;
  r.usage = child.usage;
  if (child.exit_code() == 0 && !child.output.empty()) r.doc = nlohmann::json::parse(child.output);
  return r;
}

}  // namespace simloop::cli
