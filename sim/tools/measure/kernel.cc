#include "sim/tools/measure/kernel.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <memory>
#include <new>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "sim/stack/net/inet.h"
#include "sim/support/host.h"
#include "sim/tools/measure/kernel_nft.h"
#include "sim/tools/measure/kernel_veth.h"

// glibc before 2.28 lacks the name; the kernel has had it since 4.18.
#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif

extern "C" __attribute__((noinline)) void simloop_kernel_dither(unsigned n) {
  // An empty asm the compiler must assume reads i: the loop is kept, and
  // turns n times.
  for (unsigned i = 0; i < n; ++i) asm volatile("" : : "r"(i));
}

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

// One payload's sender and receiver sockets, timed slice by slice.
// A buffer that starts on a page. How fast the kernel copies a large
// datagram depends on where the user's buffer starts within a cache line
// (by several hundred ns a datagram at 64 KiB); every channel's buffers
// start at the same place, so that no payload or path gets another.
class PageBuffer {
 public:
  PageBuffer() = default;
  explicit PageBuffer(size_t n)
      : size_(n), p_(static_cast<uint8_t*>(std::aligned_alloc(4096, (n + 4095) / 4096 * 4096))) {
    if (p_ == nullptr) throw std::bad_alloc();
  }
  uint8_t* data() const { return p_.get(); }
  size_t size() const { return size_; }

 private:
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  size_t size_ = 0;
  std::unique_ptr<uint8_t, Free> p_;
};

class Channel {
 public:
  // `veth` holds the namespaces of the veth paths (null for lo's).
  Channel(int payload, KernelPath path, int batch, int segments, int repeat, bool dither,
          int so_rcvbuf, const VethPair* veth)
      : rx_(veth != nullptr ? veth->receiver_socket() : socket(AF_INET, SOCK_DGRAM, 0)),
        tx_(veth != nullptr ? veth->sender_socket() : socket(AF_INET, SOCK_DGRAM, 0)),
        dither_(dither) {
    if (batch < 1 || batch > kMaxSendmmsg)
      throw std::invalid_argument(
          fmt::format("sendmmsg: {} messages per call, not 1..{}", batch, kMaxSendmmsg));
    if (rx_.fd < 0 || tx_.fd < 0) throw sys_error("socket(AF_INET, SOCK_DGRAM)");
    addr_.sin_family = AF_INET;
    // A broadcast reaches a socket bound to the wildcard, not to the
    // peer's own address.
    addr_.sin_addr.s_addr = veth == nullptr                      ? htonl(INADDR_LOOPBACK)
                            : path == KernelPath::veth_broadcast ? htonl(INADDR_ANY)
                                                                 : VethPair::receiver_addr();
    addr_.sin_port = 0;  // an ephemeral port
    if (bind(rx_.fd, reinterpret_cast<sockaddr*>(&addr_), sizeof addr_) != 0)
      throw sys_error("bind the receiver");
    socklen_t len = sizeof addr_;
    if (getsockname(rx_.fd, reinterpret_cast<sockaddr*>(&addr_), &len) != 0)
      throw sys_error("getsockname");
    if (path == KernelPath::veth_broadcast) {
      addr_.sin_addr.s_addr = VethPair::broadcast_addr();
      const int on = 1;
      if (setsockopt(tx_.fd, SOL_SOCKET, SO_BROADCAST, &on, sizeof on) != 0)
        throw sys_error("setsockopt SO_BROADCAST");
    }
    connected_ = path == KernelPath::connected || path == KernelPath::veth_connected;
    if (connected_ && connect(tx_.fd, reinterpret_cast<const sockaddr*>(&addr_), sizeof addr_) != 0)
      throw sys_error("connect the sender");
    // GSO: the kernel cuts each send into payload-sized datagrams. A count
    // of 1 leaves the option unset: the plain path.
    if (segments > 1 && setsockopt(tx_.fd, IPPROTO_UDP, UDP_SEGMENT, &payload, sizeof payload) != 0)
      throw sys_error("setsockopt UDP_SEGMENT");
    send_len_ = static_cast<size_t>(payload) * static_cast<size_t>(segments);
    buf_ = PageBuffer(std::max<size_t>(send_len_, 1));
    for (size_t i = 0; i < buf_.size(); ++i) buf_.data()[i] = static_cast<uint8_t>(i * 7 + 1);
    rbuf_ = PageBuffer(65536);
    r_.repeat = repeat;
    r_.payload = payload;
    r_.path = path;
    r_.sendmmsg = batch;
    if (so_rcvbuf > 0) {
      // The user's size, as a program sets it (the kernel doubles it, and
      // clamps it to rmem_max): what does not fit is dropped, and counted.
      if (setsockopt(rx_.fd, SOL_SOCKET, SO_RCVBUF, &so_rcvbuf, sizeof so_rcvbuf) != 0)
        throw sys_error("setsockopt SO_RCVBUF");
    } else if (batch * segments > 1) {
      // A call leaves up to `batch` messages of `segments` datagrams queued
      // before the receiver drains them: room for them all (above rmem_max
      // with the privilege to), so that none is dropped at the receiver.
      const int room = batch * segments * (payload + 1024) * 2;
      if (setsockopt(rx_.fd, SOL_SOCKET, SO_RCVBUFFORCE, &room, sizeof room) != 0)
        setsockopt(rx_.fd, SOL_SOCKET, SO_RCVBUF, &room, sizeof room);
    }
    if (batch > 1) {
      // Every message the same: the buffer, and the address unless connected.
      iov_.assign(static_cast<size_t>(batch), iovec{buf_.data(), send_len_});
      msgs_.assign(static_cast<size_t>(batch), mmsghdr{});
      for (size_t i = 0; i < msgs_.size(); ++i) {
        msghdr& h = msgs_[i].msg_hdr;
        h.msg_iov = &iov_[i];
        h.msg_iovlen = 1;
        if (!connected_) {
          h.msg_name = &addr_;
          h.msg_namelen = sizeof addr_;
        }
      }
    }
    r_.segments = segments;
  }

