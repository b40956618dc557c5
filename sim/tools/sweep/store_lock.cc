// What a running sweep holds on its output: an exclusive lock, removed as
// the sweep ends (also by the signals that would end it), and the results
// file, to which each finished run is appended as one whole row.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>

#include "sim/report/safe_file.h"
#include "sim/tools/sweep/sweep.h"

namespace simloop::sweep {

namespace fs = std::filesystem;

using report::errno_text;
using report::write_fully;

namespace {

// The lock files this process holds, for a signal that ends it to remove:
// SIGINT, SIGTERM or SIGHUP outside the process pool's own handling (before
// a sweep's runs start, after they end, or a hang-up) must not leave a lock
// behind. Fixed storage and plain flags: a handler may only call
// async-signal-safe functions (getpid, unlink, sigaction, raise).
constexpr int kMaxHeld = 4;
struct HeldLock {
  char path[4096];
  dev_t dev;  // the file we made: only it is removed, never what took its name
  ino_t ino;
  volatile std::sig_atomic_t used;
};

// Removes the lock file at `path` if it is still the one we hold (lstat
// and unlink are async-signal-safe).
void unlink_if_ours(const char* path, dev_t dev, ino_t ino) {
  struct stat st {};
  if (::lstat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_dev == dev && st.st_ino == ino)
    ::unlink(path);
}
HeldLock g_held[kMaxHeld];
volatile pid_t g_owner = 0;
constexpr int kFatal[] = {SIGINT, SIGTERM, SIGHUP};
struct sigaction g_before[std::size(kFatal)];
bool g_installed[std::size(kFatal)];
int g_holding = 0;

extern "C" void remove_locks_and_end(int sig) {
  if (::getpid() == g_owner)
    for (auto& h : g_held)
      if (h.used) unlink_if_ours(h.path, h.dev, h.ino);
  // Then end as the signal would have ended us: its default action, on
  // return from here (it is blocked until then).
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(sig, &dfl, nullptr);
  ::raise(sig);
}

// Signals are blocked while the table changes.
struct Blocked {
  Blocked() {
    sigset_t all;
    sigfillset(&all);
    ::sigprocmask(SIG_BLOCK, &all, &old);
  }
  ~Blocked() { ::sigprocmask(SIG_SETMASK, &old, nullptr); }
  sigset_t old;
};

// Remembers `path` for the handler; -1 if there is no room or it is too long
// (the lock then goes only as it always did, with its holder's end).
int hold(const fs::path& path, int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return -1;
  const Blocked b;
  const std::string p = fs::absolute(path).string();
  int slot = -1;
  for (int i = 0; i < kMaxHeld && slot < 0; ++i)
    if (!g_held[i].used && p.size() < sizeof g_held[i].path) slot = i;
  if (slot < 0) return -1;
  std::memcpy(g_held[slot].path, p.c_str(), p.size() + 1);
  g_held[slot].dev = st.st_dev;
  g_held[slot].ino = st.st_ino;
  g_held[slot].used = 1;
  if (g_holding++ == 0) {
    g_owner = ::getpid();
    // Only where the signal would end us: an ignored SIGINT (a background
    // job) stays ignored, and a handler someone installed stays theirs.
    for (size_t i = 0; i < std::size(kFatal); ++i) {
      g_installed[i] = false;
      if (::sigaction(kFatal[i], nullptr, &g_before[i]) != 0 || g_before[i].sa_handler != SIG_DFL ||
          (g_before[i].sa_flags & SA_SIGINFO) != 0)
        continue;
      struct sigaction sa {};
      sa.sa_handler = remove_locks_and_end;
      sigemptyset(&sa.sa_mask);
      g_installed[i] = ::sigaction(kFatal[i], &sa, nullptr) == 0;
    }
  }
  return slot;
}

void let_go(int slot) {
  if (slot < 0) return;
  const Blocked b;
  g_held[slot].used = 0;
  if (--g_holding == 0)
    for (size_t i = 0; i < std::size(kFatal); ++i)
      if (g_installed[i]) ::sigaction(kFatal[i], &g_before[i], nullptr);
}

}  // namespace

StoreLock::StoreLock(const fs::path& lock_file, const std::string& what)
    : path_(lock_file), owner_(::getpid()) {
  if (std::error_code ec;
      lock_file.has_parent_path() && !fs::create_directories(lock_file.parent_path(), ec) && ec)
    throw report::WriteError(fmt::format("{}: cannot create the directory: {}",
                                         lock_file.parent_path().string(), errno_text(ec.value())));
  for (;;) {
    fd_ = report::open_no_follow(lock_file, O_RDWR | O_CREAT, 0644);
    if (fd_ < 0)
      throw report::WriteError(
          fmt::format("{}: cannot open the lock: {}", lock_file.string(), errno_text(errno)));
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      const int e = errno;
      std::string holder = read_text(lock_file);
      holder.erase(
          std::remove_if(holder.begin(), holder.end(), [](char c) { return c < '0' || c > '9'; }),
          holder.end());
      ::close(fd_);
      fd_ = -1;
      if (e == EWOULDBLOCK)
        throw StoreError(fmt::format(
            "{}: another simloop (pid {}) is writing these results ({} is locked); wait for it "
            "to finish or stop it",
            what, holder.empty() ? "unknown" : holder.substr(0, 10), lock_file.string()));
      throw report::WriteError(
          fmt::format("{}: cannot lock: {}", lock_file.string(), errno_text(e)));
    }
    // The holder before us removes the file as it ends. If it did so
    // between our open and our flock, we hold a file no one else will
    // find: take the one now there instead.
    struct stat held {
    }, named{};
    if (::fstat(fd_, &held) == 0 && ::lstat(lock_file.c_str(), &named) == 0 &&
        held.st_dev == named.st_dev && held.st_ino == named.st_ino)
      break;
    ::close(fd_);
    fd_ = -1;
  }
  const std::string pid = fmt::format("{}\n", ::getpid());
  if (::ftruncate(fd_, 0) != 0 || write_fully(fd_, pid) != 0) {
    // The lock is held all the same; only the pid for others' messages is missing.
  }
  slot_ = hold(lock_file, fd_);
}

