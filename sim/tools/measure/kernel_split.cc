#include "sim/tools/measure/kernel_split.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "sim/stack/stack_set.h"
#include "sim/support/input_error.h"
#include "sim/support/text.h"
#include "sim/support/yaml_input.h"
#include "sim/tools/measure/programs.h"

namespace simloop::measure {

namespace fs = std::filesystem;

namespace {

// User space ends below the kernel's half of the address space.
constexpr uint64_t kKernelStart = 0xffff800000000000ULL;

std::vector<std::string> symbol_list(const YAML::Node& n, const std::string& file,
                                     const std::string& key) {
  if (!n.IsSequence())
    throw config::ConfigError(
        config::located(config::yaml_loc(file, n), key,
                        "expected a list of kernel symbols, found " + config::yaml_shape(n)));
  std::vector<std::string> out;
  for (const auto& s : n) {
    if (!s.IsScalar() || s.Scalar().empty())
      throw config::ConfigError(
          config::located(config::yaml_loc(file, s), key,
                          "expected a kernel symbol, found " + config::yaml_shape(s)));
    out.push_back(s.Scalar());
  }
  return out;
}

}  // namespace

SymbolMap load_symbol_map(const fs::path& path) {
  const std::string file = path.string();
  const YAML::Node root = config::read_yaml_file(path);
  if (!root.IsMap())
    throw config::ConfigError(config::located(config::yaml_loc(file, root), "(top)",
                                              "expected a map of functions, syscall_entry and "
                                              "hypervisor, found " +
                                                  config::yaml_shape(root)));
  SymbolMap m;
  m.file = file;
  // The stack the functions are of: named first, so that they are checked
  // against its table wherever the key is.
  const std::vector<std::string> kernel_stacks = stacks::measured_on(net::Measured::kernel);
  if (const YAML::Node s = root["stack"]) {
    if (!s.IsScalar() ||
        std::find(kernel_stacks.begin(), kernel_stacks.end(), s.Scalar()) == kernel_stacks.end())
      throw config::ConfigError(
          config::located(config::yaml_loc(file, s), "stack",
                          fmt::format("expected a stack measured on the kernel ({}), found {}",
                                      fmt::join(kernel_stacks, ", "),
                                      s.IsScalar() ? "'" + config::printable(s.Scalar()) + "'"
                                                   : config::yaml_shape(s))));
    m.stack = s.Scalar();
  } else if (!kernel_stacks.empty()) {
    m.stack = kernel_stacks.front();
  }
  const net::FnTable* fns = stacks::find_fn_table(m.stack);
  std::map<std::string, std::string> seen;  // symbol -> where it was listed
  auto claim = [&](const std::string& sym, const std::string& where, const YAML::Node& at) {
    const auto [it, fresh] = seen.emplace(sym, where);
    if (!fresh)
      throw config::ConfigError(
          config::located(config::yaml_loc(file, at), where,
                          fmt::format("symbol '{}' is already listed under {}", sym, it->second)));
  };
  for (const auto& kv : root) {
    const std::string key = kv.first.Scalar();
    if (key == "stack") {
      continue;
    } else if (key == "functions") {
      if (!kv.second.IsMap())
        throw config::ConfigError(
            config::located(config::yaml_loc(file, kv.second), key,
                            "expected a map from Linux stack functions to kernel symbols, found " +
                                config::yaml_shape(kv.second)));
      for (const auto& fn : kv.second) {
        const std::string name = fn.first.Scalar();
        if (fns == nullptr || !fns->find(name)) {
          std::vector<std::string> names;
          for (size_t i = 0; fns != nullptr && i < fns->size(); ++i)
            names.emplace_back(fns->name(net::fn_at(i)));
          const std::string near = support::closest(name, names, 3);
          throw config::ConfigError(config::located(
              config::yaml_loc(file, fn.first), "functions." + name,
              fmt::format("not a function of the Linux stack{}",
                          near.empty() ? "" : fmt::format("; did you mean '{}'?", near))));
        }
        for (const auto& sym : symbol_list(fn.second, file, "functions." + name)) {
          claim(sym, "functions." + name, fn.second);
          m.function_of[sym] = name;
        }
      }
    } else if (key == "syscall_entry" || key == "hypervisor") {
      for (const auto& sym : symbol_list(kv.second, file, key)) {
        claim(sym, key, kv.second);
        (key == "hypervisor" ? m.hypervisor : m.syscall_entry).insert(sym);
      }
    } else {
      throw config::ConfigError(
          config::located(config::yaml_loc(file, kv.first), key,
                          "unknown key: expected stack, functions, syscall_entry or hypervisor"));
    }
  }
  return m;
}

const char* charge_kind_name(ChargeKind k) {
  switch (k) {
    case ChargeKind::function:
      return "function";
    case ChargeKind::syscall_entry:
      return "syscall_entry";
    case ChargeKind::user:
      return "user";
    case ChargeKind::unmapped:
      return "unmapped";
  }
  return "?";
}

std::string source_symbol(const std::string& symbol) {
  const auto dot = symbol.find('.');
  return dot == std::string::npos || dot == 0 ? symbol : symbol.substr(0, dot);
}

Charge charge(const SymbolMap& map, const std::vector<Frame>& chain) {
  Charge c;
  size_t i = 0;
  // A hypervisor symbol is where a sample landed, not where its time went:
  // on these guests it is where interrupts are enabled again, so the time
  // belongs to the code that ran before it. The nearest caller outside the
  // hypervisor's own symbols stands for that code.
  while (i < chain.size() && chain[i].first >= kKernelStart &&
         map.hypervisor.count(source_symbol(chain[i].second))) {
    c.via_hypervisor = true;
    ++i;
  }
  if (i == chain.size()) {
    c.name = chain.empty() ? "[none]" : source_symbol(chain.back().second);
    return c;
  }
  // What frame k is, by the table.
  auto kind_of = [&](size_t k, std::string& name) {
    name = source_symbol(chain[k].second);
    if (chain[k].first < kKernelStart) return ChargeKind::user;
    if (const auto it = map.function_of.find(name); it != map.function_of.end()) {
      name = it->second;
      return ChargeKind::function;
    }
    return map.syscall_entry.count(name) ? ChargeKind::syscall_entry : ChargeKind::unmapped;
  };
  c.kind = kind_of(i, c.name);
  switch (c.kind) {
    case ChargeKind::function:
      c.charged_to = c.name;
      break;
    case ChargeKind::syscall_entry:
      c.charged_to = "syscall_entry";
      break;
    case ChargeKind::user:
      c.charged_to = "user";
      break;
    case ChargeKind::unmapped:
      for (size_t k = i + 1; k < chain.size(); ++k) {
        std::string name;
        const ChargeKind up = kind_of(k, name);
        if (up == ChargeKind::function || up == ChargeKind::syscall_entry) {
          c.charged_to = up == ChargeKind::function ? name : "syscall_entry";
          break;
        }
      }
      break;
  }
  return c;
}

namespace {

// "TID SECONDS.NANOSECONDS:" -> ns, or -1.
int64_t sample_time_ns(const std::string& line) {
  const auto colon = line.rfind(':');
  if (colon == std::string::npos) return -1;
  auto start = line.find_last_of(' ', colon);
  start = start == std::string::npos ? 0 : start + 1;
  const std::string t = line.substr(start, colon - start);
  const auto dot = t.find('.');
  if (dot == std::string::npos || t.size() - dot - 1 != 9) return -1;
  int64_t sec = 0, ns = 0;
  const char* b = t.data();
  if (std::from_chars(b, b + dot, sec).ec != std::errc() ||
      std::from_chars(b + dot + 1, b + t.size(), ns).ec != std::errc())
    return -1;
  // perf prints no sign, and a time past what int64_t holds in ns would
  // overflow the sum below (undefined behaviour: fuzz/regressions/perf_script).
  constexpr int64_t kMaxSec = (std::numeric_limits<int64_t>::max() - 999'999'999) / 1'000'000'000;
  if (sec < 0 || ns < 0 || sec > kMaxSec) return -1;
  return sec * 1'000'000'000 + ns;
}

}  // namespace

void add_perf_samples(std::istream& in, const std::string& what,
                      const std::vector<KernelWindow>& windows, const SymbolMap& map,
                      KernelSplit& split) {
  std::vector<KernelWindow> sorted = windows;
  std::sort(sorted.begin(), sorted.end(),
            [](const KernelWindow& a, const KernelWindow& b) { return a.t0_ns < b.t0_ns; });
  for (const auto& w : sorted) {
    auto& g = split.groups[{w.repeat, w.path, w.payload, w.knobs}];
    g.packets += w.packets;
    g.window_ns += w.t1_ns - w.t0_ns;
  }
  auto window_of = [&](int64_t t) -> const KernelWindow* {
    auto it = std::upper_bound(sorted.begin(), sorted.end(), t,
                               [](int64_t v, const KernelWindow& w) { return v < w.t0_ns; });
    if (it == sorted.begin()) return nullptr;
    --it;
    return t < it->t1_ns ? &*it : nullptr;
  };
  std::vector<Frame> chain;
  int64_t t = -1;
  auto finish = [&] {
    if (t < 0) return;
    const KernelWindow* w = window_of(t);
    if (w == nullptr) {
      ++split.outside_samples;
    } else if (chain.empty()) {
      ++split.unresolved_samples;
    } else {
      auto& g = split.groups[{w->repeat, w->path, w->payload, w->knobs}];
      const Charge c = charge(map, chain);
      if (c.kind == ChargeKind::user && c.name == kDitherSymbol) {
        ++g.dither_samples;
        chain.clear();
        t = -1;
        return;
      }
      ++g.samples;
      if (c.via_hypervisor) ++g.hypervisor_samples;
      ++g.charged[{c.kind, c.name, c.charged_to}];
    }
    chain.clear();
    t = -1;
  };
  std::string line;
  int64_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty()) {
      finish();
      continue;
    }
    // A sample's line starts with its (right-aligned) TID; its frames, with a tab.
    if (line[0] != '\t') {
      finish();
      t = sample_time_ns(line);
      if (t < 0)
        throw std::runtime_error(
            fmt::format("{}:{}: expected a sample's 'TID SECONDS.NANOSECONDS:' line, found '{}'",
                        what, lineno, config::printable(line)));
      continue;
    }
    // "\tADDRESS SYMBOL"
    const auto b = line.find_first_not_of(" \t");
    // A frame line of blanks alone has no address (and `b` is then no
    // offset into the line: found by fuzzing).
    if (b == std::string::npos)
      throw std::runtime_error(fmt::format("{}:{}: expected 'ADDRESS SYMBOL', found '{}'", what,
                                           lineno, config::printable(line)));
    const auto sp = line.find(' ', b);
    uint64_t addr = 0;
    const char* s = line.data() + b;
    const char* e = line.data() + (sp == std::string::npos ? line.size() : sp);
    if (std::from_chars(s, e, addr, 16).ec != std::errc())
      throw std::runtime_error(fmt::format("{}:{}: expected 'ADDRESS SYMBOL', found '{}'", what,
                                           lineno, config::printable(line)));
    std::string sym = sp == std::string::npos ? "[unknown]" : line.substr(sp + 1);
    if (const auto paren = sym.find(" ("); paren != std::string::npos) sym.resize(paren);
    chain.emplace_back(addr, std::move(sym));
  }
  finish();
}