  // Untimed packets; the counters start over afterwards.
  void warm(int64_t n) {
    for (int64_t i = 0; i < n;) {
      int went = 0;
      if (fatal(step(&went))) break;
      i += std::max(went, 1);
    }
    r_.delivered = r_.delivered_bytes = r_.empty_reads = r_.send_errors = 0;
  }

  // `n` more timed packets (fewer if sendto() fails for good); returns how
  // many went.
  // `plain`: the unprofiled half of a slice (no dither), counted apart.
  int64_t run(int64_t n, int64_t budget, bool plain = false) {
    if (!r_.fault.empty()) return 0;
    const int64_t c0 = thread_cpu_ns();
    const int64_t u0 = plain ? thread_user_ns() : 0;
    const KernelResult kept = r_;
    const auto t0 = Clock::now();
    int64_t done = 0;
    while (done < n) {
      int went = 0;
      const int err = step(&went);
      // Uniform in [0, 4096) turns: up to a few microseconds, about a
      // datagram's own time, so that the phase perf sees is spread evenly.
      if (dither_ && !plain) {
        rng_ ^= rng_ << 13;
        rng_ ^= rng_ >> 17;
        rng_ ^= rng_ << 5;
        simloop_kernel_dither(rng_ & 4095u);
      }
      done += went;
      if (err == 0) {
      } else if (fatal(err) || r_.send_errors > budget) {
        r_.fault = fmt::format("send failed: {}", std::strerror(err));
        break;
      }
    }
    if (plain) {
      // The profiled half's counts are the row's: the plain half's go back.
      r_.delivered = kept.delivered;
      r_.delivered_bytes = kept.delivered_bytes;
      r_.empty_reads = kept.empty_reads;
      r_.send_errors = kept.send_errors;
      r_.plain_cpu_s += static_cast<double>(thread_cpu_ns() - c0) * 1e-9;
      r_.plain_user_s += static_cast<double>(thread_user_ns() - u0) * 1e-9;
      r_.plain_packets += done * r_.segments;
      return done;
    }
    r_.elapsed_s += std::chrono::duration<double>(Clock::now() - t0).count();
    r_.cpu_s += static_cast<double>(thread_cpu_ns() - c0) * 1e-9;
    r_.packets += done * r_.segments;
    return done;
  }