StoreLock::~StoreLock() {
  if (fd_ < 0) return;
  // Removed while still held, so no one takes it in between; never by a
  // forked child that did not take it.
  if (::getpid() == owner_) {
    let_go(slot_);
    if (struct stat st{}; ::fstat(fd_, &st) == 0)
      unlink_if_ours(path_.c_str(), st.st_dev, st.st_ino);
  }
  ::close(fd_);  // closing releases the lock
}

bool StoreLock::held(const fs::path& lock_file) {
  // Only an ordinary file can be a lock: a FIFO must not hold the open up.
  if (struct stat st{}; ::lstat(lock_file.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  const int fd = ::open(lock_file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return false;
  const bool free = ::flock(fd, LOCK_SH | LOCK_NB) == 0;
  ::close(fd);
  return !free;
}

ResultStore::ResultStore(const fs::path& path, const std::vector<std::string>& header,
                         std::chrono::milliseconds sync_every)
    : path_(path),
      columns_(header.size()),
      sync_every_(sync_every),
      synced_at_(std::chrono::steady_clock::now()) {
  fd_ = report::open_no_follow(path, O_RDWR | O_APPEND);
  if (fd_ < 0)
    throw report::WriteError(fmt::format("{}: cannot open: {}", path.string(), errno_text(errno)));
}

ResultStore::~ResultStore() {
  if (fd_ < 0) return;
  if (unsynced_ && ::fsync(fd_) != 0) {
    // Written all the same; only a crash of the system could lose them.
  }
  ::close(fd_);
}

void ResultStore::append(const std::vector<std::string>& fields) {
  if (fields.size() != columns_)
    throw std::logic_error(
        fmt::format("a row of {} fields for {} columns", fields.size(), columns_));
  const std::string line = csv_line(fields);
  struct stat st {};
  const off_t before = ::fstat(fd_, &st) == 0 ? st.st_size : -1;
  // One row per write() with O_APPEND: a crash leaves at most one partial
  // last line, which readers drop.
  if (const int e = write_fully(fd_, line); e != 0) {
    if (before >= 0 && ::ftruncate(fd_, before) != 0) {
      // Readers drop a partial last line anyway.
    }
    throw report::WriteError(
        fmt::format("{}: cannot record a finished run: {}", path_.string(), errno_text(e)));
  }
  unsynced_ = true;
  if (std::chrono::steady_clock::now() - synced_at_ >= sync_every_) sync();
}

void ResultStore::sync() {
  if (!unsynced_) return;
  if (::fsync(fd_) != 0)
    throw report::WriteError(
        fmt::format("{}: cannot record finished runs: {}", path_.string(), errno_text(errno)));
  unsynced_ = false;
  ++syncs_;
  synced_at_ = std::chrono::steady_clock::now();
}

}  // namespace simloop::sweep