double wall_ns_per_packet(const KernelSplit& split, const SplitGroup& g) {
  if (g.packets == 0) return 0;
  return static_cast<double>(g.window_ns - g.dither_samples * split.period_ns) /
         static_cast<double>(g.packets);
}

std::vector<report::Row> split_rows(const KernelSplit& split, const MachineInfo& m,
                                    double loadavg) {
  std::vector<report::Row> rows;
  for (const auto& [key, g] : split.groups) {
    const auto& [repeat, path, payload, knobs] = key;
    std::vector<std::pair<std::tuple<ChargeKind, std::string, std::string>, int64_t>> charged(
        g.charged.begin(), g.charged.end());
    std::stable_sort(charged.begin(), charged.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    for (const auto& [what, samples] : charged) {
      const double per_packet =
          g.packets > 0 ? static_cast<double>(samples * split.period_ns) / g.packets : 0;
      report::Row r;
      r.set("source", std::string("kernel"))
          .set("repeat", int64_t{repeat})
          .set("payload", int64_t{payload})
          .set("dest", std::string(kernel_path_dest(path)))
          .set("path", std::string(kernel_path_name(path)))
          .set("packets", g.packets)
          .set("ns_per_packet", wall_ns_per_packet(split, g))
          .set("kind", std::string(charge_kind_name(std::get<0>(what))))
          .set("name", std::get<1>(what))
          .set("charged_to", std::get<2>(what))
          .set("samples", samples)
          .set("self_ns_per_packet", per_packet)
          .set("share", g.samples > 0 ? static_cast<double>(samples) / g.samples : 0.0)
          .set("period_ns", split.period_ns)
          .set("loadavg_1m", loadavg)
          .set("cpu_model", m.cpu_model)
          .set("kernel", m.kernel)
          .set("segments", int64_t{knobs.segments})
          // last: the columns before them keep their places
          .set("sendmmsg", int64_t{knobs.sendmmsg});
      if (knobs.nft_rules >= 0) r.set("nft_rules", int64_t{knobs.nft_rules});
      if (g.plain_packets > 0) {
        const auto n = static_cast<double>(g.plain_packets);
        r.set("plain_cpu_ns_per_packet", g.plain_cpu_ns / n)
            .set("plain_user_ns_per_packet", g.plain_user_ns / n);
      }
      rows.push_back(std::move(r));
    }
  }
  return rows;
}

std::string perf_unavailable(const std::string& perf) {
  if (geteuid() != 0)
    return "measure kernel --split needs root: only root's perf sees kernel symbols on this "
           "machine (run it as root, or without --split)";
  TempDir tmp("simloop-perf");
  try {
    run_program({perf, "--version"}, tmp.path / "err");
  } catch (const Stopped&) {
    throw;  // asked to stop: not a missing perf
  } catch (const std::exception&) {
    return fmt::format(
        "no usable perf program ('{} --version' failed): install linux-perf "
        "(scripts/install-deps.sh), or name it with --perf",
        perf);
  }
  std::ifstream ks("/proc/kallsyms");
  std::string addr;
  bool any = false, seen = false;
  for (int i = 0; i < 64 && (ks >> addr); ++i) {
    seen = true;
    if (addr.find_first_not_of('0') != std::string::npos) any = true;
    ks.ignore(1 << 12, '\n');
  }
  if (!seen || !any)
    return "kernel symbols are hidden: /proc/kallsyms shows no addresses (see "
           "/proc/sys/kernel/kptr_restrict)";
  return "";
}

namespace {

// perf record attached to this process, its events off until enable():
// the control FIFOs make enable and disable take effect before they return.
class PerfRecorder {
 public:
  PerfRecorder(const SplitOptions& o, const fs::path& dir) : dir_(dir) {
    ctl_path_ = dir / "ctl";
    ack_path_ = dir / "ack";
    if (mkfifo(ctl_path_.c_str(), 0600) != 0 || mkfifo(ack_path_.c_str(), 0600) != 0)
      throw std::runtime_error(fmt::format("mkfifo in {}: {}", dir.string(), std::strerror(errno)));
    const std::vector<std::string> argv = {
        o.perf,
        "record",
        "-q",
        "-e",
        "cpu-clock",
        "-c",
        std::to_string(o.period_ns),
        "-g",
        "-k",
        "CLOCK_MONOTONIC",
        "-D",
        "-1",
        "--control",
        fmt::format("fifo:{},{}", ctl_path_.string(), ack_path_.string()),
        "-p",
        std::to_string(getpid()),
        "-o",
        (dir / "perf.data").string()};
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    const std::string err = (dir / "record.err").string();
    pid_ = fork();
    if (pid_ < 0) throw std::runtime_error(fmt::format("fork: {}", std::strerror(errno)));
    if (pid_ == 0) {
      const int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0600);
      if (e >= 0) {
        dup2(e, STDERR_FILENO);
        dup2(e, STDOUT_FILENO);
      }
      execvp(args[0], args.data());
      _exit(127);
    }
    // perf opens the FIFOs once it is ready; until then opening the write
    // end fails with ENXIO.
    for (int tries = 0; ctl_ < 0; ++tries) {
      ctl_ = open(ctl_path_.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
      if (ctl_ >= 0) break;
      if (exited() || tries > 3000) fail("perf record did not start");
      usleep(10'000);
    }
    ack_ = open(ack_path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (ack_ < 0) fail("cannot open perf's acknowledgement FIFO");
  }

  ~PerfRecorder() {
    if (pid_ > 0 && !done_) {
      kill(pid_, SIGKILL);
      int st = 0;
      waitpid(pid_, &st, 0);
    }
    if (ctl_ >= 0) close(ctl_);
    if (ack_ >= 0) close(ack_);
  }
  PerfRecorder(const PerfRecorder&) = delete;
  PerfRecorder& operator=(const PerfRecorder&) = delete;

  void enable() { command("enable\n"); }
  void disable() { command("disable\n"); }

  // Stops perf and waits for it to write its file.
  void finish() {
    kill(pid_, SIGINT);
    int st = 0;
    while (waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
    }
    done_ = true;
    // perf record ends on SIGINT with status 0 or by that signal.
    if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0) && !(WIFSIGNALED(st) && WTERMSIG(st) == SIGINT))
      throw std::runtime_error("perf record failed:" + last_lines(dir_ / "record.err", 8));
  }

 private:
  bool exited() {
    int st = 0;
    if (waitpid(pid_, &st, WNOHANG) == pid_) {
      done_ = true;
      return true;
    }
    return false;
  }
  [[noreturn]] void fail(const std::string& what) {
    throw std::runtime_error(what + ":" + last_lines(dir_ / "record.err", 8));
  }
  void command(const char* c) {
    const size_t n = std::strlen(c);
    if (write(ctl_, c, n) != static_cast<ssize_t>(n)) fail("cannot write to perf's control FIFO");
    pollfd p{ack_, POLLIN, 0};
    char buf[16];
    const int64_t deadline = monotonic_ns() + 10'000'000'000;
    while (monotonic_ns() < deadline) {
      if (poll(&p, 1, 10) > 0 && read(ack_, buf, sizeof buf) > 0) return;
      if (exited()) fail("perf record stopped");
    }
    fail("perf did not acknowledge '" + std::string(c, n - 1) + "'");
  }

  fs::path dir_, ctl_path_, ack_path_;
  pid_t pid_ = -1;
  int ctl_ = -1, ack_ = -1;
  bool done_ = false;
};

}  // namespace

KernelSplit run_kernel_split(const KernelOptions& opt, const SplitOptions& o,
                             std::vector<KernelResult>& results) {
  if (const std::string why = perf_unavailable(o.perf); !why.empty()) throw std::runtime_error(why);
  const SymbolMap map = load_symbol_map(o.symbols);
  TempDir tmp("simloop-perf");
  std::vector<KernelWindow> windows;
  {
    PerfRecorder rec(o, tmp.path);
    rec.enable();
    KernelOptions dithered = opt;
    dithered.dither = true;
    // perf slows the thread it samples (about a sixth here): each slice
    // also runs plain, perf off, for the totals.
    bool on = true;
    dithered.profile = [&](bool want) {
      if (want == on) return;
      if (want)
        rec.enable();
      else
        rec.disable();
      on = want;
    };
    results = run_kernel(dithered, &windows);
    rec.disable();
    rec.finish();
  }
  const fs::path script = tmp.path / "script.txt";
  run_program(
      {o.perf, "script", "-i", (tmp.path / "perf.data").string(), "-F", "tid,time,ip,sym", "--ns"},
      tmp.path / "script.err", script);
  KernelSplit split;
  split.period_ns = o.period_ns;
  std::ifstream in(script);
  add_perf_samples(in, "perf script", windows, map, split);
  for (const KernelResult& r : results) {
    const auto g = split.groups.find({r.repeat, r.path, r.payload, r.knobs()});
    if (g == split.groups.end()) continue;
    g->second.plain_packets = r.plain_packets;
    g->second.plain_cpu_ns = r.plain_cpu_s * 1e9;
    g->second.plain_user_ns = r.plain_user_s * 1e9;
  }
  return split;
}

}  // namespace simloop::measure