  KernelResult& result() { return r_; }

 private:
  static bool fatal(int err) { return err != 0 && err != ENOBUFS && err != EAGAIN; }

  // One call: 0 when it sent, else its errno; *went messages (each `segments`
  // datagrams) went.
  int step(int* went) {
    int err = 0;
    if (!msgs_.empty()) {
      // sendmmsg(): fewer than asked means the next one failed; its error
      // shows on the next call, as for sendto().
      const int n = sendmmsg(tx_.fd, msgs_.data(), static_cast<unsigned>(msgs_.size()), 0);
      err = n < 0 ? errno : 0;
      *went = std::max(n, 0);
    } else {
      const ssize_t n = connected_
                            ? send(tx_.fd, buf_.data(), send_len_, 0)
                            : sendto(tx_.fd, buf_.data(), send_len_, 0,
                                     reinterpret_cast<const sockaddr*>(&addr_), sizeof addr_);
      err = n < 0 ? errno : 0;
      *went = n < 0 ? 0 : 1;
    }
    if (err != 0) ++r_.send_errors;
    outstanding_ += int64_t{*went} * r_.segments;
    // Loopback delivery normally completes inside sendto(), so this is one
    // successful recv() per packet; a datagram not there yet waits for the
    // next round instead of costing a failing call every time.
    while (outstanding_ > 0) {
      const ssize_t got = recv(rx_.fd, rbuf_.data(), rbuf_.size(), MSG_DONTWAIT);
      if (got < 0) {
        ++r_.empty_reads;
        break;
      }
      --outstanding_;
      ++r_.delivered;
      r_.delivered_bytes += got;
    }
    return err;
  }

  Fd rx_, tx_;
  bool dither_ = false;
  uint32_t rng_ = 2463534242u;  // xorshift32's state
  sockaddr_in addr_{};
  bool connected_ = false;
  PageBuffer buf_, rbuf_;
  std::vector<iovec> iov_;  // sendmmsg(): one per message
  std::vector<mmsghdr> msgs_;
  size_t send_len_ = 0;  // payload times segments
  int64_t outstanding_ = 0;
  KernelResult r_;
};

}  // namespace

nlohmann::json MachineInfo::to_json() const {
  nlohmann::json j = {
      {"cpu_model", cpu_model}, {"cores", cores}, {"cpu_mhz", cpu_mhz}, {"kernel", kernel}};
  if (l1d_bytes > 0) j["l1d"] = {{"bytes", l1d_bytes}, {"ways", l1d_ways}};
  return j;
}

MachineInfo machine_info() {
  MachineInfo m;
  m.cpu_model = support::cpuinfo_field("model name");
  if (m.cpu_model.empty()) m.cpu_model = "unknown";
  try {
    m.cpu_mhz = std::stod(support::cpuinfo_field("cpu MHz"));
  } catch (const std::exception&) {
    m.cpu_mhz = 0;
  }
  m.cores = static_cast<int>(std::thread::hardware_concurrency());
  utsname u{};
  if (uname(&u) == 0) m.kernel = fmt::format("{} {} {}", u.sysname, u.release, u.machine);
  const support::L1dCache l1d = support::l1d_in(support::this_host().caches);
  m.l1d_bytes = l1d.bytes;
  m.l1d_ways = l1d.ways;
  return m;
}

