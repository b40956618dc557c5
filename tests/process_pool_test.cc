// The process pool: jobs in forked children, N at a time, their output and
// exit status collected per job, interrupts handled, no zombie left.
#include "sim/support/process_pool.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <stdexcept>
#include <string>
#include <vector>

namespace simloop::proc {
namespace {

// No child of this process is left, running or unreaped.
bool no_children() {
  errno = 0;
  return ::waitpid(-1, nullptr, WNOHANG) < 0 && errno == ECHILD;
}

PoolOptions options(int jobs, bool interrupts = false, int tick_ms = 5) {
  PoolOptions o;
  o.jobs = jobs;
  o.handle_interrupts = interrupts;
  o.tick_ms = tick_ms;
  return o;
}

ProcessPool::Callbacks collect(std::vector<Outcome>& out) {
  ProcessPool::Callbacks cb;
  cb.on_done = [&out](const Outcome& o) { out.push_back(o); };
  return cb;
}

std::vector<Outcome> run_all(ProcessPool& pool, size_t n, const ProcessPool::Body& body) {
  std::vector<Outcome> out;
  pool.run(n, body, collect(out));
  std::sort(out.begin(), out.end(),
            [](const Outcome& a, const Outcome& b) { return a.job < b.job; });
  return out;
}

// Raises `sig` in the parent once, on the pool's first tick.
void raise_on_first_tick(ProcessPool::Callbacks& cb, int sig) {
  cb.on_tick = [sig, sent = false]() mutable {
    if (!sent) {
      sent = true;
      ::raise(sig);
    }
  };
}

TEST(ProcessPool, CollectsEachJobsOutputAndRunsAtMostNAtOnce) {
  ProcessPool pool(options(3));
  size_t most = 0;
  std::vector<Outcome> out;
  ProcessPool::Callbacks cb;
  cb.on_done = [&](const Outcome& o) {
    most = std::max(most, pool.running() + 1);
    out.push_back(o);
  };
  cb.on_tick = [&] { most = std::max(most, pool.running()); };
  const auto sum = pool.run(
      10,
      [](size_t job, int fd) {
        ::usleep(static_cast<useconds_t>(20000 + 5000 * (job % 3)));
        write_all(fd, "job " + std::to_string(job) + " pid " + std::to_string(::getpid()));
        return 0;
      },
      cb);
  EXPECT_EQ(sum.started, 10u);
  EXPECT_EQ(sum.ended, 10u);
  EXPECT_EQ(sum.interrupts, 0);
  ASSERT_EQ(out.size(), 10u);
  EXPECT_LE(most, 3u);
  EXPECT_GE(most, 2u);  // 10 jobs of 20 ms or more: more than one ran at a time
  std::sort(out.begin(), out.end(),
            [](const Outcome& a, const Outcome& b) { return a.job < b.job; });
  std::vector<std::string> pids;
  for (size_t i = 0; i < out.size(); ++i) {
    EXPECT_EQ(out[i].job, i);
    EXPECT_TRUE(out[i].exited());
    EXPECT_EQ(out[i].exit_code(), 0);
    EXPECT_FALSE(out[i].stopped);
    ASSERT_EQ(out[i].output.rfind("job " + std::to_string(i) + " pid ", 0), 0u) << out[i].output;
    pids.push_back(out[i].output.substr(out[i].output.find("pid ")));
  }
  std::sort(pids.begin(), pids.end());
  EXPECT_EQ(std::unique(pids.begin(), pids.end()), pids.end())
      << "each job had a process of its own";
  EXPECT_TRUE(no_children());
}

TEST(ProcessPool, ReportsNonZeroExitsCrashesAndExceptions) {
  ProcessPool pool(options(2));
  const auto out = run_all(pool, 4, [](size_t job, int fd) -> int {
    write_all(fd, "partial");
    if (job == 1) return 3;
    if (job == 2) ::raise(SIGKILL);
    if (job == 3) throw std::runtime_error("no result");
    return 0;
  });
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].exit_code(), 0);
  EXPECT_EQ(out[1].exit_code(), 3);
  EXPECT_FALSE(out[1].signaled());
  EXPECT_TRUE(out[2].signaled());
  EXPECT_EQ(out[2].signal(), SIGKILL);
  EXPECT_EQ(out[2].exit_code(), -1);
  EXPECT_FALSE(out[2].stopped);  // it died on its own: a crash, not a stop
  EXPECT_EQ(out[3].exit_code(), 1);
  for (const auto& o : out) EXPECT_EQ(o.output, "partial");
  EXPECT_TRUE(no_children());
}

TEST(ProcessPool, ALotOfOutputDoesNotDeadlock) {
  // Far more than a pipe holds (64 KiB): a child blocks on its write until
  // the parent reads, from several children at once.
  constexpr size_t kBytes = 8u << 20;
  ProcessPool pool(options(3));
  const auto out = run_all(pool, 3, [](size_t job, int fd) {
    const std::string s(kBytes, static_cast<char>('a' + job));
    return write_all(fd, s) ? 0 : 1;
  });
  ASSERT_EQ(out.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(out[i].exit_code(), 0);
    ASSERT_EQ(out[i].output.size(), kBytes);
    EXPECT_EQ(out[i].output.find_first_not_of(static_cast<char>('a' + i)), std::string::npos);
  }
}

