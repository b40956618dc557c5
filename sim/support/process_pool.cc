#include "sim/support/process_pool.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <stdexcept>

namespace simloop::proc {

namespace {

volatile std::sig_atomic_t g_interrupts = 0;
volatile std::sig_atomic_t g_terminate = 0;
bool g_handling = false;     // a pool that handles interrupts is running
bool g_hup_ignored = false;  // SIGHUP was ignored (nohup): it stays so, here and in children

extern "C" void on_signal(int sig) {
  if (sig == SIGTERM || sig == SIGHUP) g_terminate = 1;
  g_interrupts = g_interrupts + 1;
}

// SIGINT, SIGTERM and SIGHUP counted while it lives; the old handlers back
// after. A hang-up ends the runs as SIGTERM does: the children, in groups of
// their own, would not see the terminal close and would run on unread.
class InterruptHandlers {
 public:
  explicit InterruptHandlers(bool on) : on_(on) {
    if (!on_) return;
    if (g_handling) throw std::logic_error("two process pools handle interrupts at once");
    g_handling = true;
    g_interrupts = 0;
    g_terminate = 0;
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;  // no SA_RESTART: poll() returns at once
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
    // Under nohup a hang-up must not end the runs: an ignored SIGHUP stays
    // ignored.
    sigaction(SIGHUP, nullptr, &old_hup_);
    g_hup_ignored = old_hup_.sa_handler == SIG_IGN;
    if (!g_hup_ignored) sigaction(SIGHUP, &sa, nullptr);
  }
  ~InterruptHandlers() {
    if (!on_) return;
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
    sigaction(SIGHUP, &old_hup_, nullptr);
    g_handling = false;
  }
  InterruptHandlers(const InterruptHandlers&) = delete;
  InterruptHandlers& operator=(const InterruptHandlers&) = delete;

  int interrupts() const { return on_ ? static_cast<int>(g_interrupts) : 0; }
  bool terminate() const { return on_ && g_terminate != 0; }

 private:
  bool on_;
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
  struct sigaction old_hup_ {};
};

int reap(pid_t pid, rusage* usage) {
  int status = 0;
  while (::wait4(pid, &status, 0, usage) < 0 && errno == EINTR) {
  }
  return status;
}

}  // namespace

bool Outcome::exited() const {
  return WIFEXITED(status);
}
int Outcome::exit_code() const {
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
bool Outcome::signaled() const {
  return WIFSIGNALED(status);
}
int Outcome::signal() const {
  return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

bool write_all(int fd, std::string_view s) {
  size_t off = 0;
  while (off < s.size()) {
    const ssize_t w = ::write(fd, s.data() + off, s.size() - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    off += static_cast<size_t>(w);
  }
  return true;
}

ProcessPool::ProcessPool(PoolOptions o) : o_(std::move(o)) {
  if (o_.jobs < 1) o_.jobs = 1;
}

ProcessPool::~ProcessPool() {
  stop_all();
}

void ProcessPool::start(size_t job, const Body& body) {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error(fmt::format("pipe: {}", std::strerror(errno)));
  // A child must not inherit (and later print) output buffered here.
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  const auto started = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    throw std::runtime_error(fmt::format("fork: {}", std::strerror(err)));
  }
  if (pid == 0) {
    ::close(fds[0]);
    for (const auto& [fd, c] : running_) ::close(fd);
    for (const int fd : o_.close_in_child)
      if (fd >= 0) ::close(fd);
    if (o_.handle_interrupts) {
      // A process group of its own: a terminal's Ctrl-C (SIGINT to the
      // foreground group) reaches only the parent, which decides. Ignoring
      // SIGINT is not enough: code the child runs (SimGrid) installs its
      // own handler that ends the process.
      ::setpgid(0, 0);
      std::signal(SIGINT, SIG_IGN);
      std::signal(SIGTERM, SIG_DFL);
      std::signal(SIGHUP, g_hup_ignored ? SIG_IGN : SIG_DFL);
    }
    int rc = 1;
    try {
      rc = body(job, fds[1]);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s\n", e.what());
    } catch (...) {
    }
    ::close(fds[1]);
    std::fflush(nullptr);
    ::_exit(rc);
  }
  // Here too, so that no signal to our group reaches the child before it
  // has left it.
  if (o_.handle_interrupts) ::setpgid(pid, pid);
  // Only the child holds the write end, so its exit is our end of file.
  ::close(fds[1]);
  Child c{pid, {}};
  c.out.job = job;
  c.out.started = started;
  running_.emplace(fds[0], std::move(c));
}

void ProcessPool::kill_all() {
  for (const auto& [fd, c] : running_) ::kill(c.pid, SIGKILL);
}

void ProcessPool::stop_all() {
  kill_all();
  for (auto& [fd, c] : running_) {
    reap(c.pid, nullptr);
    ::close(fd);
  }
  running_.clear();
}

ProcessPool::Summary ProcessPool::run(size_t count, const Body& body, const Callbacks& cb) {
  const InterruptHandlers signals(o_.handle_interrupts);
  killed_ = false;
  Summary sum;
  bool told = false;
  try {
    while (sum.started < count || !running_.empty()) {
      if (signals.interrupts() > 0 && !told) {
        told = true;
        if (cb.on_interrupt) cb.on_interrupt(running_.size());
      }
      if ((signals.interrupts() > 1 || signals.terminate()) && !killed_) {
        killed_ = true;
        kill_all();
      }
      while (signals.interrupts() == 0 && sum.started < count &&
             static_cast<int>(running_.size()) < o_.jobs)
        start(sum.started++, body);
      if (running_.empty()) break;
      std::vector<pollfd> pfds;
      for (const auto& [fd, c] : running_) pfds.push_back({fd, POLLIN, 0});
      const int n = ::poll(pfds.data(), pfds.size(), o_.tick_ms);
      if (n < 0 && errno != EINTR)
        throw std::runtime_error(fmt::format("poll: {}", std::strerror(errno)));
      for (const auto& pf : pfds) {
        if (n <= 0 || (pf.revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
        Child& c = running_.at(pf.fd);
        char buf[65536];
        const ssize_t got = ::read(pf.fd, buf, sizeof buf);
        if (got > 0) {
          c.out.output.append(buf, static_cast<size_t>(got));
          continue;
        }
        if (got < 0 && errno == EINTR) continue;
        Outcome done = std::move(c.out);
        done.status = reap(c.pid, &done.usage);
        done.stopped = killed_ && done.signaled();
        ::close(pf.fd);
        running_.erase(pf.fd);
        ++sum.ended;
        if (cb.on_done) cb.on_done(done);
      }
      if (cb.on_tick) cb.on_tick();
    }
  } catch (...) {
    stop_all();
    throw;
  }
  sum.interrupts = signals.interrupts();
  sum.killed = killed_;
  return sum;
}

Outcome run_one(const std::function<int(int out_fd)>& body) {
  ProcessPool pool(PoolOptions{});
  Outcome out;
  ProcessPool::Callbacks cb;
  cb.on_done = [&out](const Outcome& o) { out = o; };
  pool.run(
      1, [&body](size_t, int fd) { return body(fd); }, cb);
  return out;
}

}  // namespace simloop::proc