std::pair<double, double> null_syscall_ns(int64_t calls) {
  if (calls <= 0) return {0, 0};
  // syscall() itself, not getppid(): the C library must not answer from a cache.
  for (int i = 0; i < 1000; ++i) syscall(SYS_getppid);
  const int64_t c0 = thread_cpu_ns();
  const auto t0 = Clock::now();
  for (int64_t i = 0; i < calls; ++i) syscall(SYS_getppid);
  const auto t1 = Clock::now();
  const auto n = static_cast<double>(calls);
  return {std::chrono::duration<double, std::nano>(t1 - t0).count() / n,
          static_cast<double>(thread_cpu_ns() - c0) / n};
}

std::pair<double, double> unix_dgram_round_trip_ns(int64_t trips, size_t bytes) {
  int sv[2];
  if (trips <= 0 || socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) != 0) return {0, 0};
  std::vector<char> out(std::max<size_t>(bytes, 1), 'x'), in(out.size());
  auto trip = [&] {
    return send(sv[0], out.data(), bytes, 0) == static_cast<ssize_t>(bytes) &&
           recv(sv[1], in.data(), in.size(), 0) == static_cast<ssize_t>(bytes);
  };
  bool ok = true;
  for (int i = 0; i < 1000 && ok; ++i) ok = trip();
  // The fastest of five trials: a preempted or cold trial is slower, never faster.
  double best_wall = 0, best_cpu = 0;
  for (int trial = 0; trial < 5 && ok; ++trial) {
    const int64_t c0 = thread_cpu_ns();
    const auto t0 = Clock::now();
    for (int64_t i = 0; i < trips && ok; ++i) ok = trip();
    const auto n = static_cast<double>(trips);
    const double wall = std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / n;
    const double cpu = static_cast<double>(thread_cpu_ns() - c0) / n;
    if (trial == 0 || cpu < best_cpu) best_wall = wall, best_cpu = cpu;
  }
  close(sv[0]);
  close(sv[1]);
  return ok ? std::pair{best_wall, best_cpu} : std::pair{0.0, 0.0};
}

std::pair<double, double> kernel_copy_out_ns(int64_t calls, int trials, size_t small,
                                             size_t large) {
  const int fd = static_cast<int>(syscall(SYS_memfd_create, "simloop-copy", 1U /* CLOEXEC */));
  if (fd < 0 || calls <= 0 || trials <= 0 || small == 0 || large < small) {
    if (fd >= 0) close(fd);
    return {0, 0};
  }
  std::vector<char> file(large, 'x'), in(large);
  bool ok = pwrite(fd, file.data(), large, 0) == static_cast<ssize_t>(large);
  auto read_once = [&](size_t bytes) {
    return pread(fd, in.data(), bytes, 0) == static_cast<ssize_t>(bytes);
  };
  for (int i = 0; i < 1000 && ok; ++i) ok = read_once(small) && read_once(large);
  auto per_call = [&](size_t bytes) {
    const int64_t c0 = thread_cpu_ns();
    for (int64_t i = 0; i < calls && ok; ++i) ok = read_once(bytes);
    return static_cast<double>(thread_cpu_ns() - c0) / static_cast<double>(calls);
  };
  double best_small = 0, best_large = 0;
  for (int trial = 0; trial < trials && ok; ++trial) {
    const double s = per_call(small), l = per_call(large);
    best_small = trial == 0 ? s : std::min(best_small, s);
    best_large = trial == 0 ? l : std::min(best_large, l);
  }
  close(fd);
  return ok ? std::pair{best_small, best_large} : std::pair{0.0, 0.0};
}

double loadavg_1m() {
  std::ifstream f("/proc/loadavg");
  double v = -1;
  if (!(f >> v)) return -1;
  return v;
}

const char* kernel_path_name(KernelPath p) {
  switch (p) {
    case KernelPath::unconnected:
      return "unconnected";
    case KernelPath::connected:
      return "connected";
    case KernelPath::veth:
      return "veth";
    case KernelPath::veth_connected:
      return "veth-connected";
    case KernelPath::veth_broadcast:
      return "veth-broadcast";
  }
  return "?";
}

