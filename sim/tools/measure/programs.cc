#include "sim/tools/measure/programs.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <stdexcept>

namespace simloop::measure {

namespace fs = std::filesystem;

TempDir::TempDir(const std::string& prefix) {
  std::string tmpl = (fs::temp_directory_path() / (prefix + "-XXXXXX")).string();
  if (mkdtemp(tmpl.data()) == nullptr)
    throw std::runtime_error(
        fmt::format("cannot make a temporary directory: {}", std::strerror(errno)));
  path = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path, ec);
}

std::string last_lines(const fs::path& file, int n) {
  std::ifstream in(file);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  std::string out;
  for (size_t i = lines.size() > static_cast<size_t>(n) ? lines.size() - n : 0; i < lines.size();
       ++i)
    out += "\n  " + lines[i];
  return out;
}

namespace {

volatile std::sig_atomic_t g_stop_signal = 0;
extern "C" void on_stop_signal(int sig) {
  g_stop_signal = sig;
}

constexpr std::array<int, 3> kStopSignals = {SIGINT, SIGTERM, SIGHUP};

// While a program runs: SIGINT, SIGTERM and SIGHUP, where nothing else
// handles or ignores them, are noted rather than ending us at once, so that
// the program is stopped and the temporary directories are removed on the
// way out (an exception unwinds to the command's end). They are blocked
// from before the fork until the child has its own dispositions back, so
// none is lost between the two; the old handlers and mask are back after.
class StopSignals {
 public:
  StopSignals() {
    g_stop_signal = 0;
    sigset_t set;
    sigemptyset(&set);
    for (const int sig : kStopSignals) sigaddset(&set, sig);
    sigprocmask(SIG_BLOCK, &set, &old_mask_);
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;
    for (size_t i = 0; i < kStopSignals.size(); ++i) {
      sigaction(kStopSignals[i], nullptr, &old_[i]);
      ours_[i] = old_[i].sa_handler == SIG_DFL;
      if (ours_[i]) sigaction(kStopSignals[i], &sa, nullptr);
    }
  }
  ~StopSignals() {
    restore();
    sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
  }
  // In the child, before exec: the dispositions and mask it had before us
  // (an ignored SIGHUP under nohup stays ignored).
  void in_child() const {
    restore();
    sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
  }
  // In the parent once the child exists: a signal held back meanwhile is
  // delivered now, to our handler.
  void unblock() const { sigprocmask(SIG_SETMASK, &old_mask_, nullptr); }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  void restore() const {
    for (size_t i = 0; i < kStopSignals.size(); ++i)
      if (ours_[i]) sigaction(kStopSignals[i], &old_[i], nullptr);
  }
  sigset_t old_mask_{};
  std::array<struct sigaction, 3> old_{};
  std::array<bool, 3> ours_{};
};

// "simloop measure kernel" for our own re-exec, else the program's name.
std::string program_name(const std::vector<std::string>& argv) {
  if (argv.empty()) return "?";
  if (argv[0] != "/proc/self/exe") return argv[0];
  std::string name = "simloop";
  for (size_t i = 1; i < argv.size() && i < 4; ++i)
    if (!argv[i].starts_with("-")) name += " " + argv[i];
  return name;
}

// Waits for `pid` a twentieth of a second at a time, until it has ended
// (true, its status in `status`), `naps` have passed (naps < 0: no limit),
// or, where `stoppable`, a stop was noted: a stop is seen within that.
bool reap(pid_t pid, int& status, int naps, bool stoppable) {
  for (int i = 0; naps < 0 || i < naps; ++i) {
    if (stoppable && g_stop_signal != 0) return false;
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return true;
    if (r < 0 && errno != EINTR) return false;
    const timespec nap{0, 50'000'000};
    if (r == 0) nanosleep(&nap, nullptr);
  }
  return false;
}

}  // namespace

void run_program(const std::vector<std::string>& argv, const fs::path& err, const fs::path& out) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // The child's temporary files go in a directory beside `err` (the
  // caller's own), so that removing the caller's removes them, whatever
  // ended the child; a directory, so a caller that gathers the regular
  // files beside `err` does not take them.
  std::string tmpdir;
  if (!err.parent_path().empty()) {
    tmpdir = (err.parent_path() / ".children-tmp").string();
    std::error_code ec;
    fs::create_directory(tmpdir, ec);
    if (ec) tmpdir.clear();
  }
  const pid_t parent = getpid();
  const StopSignals stop;
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(fmt::format("fork: {}", std::strerror(errno)));
  if (pid == 0) {
    // The child ends with us: a calibration killed mid-run leaves no
    // measurement running on, holding a core and perf.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(127);
    stop.in_child();
    if (!tmpdir.empty()) setenv("TMPDIR", tmpdir.c_str(), 1);
    // In a directory of our own (TempDir); never through a link all the same.
    const int o = out.empty() ? open("/dev/null", O_WRONLY)
                              : open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0644);
    const int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0644);
    if (o >= 0) dup2(o, STDOUT_FILENO);
    if (e >= 0) dup2(e, STDERR_FILENO);
    execvp(args[0], args.data());
    std::fprintf(stderr, "cannot run %s: %s\n", args[0], std::strerror(errno));
    _exit(127);
  }
  stop.unblock();
  int status = 0;
  const bool reaped = reap(pid, status, -1, true);
  if (const int sig = g_stop_signal; sig != 0) {
    // A program that does not end on SIGTERM within five seconds is killed.
    if (!reaped) {
      ::kill(pid, SIGTERM);
      if (!reap(pid, status, 100, false)) {
        ::kill(pid, SIGKILL);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
      }
    }
    throw Stopped(fmt::format("stopped by {} while {} ran", strsignal(sig), program_name(argv)),
                  sig);
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  std::string what = WIFEXITED(status) ? fmt::format("exit status {}", WEXITSTATUS(status))
                                       : fmt::format("signal {}", WTERMSIG(status));
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
    what += fmt::format(" (is {} installed? scripts/install-deps.sh installs it)", argv[0]);
  throw std::runtime_error(
      fmt::format("{} failed ({}):{}", fmt::join(argv, " "), what, last_lines(err, 8)));
}

// The first `prog` on PATH that can be run, or "" (Debian's /usr/sbin and
// /sbin are tried too: a user's PATH may lack them, and nft and ip live there).
std::string find_program(const std::string& prog) {
  if (prog.find('/') != std::string::npos) return access(prog.c_str(), X_OK) == 0 ? prog : "";
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/sbin:/usr/bin:/sbin:/bin";
  size_t b = 0;
  while (b <= dirs.size()) {
    const size_t e = std::min(dirs.find(':', b), dirs.size());
    const std::string f = (e > b ? dirs.substr(b, e - b) : ".") + "/" + prog;
    if (access(f.c_str(), X_OK) == 0) return f;
    b = e + 1;
  }
  for (const char* d : {"/usr/sbin/", "/sbin/"})
    if (access((d + prog).c_str(), X_OK) == 0) return d + prog;
  return "";
}

}  // namespace simloop::measure
