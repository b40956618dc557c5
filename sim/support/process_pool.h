// Jobs in forked children, at most N at once: each child's output comes back
// through a pipe, its exit status through wait4, and none is left a zombie.
// SimGrid keeps one engine per process, so every caller that runs several
// simulations (sweeps, explain, speed --scaling, the engine tests) runs each
// in a child of its own through this pool.
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace simloop::proc {

// How one job's child ended.
struct Outcome {
  size_t job = 0;      // its index, 0 .. count-1
  std::string output;  // everything it wrote to its pipe
  int status = 0;      // as wait4 reports it
  rusage usage{};      // the child's own (its peak resident memory, its CPU time)
  std::chrono::steady_clock::time_point started;
  // Killed by the pool on a second interrupt or SIGTERM: not a result.
  bool stopped = false;

  bool exited() const;
  int exit_code() const;  // -1 unless it exited
  bool signaled() const;
  int signal() const;  // 0 unless a signal ended it
};

struct PoolOptions {
  int jobs = 1;  // children running at once, at least 1
  // While run() runs: the first SIGINT starts no more jobs and lets the
  // running ones finish; a second SIGINT, or a SIGTERM, kills them (their
  // outcomes say `stopped`). Children run in a process group of their own
  // (a terminal's Ctrl-C reaches the parent only, which decides what an
  // interrupt does to them), ignore SIGINT and die of SIGTERM. Off: no
  // handler is installed and children keep their parent's group and the
  // dispositions they inherit.
  bool handle_interrupts = false;
  // Descriptors a child must not keep open (locks, files being appended).
  std::vector<int> close_in_child;
  // How often on_tick runs while children run, in milliseconds.
  int tick_ms = 250;
};

// Runs jobs.
class ProcessPool {
 public:
  // Runs in the child: writes its result to `out_fd` and returns the exit
  // status. An exception leaves the child with status 1 (its message on
  // stderr). The child ends with _exit: no destructors, no atexit handlers.
  using Body = std::function<int(size_t job, int out_fd)>;

  struct Callbacks {
    std::function<void(const Outcome&)> on_done;       // in the parent, as each child ends
    std::function<void()> on_tick;                     // after each wait for children
    std::function<void(size_t running)> on_interrupt;  // on the first SIGINT
  };

  struct Summary {
    size_t started = 0, ended = 0;
    int interrupts = 0;   // SIGINTs and SIGTERMs received while running
    bool killed = false;  // running children were killed
  };

  explicit ProcessPool(PoolOptions o);
  ~ProcessPool();  // kills and reaps children still running (after an exception)
  ProcessPool(const ProcessPool&) = delete;
  ProcessPool& operator=(const ProcessPool&) = delete;

  // Runs jobs 0 .. count-1 in order of their index. If a callback throws, or
  // a pipe or fork fails, the running children are killed and reaped and the
  // exception propagates. Only one pool that handles interrupts may run at
  // a time.
  Summary run(size_t count, const Body& body, const Callbacks& cb = {});

  size_t running() const { return running_.size(); }

 private:
  struct Child {
    pid_t pid;
    Outcome out;
  };
  void start(size_t job, const Body& body);
  void kill_all();
  void stop_all();  // kill, reap and close: nothing left behind

  PoolOptions o_;
  std::map<int, Child> running_;  // by the read end of its pipe
  bool killed_ = false;
};

// One job in one child, no interrupt handling: the common case of a command
// or a test that needs a fresh process for a simulation.
Outcome run_one(const std::function<int(int out_fd)>& body);

// Writes all of `s` to `fd`, retrying interrupted writes; false if the
// descriptor stops taking it (the reader went away).
bool write_all(int fd, std::string_view s);

}  // namespace simloop::proc