const char* kernel_path_dest(KernelPath p) {
  if (p == KernelPath::veth_broadcast) return "veth-broadcast";
  return kernel_path_veth(p) ? "veth" : "loopback";
}

const std::vector<std::pair<std::string, KernelPath>>& kernel_path_names() {
  static const std::vector<std::pair<std::string, KernelPath>> names = {
      {"unconnected", KernelPath::unconnected},
      {"connected", KernelPath::connected},
      {"veth", KernelPath::veth},
      {"veth-connected", KernelPath::veth_connected},
      {"veth-broadcast", KernelPath::veth_broadcast}};
  return names;
}

std::string gso_problem(int payload, int segments) {
  if (segments < 1 || segments > kUdpMaxSegments)
    return fmt::format(
        "{} segments per send: Linux takes 1 to {} (UDP_MAX_SEGMENTS since 6.5, 64 before)",
        segments, kUdpMaxSegments);
  if (segments > 1 && payload < 1)
    return fmt::format("{} segments of {} bytes: GSO needs a segment size of at least 1 byte",
                       segments, payload);
  if (int64_t{payload} * segments > net::kMaxUdpPayload)
    return fmt::format(
        "{} segments of {} bytes make a {}-byte send, over a UDP datagram's {} bytes (EMSGSIZE)",
        segments, payload, int64_t{payload} * segments, net::kMaxUdpPayload);
  return {};
}

int kernel_max_payload(KernelPath p, const KernelOptions& opt) {
  return kernel_path_veth(p) ? opt.veth_mtu - net::kUdpIpHdrLen : net::kMaxUdpPayload;
}

int64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

int64_t thread_user_ns() {
  rusage u{};
  if (getrusage(RUSAGE_THREAD, &u) != 0) return 0;
  return int64_t{u.ru_utime.tv_sec} * 1'000'000'000 + int64_t{u.ru_utime.tv_usec} * 1000;
}

int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

std::string KernelKnobs::label() const {
  std::string s;
  if (sendmmsg != 1) s += fmt::format(", sendmmsg {}", sendmmsg);
  if (segments != 1) s += fmt::format(", {} GSO segments", segments);
  if (nft_rules >= 0) s += fmt::format(", {} nft rules", nft_rules);
  return s;
}