TEST(ProcessPool, AThrowingCallbackStopsAndReapsTheRunningChildren) {
  ProcessPool pool(options(3));
  ProcessPool::Callbacks throwing;
  throwing.on_done = [](const Outcome&) { throw std::runtime_error("disk full"); };
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(pool.run(
                   5,
                   [](size_t job, int) {
                     if (job > 0) ::sleep(60);
                     return 0;
                   },
                   throwing),
               std::runtime_error);
  EXPECT_EQ(pool.running(), 0u);
  EXPECT_TRUE(no_children());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));
}

TEST(ProcessPool, FirstInterruptStartsNoMoreAndLetsTheRunningFinish) {
  ProcessPool pool(options(1, true));
  std::vector<Outcome> out;
  size_t running_when_told = 99;
  ProcessPool::Callbacks cb = collect(out);
  raise_on_first_tick(cb, SIGINT);  // counted by the pool: the test goes on
  cb.on_interrupt = [&](size_t running) { running_when_told = running; };
  const auto sum = pool.run(
      4,
      [](size_t, int fd) {
        ::usleep(100000);
        write_all(fd, "finished");
        return 0;
      },
      cb);
  EXPECT_EQ(sum.interrupts, 1);
  EXPECT_FALSE(sum.killed);
  EXPECT_EQ(sum.started, 1u);
  EXPECT_EQ(running_when_told, 1u);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_FALSE(out[0].stopped);
  EXPECT_EQ(out[0].output, "finished");  // the child ignored SIGINT
  // The handler is gone after the run.
  struct sigaction now {};
  sigaction(SIGINT, nullptr, &now);
  EXPECT_EQ(now.sa_handler, SIG_DFL);
  EXPECT_TRUE(no_children());
}

// SIGTERM, and SIGHUP (a closed terminal: it reaches only the parent, the
// children being in groups of their own), end the running children at once.
class EndingSignal : public testing::TestWithParam<int> {};

TEST_P(EndingSignal, KillsTheRunningChildrenAsStopped) {
  const int sig = GetParam();
  ProcessPool pool(options(2, true));
  std::vector<Outcome> out;
  ProcessPool::Callbacks cb = collect(out);
  raise_on_first_tick(cb, sig);
  const auto t0 = std::chrono::steady_clock::now();
  const auto sum = pool.run(
      5,
      [](size_t, int) {
        ::sleep(60);
        return 0;
      },
      cb);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));
  EXPECT_TRUE(sum.killed);
  EXPECT_EQ(sum.started, 2u);
  ASSERT_EQ(out.size(), 2u);
  for (const auto& o : out) {
    EXPECT_TRUE(o.stopped);
    EXPECT_EQ(o.signal(), SIGKILL);
  }
  struct sigaction now {};
  sigaction(sig, nullptr, &now);
  EXPECT_EQ(now.sa_handler, SIG_DFL);
  EXPECT_TRUE(no_children());
}

INSTANTIATE_TEST_SUITE_P(ProcessPool, EndingSignal, testing::Values(SIGTERM, SIGHUP),
                         [](const testing::TestParamInfo<int>& i) {
                           return std::string(i.param == SIGTERM ? "sigterm" : "sighup");
                         });

// Under nohup (SIGHUP ignored) a hang-up ends nothing: every run finishes,
// in children that ignore it too, and the disposition is left as it was.
TEST(ProcessPool, AnIgnoredHangUpStaysIgnored) {
  struct sigaction ign {};
  struct sigaction before {};
  ign.sa_handler = SIG_IGN;
  sigemptyset(&ign.sa_mask);
  sigaction(SIGHUP, &ign, &before);
  ProcessPool pool(options(2, true));
  std::vector<Outcome> out;
  ProcessPool::Callbacks cb = collect(out);
  raise_on_first_tick(cb, SIGHUP);
  const auto sum = pool.run(
      3,
      [](size_t, int fd) {
        ::raise(SIGHUP);  // the child's own: ignored as well
        ::usleep(100000);
        write_all(fd, "finished");
        return 0;
      },
      cb);
  EXPECT_FALSE(sum.killed);
  EXPECT_EQ(sum.interrupts, 0);
  ASSERT_EQ(out.size(), 3u);
  for (const auto& o : out) EXPECT_EQ(o.output, "finished");
  struct sigaction now {};
  sigaction(SIGHUP, nullptr, &now);
  EXPECT_EQ(now.sa_handler, SIG_IGN);
  sigaction(SIGHUP, &before, nullptr);
  EXPECT_TRUE(no_children());
}

TEST(ProcessPool, RunOneGivesTheChildsOutputAndUsage) {
  const Outcome o = run_one([](int fd) {
    std::vector<char> touch(32u << 20, 1);  // 32 MiB resident in the child only
    write_all(fd, std::to_string(touch[touch.size() / 2] + touch.back()));
    return 0;
  });
  EXPECT_EQ(o.output, "2");
  EXPECT_EQ(o.exit_code(), 0);
  EXPECT_GT(o.usage.ru_maxrss, 32 * 1024);  // kilobytes
  EXPECT_TRUE(no_children());
}

}  // namespace
}  // namespace simloop::proc
