#include "sim/tools/measure/kernel_veth.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sched.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/tools/measure/programs.h"

extern char** environ;

namespace simloop::measure {

namespace {

constexpr const char* kTx = "sl-tx";
constexpr const char* kRx = "sl-rx";
// Locally administered addresses, so that the neighbours can be entered
// for good: no ARP during a run, and no entry that goes stale in one.
constexpr const char* kTxMac = "02:00:0a:e7:00:01";
constexpr const char* kRxMac = "02:00:0a:e7:00:02";

std::runtime_error sys_error(const std::string& what) {
  return std::runtime_error(fmt::format("{}: {}", what, std::strerror(errno)));
}

int open_ns() {
  const int fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw sys_error("open /proc/thread-self/ns/net");
  return fd;
}

void close_fd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

// Runs `ip -batch -` in this thread's namespace with `commands` on its
// standard input; `peer_ns` becomes its fd 3 (/proc/self/fd/3 names the
// receiver's namespace to `netns`). Throws with ip's own message.
void run_ip(const std::string& commands, int peer_ns) {
  int in[2], err[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) throw sys_error("pipe");
  // A few short lines fit the pipe: written before ip starts, no deadlock.
  const ssize_t w = write(in[1], commands.data(), commands.size());
  close(in[1]);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, err[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  if (peer_ns >= 0) posix_spawn_file_actions_adddup2(&fa, peer_ns, 3);
  const std::string ip = find_program("ip");
  if (ip.empty()) throw std::runtime_error("ip (iproute2) not found: install iproute2");
  const char* argv[] = {"ip", "-batch", "-", nullptr};
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, ip.c_str(), &fa, nullptr, const_cast<char**>(argv), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(in[0]);
  close(err[1]);
  std::string out;
  char buf[512];
  for (ssize_t n; (n = read(err[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  close(err[0]);
  if (rc != 0)
    throw std::runtime_error(fmt::format(
        "cannot run ip ({}): install iproute2 (scripts/install-deps.sh)", std::strerror(rc)));
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (w != static_cast<ssize_t>(commands.size()) || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
    throw std::runtime_error(fmt::format("ip -batch failed on:\n{}{}", commands, out));
}

}  // namespace

in_addr_t VethPair::sender_addr() {
  return inet_addr("10.231.0.1");
}
in_addr_t VethPair::receiver_addr() {
  return inet_addr("10.231.0.2");
}
in_addr_t VethPair::broadcast_addr() {
  return inet_addr("10.231.0.3");
}

std::string VethPair::unavailable() {
  if (geteuid() != 0)
    return "measure kernel --path veth needs root: it creates network namespaces and a veth "
           "pair (run it as root, or measure the loopback paths)";
  if (find_program("ip").empty())
    return "measure kernel --path veth needs iproute2's ip program ('ip' not found): install "
           "iproute2 (scripts/install-deps.sh)";
  // A container may deny new network namespaces even to root: try one in a
  // child, which only calls unshare and exits.
  const pid_t pid = fork();
  if (pid == 0) _exit(unshare(CLONE_NEWNET) == 0 ? 0 : 1);
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return "measure kernel --path veth cannot create a network namespace here (unshare "
           "CLONE_NEWNET refused): measure the loopback paths";
  return "";
}

VethPair::VethPair(int mtu) : mtu_(mtu) {
  if (const std::string why = unavailable(); !why.empty()) throw std::runtime_error(why);
  home_ = open_ns();
  try {
    // The receiver's namespace, then the sender's: each held by its fd and
    // by the sockets made in it, by nothing with a name.
    if (unshare(CLONE_NEWNET) != 0) throw sys_error("unshare(CLONE_NEWNET)");
    rx_ = open_ns();
    if (unshare(CLONE_NEWNET) != 0) throw sys_error("unshare(CLONE_NEWNET)");
    tx_ = open_ns();
    run_ip(fmt::format("link add {tx} mtu {m} address {txm} type veth peer name {rx} mtu {m} "
                       "address {rxm} netns /proc/self/fd/3\n"
                       "addr add 10.231.0.1/30 broadcast 10.231.0.3 dev {tx}\n"
                       "link set {tx} up\n"
                       "neigh replace 10.231.0.2 lladdr {rxm} dev {tx} nud permanent\n",
                       fmt::arg("tx", kTx), fmt::arg("rx", kRx), fmt::arg("m", mtu),
                       fmt::arg("txm", kTxMac), fmt::arg("rxm", kRxMac)),
           rx_);
    if (setns(rx_, CLONE_NEWNET) != 0) throw sys_error("setns to the receiver's namespace");
    run_ip(fmt::format("addr add 10.231.0.2/30 broadcast 10.231.0.3 dev {rx}\n"
                       "link set {rx} up\n"
                       "neigh replace 10.231.0.1 lladdr {txm} dev {rx} nud permanent\n",
                       fmt::arg("rx", kRx), fmt::arg("txm", kTxMac)),
           -1);
    if (setns(home_, CLONE_NEWNET) != 0) throw sys_error("setns back home");
  } catch (...) {
    // The thread home again, then the namespaces' fds closed: they vanish.
    setns(home_, CLONE_NEWNET);
    close_fd(tx_);
    close_fd(rx_);
    close_fd(home_);
    throw;
  }
}

VethPair::~VethPair() {
  // The last references go with the sockets made in the namespaces.
  close_fd(tx_);
  close_fd(rx_);
  close_fd(home_);
}

int VethPair::socket_in(int ns) const {
  if (setns(ns, CLONE_NEWNET) != 0) throw sys_error("setns");
  const int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  const int e = errno;
  if (setns(home_, CLONE_NEWNET) != 0) {
    if (s >= 0) close(s);
    throw sys_error("setns back home");
  }
  if (s < 0) {
    errno = e;
    throw sys_error("socket(AF_INET, SOCK_DGRAM)");
  }
  return s;
}

int VethPair::sender_socket() const {
  return socket_in(tx_);
}
int VethPair::receiver_socket() const {
  return socket_in(rx_);
}

}  // namespace simloop::measure
