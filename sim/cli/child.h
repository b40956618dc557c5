// One simulation in a forked child: SimGrid keeps one engine per process, so
// commands that run several simulations (explain, speed --scaling) give each
// its own process and get back the JSON it made.
#pragma once

#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>

namespace simloop::cli {

struct ChildResult {
  // What `f` returned, or {"error": MESSAGE} if it threw; nothing if the
  // child died (a crash, a signal) before it could say.
  std::optional<nlohmann::json> doc;
  rusage usage{};  // the child's, e.g. its peak resident memory
};

template <class F>
ChildResult json_from_child(F&& f) {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error(fmt::format("pipe: {}", std::strerror(errno)));
  std::cout.flush();  // a child must not inherit (and later print) buffered output
  std::fflush(stdout);
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(fmt::format("fork: {}", std::strerror(errno)));
  if (pid == 0) {
    ::close(fds[0]);
    std::string out;
    try {
      out = nlohmann::json(f()).dump();
    } catch (const std::exception& e) {
      out = nlohmann::json{{"error", e.what()}}.dump();
    }
    for (size_t off = 0; off < out.size();) {
      const ssize_t n = ::write(fds[1], out.data() + off, out.size() - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string text;
  char buf[65536];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;)
    text.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  ChildResult r;
  int status = 0;
  while (::wait4(pid, &status, 0, &r.usage) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && !text.empty())
    r.doc = nlohmann::json::parse(text);
  return r;
}

}  // namespace simloop::cli
