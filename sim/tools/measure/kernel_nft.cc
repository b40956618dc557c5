#include "sim/tools/measure/kernel_nft.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "sim/tools/measure/programs.h"

namespace simloop::measure {

namespace {

NftError sys_error(const std::string& what) {
  return NftError(fmt::format("{}: {}", what, std::strerror(errno)));
}

// A file of `text` in memory, at offset 0, for a child's stdin.
int memfd_with(const char* name, const std::string& text) {
  const int fd = memfd_create(name, MFD_CLOEXEC);
  if (fd < 0) throw sys_error("memfd_create");
  size_t off = 0;
  while (off < text.size()) {
    const ssize_t n = write(fd, text.data() + off, text.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      close(fd);
      throw sys_error("writing the ruleset");
    }
    off += static_cast<size_t>(n);
  }
  lseek(fd, 0, SEEK_SET);
  return fd;
}

// `nft -f -` with `ruleset` on its stdin, in the calling thread's namespace
// (a child starts in its parent thread's).
void nft_load(const std::string& nft, const std::string& ruleset) {
  const int in = memfd_with("nft-ruleset", ruleset);
  const int err = memfd_create("nft-stderr", MFD_CLOEXEC);
  const pid_t pid = fork();
  if (pid < 0) throw sys_error("fork");
  if (pid == 0) {
    dup2(in, STDIN_FILENO);
    if (err >= 0) dup2(err, STDERR_FILENO);
    const int null = open("/dev/null", O_WRONLY);
    if (null >= 0) dup2(null, STDOUT_FILENO);
    execl(nft.c_str(), nft.c_str(), "-f", "-", static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  close(in);
  std::string msg;
  if (err >= 0) {
    lseek(err, 0, SEEK_SET);
    char buf[512];
    const ssize_t n = read(err, buf, sizeof buf);
    if (n > 0) msg.assign(buf, static_cast<size_t>(n));
    close(err);
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw NftError(fmt::format("'{} -f -' failed ({}): {}", nft,
                               WIFEXITED(status) ? WEXITSTATUS(status) : -1, msg));
}

// `ip link set lo up` in the calling thread's namespace.
void lo_up() {
  const int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) throw sys_error("socket for lo");
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
  const bool ok = ioctl(s, SIOCGIFFLAGS, &ifr) == 0 &&
                  (ifr.ifr_flags |= IFF_UP, ioctl(s, SIOCSIFFLAGS, &ifr) == 0);
  const int e = errno;
  close(s);
  errno = e;
  if (!ok) throw sys_error("bringing lo up");
}

}  // namespace

std::string nft_unavailable(const std::string& nft) {
  if (geteuid() != 0)
    return "--nft-rules needs root: it makes network namespaces and loads rules into them";
  if (find_program(nft).empty())
    return fmt::format(
        "--nft-rules needs the nft program ('{}' not found): install nftables "
        "(scripts/install-deps.sh)",
        nft);
  return "";
}

std::string nft_ruleset(int n) {
  std::string s =
      "table ip simloop_nft {\n"
      "  chain output {\n"
      "    type filter hook output priority filter; policy accept;\n";
  for (int k = 0; k < n; ++k)
    s += fmt::format("    ip daddr 198.18.{}.{} counter\n", k / 256, k % 256);
  s += "  }\n}\n";
  return s;
}

NftNamespaces::NftNamespaces(const std::vector<int>& counts, const std::string& nft) {
  home_ = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  if (home_ < 0) throw sys_error("/proc/thread-self/ns/net");
  const std::string prog = find_program(nft);
  try {
    for (int n : counts) {
      if (ns_.count(n) != 0) continue;
      if (unshare(CLONE_NEWNET) != 0) throw sys_error("unshare(CLONE_NEWNET)");
      const int fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
      if (fd < 0) throw sys_error("/proc/thread-self/ns/net");
      ns_[n] = fd;
      lo_up();
      if (n > 0) nft_load(prog.empty() ? nft : prog, nft_ruleset(n));
      leave();
    }
  } catch (...) {
    leave();
    for (const auto& [n, fd] : ns_) close(fd);
    close(home_);
    throw;
  }
}

NftNamespaces::~NftNamespaces() {
  leave();
  for (const auto& [n, fd] : ns_) close(fd);
  close(home_);
}

void NftNamespaces::enter(int n) const {
  const auto it = ns_.find(n);
  if (it == ns_.end()) throw std::logic_error(fmt::format("no namespace of {} rules", n));
  if (setns(it->second, CLONE_NEWNET) != 0) throw sys_error("setns into the rules' namespace");
}

void NftNamespaces::leave() const {
  if (home_ >= 0) setns(home_, CLONE_NEWNET);
}

}  // namespace simloop::measure
