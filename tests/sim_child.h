// Runs a simulation in a forked child (SimGrid keeps global state per
// process) and returns the JSON the child produced.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace simloop::testing {

template <class F>
nlohmann::json in_child(F f) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("pipe");
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    std::string out;
    try {
      out = f().dump();
    } catch (const std::exception& e) {
      out = nlohmann::json{{"exception", e.what()}}.dump();
    }
    size_t off = 0;
    while (off < out.size()) {
      const ssize_t n = write(fds[1], out.data() + off, out.size() - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    _exit(0);
  }
  close(fds[1]);
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;)
    text.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || text.empty())
    throw std::runtime_error("simulation child failed");
  nlohmann::json j = nlohmann::json::parse(text);
  if (j.contains("exception")) throw std::runtime_error(j["exception"].get<std::string>());
  return j;
}

}  // namespace simloop::testing
