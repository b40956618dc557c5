#include "measure/kernel.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <thread>

namespace simloop::measure {

namespace {

using Clock = std::chrono::steady_clock;

// Closes the socket when the run ends, whichever way.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

std::runtime_error sys_error(const std::string& what) {
  return std::runtime_error(fmt::format("{}: {}", what, std::strerror(errno)));
}

KernelResult run_once(const KernelOptions& opt, int payload, int repeat) {
  Fd rx(socket(AF_INET, SOCK_DGRAM, 0));
  Fd tx(socket(AF_INET, SOCK_DGRAM, 0));
  if (rx.fd < 0 || tx.fd < 0) throw sys_error("socket(AF_INET, SOCK_DGRAM)");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;  // an ephemeral port
  if (bind(rx.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    throw sys_error("bind 127.0.0.1");
  socklen_t len = sizeof addr;
  if (getsockname(rx.fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    throw sys_error("getsockname");

  std::vector<uint8_t> buf(static_cast<size_t>(std::max(payload, 1)));
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<uint8_t>(i * 7 + 1);
  std::vector<uint8_t> rbuf(65536);

  KernelResult r;
  r.repeat = repeat;
  r.payload = payload;
  int64_t outstanding = 0;
  // 0 when the datagram went, else sendto()'s errno.
  auto step = [&]() -> int {
    const ssize_t n = sendto(tx.fd, buf.data(), static_cast<size_t>(payload), 0,
                             reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
    const int err = n < 0 ? errno : 0;
    if (err != 0)
      ++r.send_errors;
    else
      ++outstanding;
    // Loopback delivery normally completes inside sendto(), so this is one
    // successful recv() per packet; a datagram not there yet waits for the
    // next round instead of costing a failing call every time.
    while (outstanding > 0) {
      const ssize_t got = recv(rx.fd, rbuf.data(), rbuf.size(), MSG_DONTWAIT);
      if (got < 0) {
        ++r.empty_reads;
        break;
      }
      --outstanding;
      ++r.delivered;
      r.delivered_bytes += got;
    }
    return err;
  };
  auto fatal = [](int err) { return err != 0 && err != ENOBUFS && err != EAGAIN; };

  for (int64_t i = 0; i < opt.warmup; ++i)
    if (fatal(step())) break;
  r.delivered = r.delivered_bytes = r.empty_reads = r.send_errors = 0;
  const auto t0 = Clock::now();
  int64_t n = 0;
  while (n < opt.packets) {
    const int err = step();
    if (err == 0) {
      ++n;
    } else if (fatal(err) || r.send_errors > opt.packets) {
      r.fault = fmt::format("sendto failed: {}", std::strerror(err));
      break;
    }
  }
  const auto t1 = Clock::now();
  r.packets = n;
  r.elapsed_s = std::chrono::duration<double>(t1 - t0).count();
  return r;
}

std::string cpuinfo_field(const std::string& key) {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind(key, 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    auto v = line.substr(colon + 1);
    v.erase(0, v.find_first_not_of(" \t"));
    return v;
  }
  return "";
}

}  // namespace

nlohmann::json MachineInfo::to_json() const {
  return {{"cpu_model", cpu_model}, {"cores", cores}, {"cpu_mhz", cpu_mhz}, {"kernel", kernel}};
}

MachineInfo machine_info() {
  MachineInfo m;
  m.cpu_model = cpuinfo_field("model name");
  if (m.cpu_model.empty()) m.cpu_model = "unknown";
  try {
    m.cpu_mhz = std::stod(cpuinfo_field("cpu MHz"));
  } catch (const std::exception&) {
    m.cpu_mhz = 0;
  }
  m.cores = static_cast<int>(std::thread::hardware_concurrency());
  utsname u{};
  if (uname(&u) == 0) m.kernel = fmt::format("{} {} {}", u.sysname, u.release, u.machine);
  return m;
}

double null_syscall_ns(int64_t calls) {
  if (calls <= 0) return 0;
  // syscall() itself, not getppid(): the C library must not answer from a cache.
  for (int i = 0; i < 1000; ++i) syscall(SYS_getppid);
  const auto t0 = Clock::now();
  for (int64_t i = 0; i < calls; ++i) syscall(SYS_getppid);
  const auto t1 = Clock::now();
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(calls);
}

std::vector<KernelResult> run_kernel(const KernelOptions& opt) {
  std::vector<KernelResult> out;
  for (int rep = 0; rep < opt.repeats; ++rep) {
    const double sys_ns = null_syscall_ns(opt.null_syscalls);
    for (int payload : opt.payloads) {
      out.push_back(run_once(opt, payload, rep));
      out.back().null_syscall_ns = sys_ns;
    }
  }
  return out;
}

report::Row kernel_row(const KernelResult& r, const MachineInfo& m) {
  report::Row row;
  row.set("source", std::string("kernel"))
      .set("repeat", int64_t{r.repeat})
      .set("payload", int64_t{r.payload})
      .set("dest", std::string("loopback"))
      .set("packets", r.packets)
      .set("elapsed_s", r.elapsed_s)
      .set("kpps", r.kpps())
      .set("ns_per_packet", r.ns_per_packet())
      .set("delivered", r.delivered)
      .set("delivered_bytes", r.delivered_bytes)
      .set("send_errors", r.send_errors)
      .set("empty_reads", r.empty_reads)
      .set("null_syscall_ns", r.null_syscall_ns)
      .set("fault", r.fault)
      .set("cpu_model", m.cpu_model)
      .set("cores", int64_t{m.cores})
      .set("kernel", m.kernel);
  return row;
}

}  // namespace simloop::measure