std::vector<KernelResult> run_kernel(const KernelOptions& opt, std::vector<KernelWindow>* windows) {
  std::vector<KernelResult> out;
  std::unique_ptr<NftNamespaces> nft;
  // Rules go in namespaces of lo's own; a veth pair has namespaces of its own.
  if (!opt.nft_rules.empty())
    for (KernelPath path : opt.paths)
      if (kernel_path_veth(path))
        throw std::invalid_argument(
            fmt::format("nft rules are measured on lo's paths, not {}", kernel_path_name(path)));
  if (!opt.nft_rules.empty()) nft = std::make_unique<NftNamespaces>(opt.nft_rules);
  std::vector<int> rule_counts = opt.nft_rules;
  if (rule_counts.empty()) rule_counts = {-1};
  const int rounds =
      static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(opt.rounds, opt.packets)));
  // A share of `total` for slice k of `rounds`, the shares summing to total.
  auto share = [&](int64_t total, int k) { return total * (k + 1) / rounds - total * k / rounds; };
  // One pair for the whole run: its namespaces live as long as it does (and
  // the sockets made in them), and no longer than this process.
  std::unique_ptr<VethPair> veth;
  for (KernelPath path : opt.paths)
    if (kernel_path_veth(path) && !veth) veth = std::make_unique<VethPair>(opt.veth_mtu);
  for (int rep = 0; rep < opt.repeats; ++rep) {
    std::vector<std::unique_ptr<Channel>> ch;
    for (KernelPath path : opt.paths)
      for (int payload : opt.payloads)
        for (int batch : opt.sendmmsg)
          for (int segments : opt.gso_segments)
            for (int rules : rule_counts) {
              // The sockets belong to the namespace they are made in.
              if (nft) nft->enter(rules);
              try {
                ch.push_back(std::make_unique<Channel>(
                    payload, path, batch, segments, rep, opt.dither, opt.so_rcvbuf,
                    kernel_path_veth(path) ? veth.get() : nullptr));
              } catch (...) {
                if (nft) nft->leave();
                throw;
              }
              if (nft) nft->leave();
              ch.back()->result().nft_rules = rules;
              ch.back()->warm((opt.warmup + segments - 1) / segments);
            }
    double null_ns = 0, null_cpu_ns = 0;
    int64_t null_calls = 0;
    const size_t n = ch.size();
    for (int k = 0; k < rounds; ++k) {
      const int64_t calls = share(opt.null_syscalls, k);
      const auto [wall, cpu] = null_syscall_ns(calls);
      null_ns += wall * static_cast<double>(calls);
      null_cpu_ns += cpu * static_cast<double>(calls);
      null_calls += calls;
      for (size_t i = 0; i < n; ++i) {
        Channel& c = *ch[(i + static_cast<size_t>(k)) % n];
        // `packets` counts datagrams: a GSO channel makes fewer sends.
        const int seg = c.result().segments;
        if (opt.profile) {
          opt.profile(false);
          c.run((share(opt.packets, k) + seg - 1) / seg, opt.packets, true);
          opt.profile(true);
        }
        const int64_t t0 = windows != nullptr ? monotonic_ns() : 0;
        const int64_t sent = c.run((share(opt.packets, k) + seg - 1) / seg, opt.packets);
        if (windows != nullptr)
          windows->push_back({rep, c.result().payload, c.result().path, t0, monotonic_ns(),
                              sent * seg, c.result().knobs()});
      }
    }
    const double load = loadavg_1m();
    for (auto& c : ch) {
      KernelResult r = c->result();
      r.null_syscall_ns = null_calls > 0 ? null_ns / static_cast<double>(null_calls) : 0;
      r.null_syscall_cpu_ns = null_calls > 0 ? null_cpu_ns / static_cast<double>(null_calls) : 0;
      r.loadavg_1m = load;
      out.push_back(std::move(r));
    }
  }
  return out;
}

report::Row kernel_row(const KernelResult& r, const MachineInfo& m) {
  report::Row row;
  row.set("source", std::string("kernel"))
      .set("repeat", int64_t{r.repeat})
      .set("payload", int64_t{r.payload})
      .set("dest", std::string(kernel_path_dest(r.path)))
      .set("path", std::string(kernel_path_name(r.path)))
      .set("packets", r.packets)
      .set("elapsed_s", r.elapsed_s)
      .set("kpps", r.kpps())
      .set("ns_per_packet", r.ns_per_packet())
      .set("delivered", r.delivered)
      .set("delivered_bytes", r.delivered_bytes)
      .set("send_errors", r.send_errors)
      .set("empty_reads", r.empty_reads)
      .set("null_syscall_ns", r.null_syscall_ns)
      .set("cpu_s", r.cpu_s)
      .set("cpu_ns_per_packet", r.cpu_ns_per_packet())
      .set("null_syscall_cpu_ns", r.null_syscall_cpu_ns)
      .set("loadavg_1m", r.loadavg_1m)
      .set("fault", r.fault)
      .set("cpu_model", m.cpu_model)
      .set("cores", int64_t{m.cores})
      .set("kernel", m.kernel)
      .set("segments", int64_t{r.segments})
      .set("sendmmsg", int64_t{r.sendmmsg});  // last: the columns before them keep their places
  if (r.nft_rules >= 0) row.set("nft_rules", int64_t{r.nft_rules});
  return row;
}

}  // namespace simloop::measure
