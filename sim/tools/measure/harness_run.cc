#include "sim/tools/measure/harness_run.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "sim/report/csv_table.h"
#include "sim/support/input_error.h"
#include "sim/support/text.h"
#include "sim/tools/measure/programs.h"

// Where `cmake --install` puts the harness builds, under the prefix (set by
// CMake from GNUInstallDirs).
#ifndef SIMLOOP_INSTALL_LIBEXECDIR
#define SIMLOOP_INSTALL_LIBEXECDIR "libexec"
#endif

namespace simloop::measure {

namespace fs = std::filesystem;

namespace {

using support::parse_u64;
using support::words;

std::string read_all(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// "./" in front of a relative path: without a '/' execvp would look the
// name up on PATH, and valgrind would take a name that starts with '-' for
// one of its own options.
std::string runnable(const std::string& path) {
  return fs::path(path).is_absolute() || path.starts_with("./") ? path : "./" + path;
}

std::vector<std::string> harness_argv(const HarnessSpec& h, int64_t packets) {
  const std::string program = runnable(h.path);
  if (!h.command.empty()) {
    std::vector<std::string> argv = {program};
    for (size_t i = 1; i < h.command.size(); ++i)
      argv.push_back(support::replace_all(h.command[i], kCountWord, std::to_string(packets)));
    return argv;
  }
  std::vector<std::string> argv = {program,
                                   "-l",
                                   std::to_string(h.opt.payload),
                                   "-n",
                                   std::to_string(packets),
                                   "--warmup",
                                   std::to_string(h.opt.warmup)};
  // The path, as the harness's options (path_options.h) name it.
  for (auto field : workload::Path::kFields) {
    argv.push_back(workload::Path::option(field));
    argv.push_back(h.opt.path.get(field));
  }
  return argv;
}

void check_spec(const HarnessSpec& h) {
  if (!fs::is_regular_file(h.path))
    throw std::runtime_error(
        h.command.empty()
            ? fmt::format("{}: no such harness (it is built as simloop-harness*)", h.path)
            : fmt::format("{}: no such program", h.path));
  if (h.packets_lo < 0 || h.packets_hi <= h.packets_lo)
    throw std::runtime_error(fmt::format("packet counts {} and {}: the second must be larger",
                                         h.packets_lo, h.packets_hi));
}

// Runs the harness under valgrind `tool` twice, with packets_lo and then
// packets_hi packets, each writing its output to the file that `out_option`
// names; returns both outputs as `parse` reads them.
template <class Parse>
auto valgrind_twice(const HarnessSpec& h, const std::vector<std::string>& tool,
                    const std::string& out_option, Parse parse) {
  check_spec(h);
  TempDir tmp("simloop-valgrind");
  using T = decltype(parse(std::declval<std::istream&>(), std::string()));
  std::array<T, 2> got;
  const std::array<int64_t, 2> packets = {h.packets_lo, h.packets_hi};
  for (size_t k = 0; k < 2; ++k) {
    const fs::path out = tmp.path / fmt::format("valgrind.{}", k);
    std::vector<std::string> argv = {"valgrind"};
    argv.insert(argv.end(), tool.begin(), tool.end());
    argv.push_back(out_option + "=" + out.string());
    for (auto& a : harness_argv(h, packets[k])) argv.push_back(std::move(a));
    run_program(argv, tmp.path / "stderr");
    std::ifstream in(out);
    got[k] = parse(in, out.string());
  }
  return got;
}

}  // namespace

std::string command_line(const std::vector<std::string>& command) {
  std::string line;
  for (const auto& w : command) {
    if (!line.empty()) line += ' ';
    // Words a shell would split or expand, quoted, so the line can be rerun
    // (braces only where they could expand: with a comma or "..").
    const bool plain = !w.empty() &&
                       w.find_first_not_of(
                           "abcdefghijklmnopqrstuvwxyz"
                           "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                           "0123456789{}_-+=.:/@%") == std::string::npos &&
                       (w.find('{') == std::string::npos || w.find("..") == std::string::npos);
    line += plain ? w : "'" + support::replace_all(w, "'", "'\\''") + "'";
  }
  return line;
}

HarnessSpec program_spec(const std::vector<std::string>& command, int64_t lo, int64_t hi) {
  if (command.empty())
    throw config::ConfigError("--program: give the program's command line after --");
  if (command[0].find(kCountWord) != std::string::npos)
    throw config::ConfigError(
        fmt::format("--program: {}: {} is replaced in the program's arguments, not in its path",
                    command[0], kCountWord));
  if (!fs::is_regular_file(command[0]))
    throw config::ConfigError(fmt::format(
        "--program: {}: no such file (give the program's path, as ./NAME in this directory)",
        command[0]));
  if (std::none_of(command.begin() + 1, command.end(),
                   [](const std::string& w) { return w.find(kCountWord) != std::string::npos; }))
    throw config::ConfigError(fmt::format(
        "--program: `{}` has no {} where the count of iterations goes: the two runs, of {} and {} "
        "iterations, would be the same run",
        command_line(command), kCountWord, lo, hi));
  HarnessSpec h;
  h.path = command[0];
  h.command = command;
  h.packets_lo = lo;
  h.packets_hi = hi;
  return h;
}

models::CacheGeometry parse_geometry(const std::string& spec) {
  std::vector<uint64_t> v;
  std::string part;
  std::istringstream in(spec);
  while (std::getline(in, part, ',')) {
    uint64_t x = 0;
    if (!parse_u64(part, &x))
      throw std::invalid_argument(
          fmt::format("cache geometry '{}': expected SIZE,ASSOC,LINE in bytes", spec));
    v.push_back(x);
  }
  if (v.size() != 3)
    throw std::invalid_argument(
        fmt::format("cache geometry '{}': expected SIZE,ASSOC,LINE in bytes", spec));
  // The bounds of machine.cache's keys, checked before a cache of that size
  // is made (a terabyte would end in std::bad_alloc, not a message).
  constexpr uint64_t kMaxSize = uint64_t{256} << 20, kMaxAssoc = 64, kMinLine = 8, kMaxLine = 512;
  if (v[0] < 64 || v[0] > kMaxSize || v[1] < 1 || v[1] > kMaxAssoc || v[2] < kMinLine ||
      v[2] > kMaxLine)
    throw std::invalid_argument(fmt::format(
        "cache geometry '{}': expected SIZE in [64, {}], ASSOC in [1, {}] and LINE in [{}, {}] "
        "bytes",
        spec, kMaxSize, kMaxAssoc, kMinLine, kMaxLine));
  const models::CacheGeometry g{static_cast<int64_t>(v[0]), static_cast<int>(v[1]),
                                static_cast<int>(v[2])};
  if (v[1] == 0 || v[2] == 0 || v[0] % (v[1] * v[2]) != 0)
    throw std::invalid_argument(fmt::format(
        "cache geometry '{}': the size must be a whole number of ASSOC x LINE sets", spec));
  // The model's own checks (powers of two) apply as well.
  models::ICacheConfig c;
  c.l1 = g;
  c.l2_enabled = false;
  try {
    models::ICache check(c);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(fmt::format("cache geometry '{}': {}", spec, e.what()));
  }
  return g;
}

std::string geometry_spec(const models::CacheGeometry& g) {
  return fmt::format("{},{},{}", g.size_bytes, g.assoc, g.line_bytes);
}

std::map<std::string, uint64_t> parse_cachegrind(std::istream& in, const std::string& what) {
  std::vector<std::string> events, summary;
  int events_line = 0, lineno = 0;
  for (std::string line; std::getline(in, line);) {
    ++lineno;
    if (line.starts_with("events:")) {
      events = words(line.substr(7));
      events_line = lineno;
    } else if (line.starts_with("summary:")) {
      summary = words(line.substr(8));
      if (summary.size() != events.size())
        throw std::runtime_error(fmt::format("{}:{}: summary has {} counts for {} events (line {})",
                                             what, lineno, summary.size(), events.size(),
                                             events_line));
    }
  }
  if (events.empty()) throw std::runtime_error(fmt::format("{}: no 'events:' line", what));
  if (summary.empty()) throw std::runtime_error(fmt::format("{}: no 'summary:' line", what));
  std::map<std::string, uint64_t> out;
  for (size_t i = 0; i < events.size(); ++i) {
    uint64_t v = 0;
    if (!parse_u64(summary[i], &v))
      throw std::runtime_error(
          fmt::format("{}: summary count '{}' of {} is not a number", what, summary[i], events[i]));
    out[events[i]] = v;
  }
  return out;
}

std::map<uint64_t, uint64_t> parse_callgrind_instr(std::istream& in, const std::string& what) {
  return parse_callgrind_flow(in, what).instr;
}

models::HotProfile hot_profile(const std::map<uint64_t, uint64_t>& lo,
                               const std::map<uint64_t, uint64_t>& hi, int64_t packets,
                               const std::vector<models::NmSymbol>& symbols, double min_per_packet,
                               const std::vector<uint64_t>* instruction_starts) {
  // Where the instruction at `a` ends.
  auto end_of = [&](uint64_t a) {
    if (instruction_starts == nullptr) return a + 1;
    const auto& st = *instruction_starts;
    const auto it = std::upper_bound(st.begin(), st.end(), a);
    if (it == st.end() || it == st.begin() || *(it - 1) != a) return a + 1;
    return *it;
  };
  std::vector<const models::NmSymbol*> text;
  for (const auto& s : symbols)
    if (s.text && s.size > 0) text.push_back(&s);  // already in address order
  models::HotProfile out;
  const models::NmSymbol* cur = nullptr;
  uint64_t start = 0, last = 0;
  auto flush = [&] {
    if (cur != nullptr)
      out[cur->name].emplace_back(start - cur->addr,
                                  std::min(end_of(last), cur->addr + cur->size) - start);
    cur = nullptr;
  };
  for (const auto& [addr, count] : hi) {
    const auto l = lo.find(addr);
    // Signed: an address-dependent path may run less in the longer run.
    const double per =
        (static_cast<double>(count) - (l == lo.end() ? 0.0 : static_cast<double>(l->second))) /
        static_cast<double>(std::max<int64_t>(packets, 1));
    if (per < min_per_packet) continue;
    // The symbol holding addr: the last one starting at or before it.
    auto it = std::upper_bound(text.begin(), text.end(), addr,
                               [](uint64_t a, const models::NmSymbol* s) { return a < s->addr; });
    if (it == text.begin()) continue;
    const models::NmSymbol* sym = *(it - 1);
    if (addr >= sym->addr + sym->size) continue;
    if (sym == cur && addr - last < 16) {
      last = addr;
      continue;
    }
    flush();
    cur = sym;
    start = last = addr;
  }
  flush();
  return out;
}

std::string format_hot_profile(const models::HotProfile& p, const std::string& header) {
  std::string out;
  std::istringstream h(header);
  for (std::string l; std::getline(h, l);) out += "# " + l + "\n";
  out += "# offset bytes symbol: the bytes of each function that run per packet\n";
  for (const auto& [sym, ranges] : p)
    for (const auto& [off, bytes] : ranges) out += fmt::format("{:#x} {} {}\n", off, bytes, sym);
  return out;
}

std::string format_profile(const CodeProfile& p, const std::string& header) {
  std::string out = format_hot_profile(p.hot, header);
  if (p.walks.empty()) return out;
  out +=
      "# walk SYMBOL ENTRY CALLS_PER_PACKET: what one call of the routine at SYMBOL + ENTRY runs,\n"
      "# in order: 'run OFFSET BYTES' and 'call OFFSET TARGET TARGET_OFFSET' (calls per packet 0:\n"
      "# it runs throughout, and this is one packet's turn of it, as it runs); then, for a\n"
      "# routine called K times a packet along different paths, 'per-call 1' ... 'per-call K',\n"
      "# each followed by what that call of a packet runs (the longest first)\n";
  return out + format_walks(p.walks);
}

models::HotProfile load_hot_profile(std::istream& in, const std::string& what) {
  return load_profile(in, what).hot;
}

std::string profiled_program(const std::string& profile_text) {
  std::istringstream in(profile_text);
  const std::string head = "# " + std::string(kProgramHead);
  for (std::string line; std::getline(in, line) && line.starts_with("#");)
    if (line.starts_with(head)) return line.substr(head.size());
  return "";
}

std::set<std::string> program_loops(const CodeProfile& p) {
  std::set<std::string> loops;
  for (const auto& [key, walk] : p.walks)
    if (walk.calls_per_packet == 0) loops.insert(key.first);
  return loops;
}

std::string harness_layout_name(const std::string& path) {
  const std::string f = fs::path(path).filename().string();
  if (f == "simloop-harness") return "base";
  if (f.starts_with("simloop-harness-")) return f.substr(16);
  return f;
}

std::vector<std::string> harness_dirs(const std::string& exe) {
  const fs::path bin = fs::path(exe).parent_path();
  const fs::path libexec = SIMLOOP_INSTALL_LIBEXECDIR;
  const fs::path installed =
      (libexec.is_absolute() ? libexec : bin.parent_path() / libexec) / "simloop";
  return {bin.string(), installed.lexically_normal().string()};
}

std::vector<std::string> find_harnesses(const std::string& exe) {
  for (const auto& dir : harness_dirs(exe)) {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      const std::string f = e.path().filename().string();
      if (e.is_regular_file(ec) && (f == "simloop-harness" || f.starts_with("simloop-harness-")))
        out.push_back(e.path().string());
    }
    std::sort(out.begin(), out.end(), [](const std::string& a, const std::string& b) {
      const bool ab = harness_layout_name(a) == "base";
      const bool bb = harness_layout_name(b) == "base";
      return ab != bb ? ab : a < b;
    });
    if (!out.empty()) return out;
  }
  return {};
}

std::vector<std::string> harnesses_or_default(const std::vector<std::string>& given) {
  if (!given.empty()) return given;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  auto found = ec ? std::vector<std::string>{} : find_harnesses(self.string());
  if (found.empty())
    throw config::ConfigError(fmt::format(
        "no simloop-harness* beside this simloop binary or where it is installed ({}); give "
        "HARNESS paths",
        ec ? std::string("?") : fmt::format("{}", fmt::join(harness_dirs(self.string()), ", "))));
  return found;
}

std::string nm_output(const std::string& binary) {
  TempDir tmp("simloop-valgrind");
  run_program({"nm", "-S", "--defined-only", "-n", "--", binary}, tmp.path / "err",
              tmp.path / "out");
  std::string out = read_all(tmp.path / "out");
  // PLT sections: "IDX NAME SIZE VMA LMA OFFSET ALIGN FLAGS" lines of objdump -h -w.
  run_program({"objdump", "-h", "-w", "--", binary}, tmp.path / "err", tmp.path / "sections");
  std::istringstream in(read_all(tmp.path / "sections"));
  for (std::string line; std::getline(in, line);) {
    const auto w = words(line);
    uint64_t idx = 0, size = 0, vma = 0;
    if (w.size() < 4 || !parse_u64(w[0], &idx) || !parse_u64(w[2], &size, 16) ||
        !parse_u64(w[3], &vma, 16) || size == 0)
      continue;
    if (w[1].starts_with(".plt") || w[1].starts_with(".iplt"))
      out += fmt::format("{:016x} {:016x} t {}\n", vma, size, w[1]);
  }
  return out;
}

std::vector<uint64_t> instruction_starts(const std::string& binary) {
  TempDir tmp("simloop-valgrind");
  run_program({"objdump", "-d", "--no-show-raw-insn", "-w", "--", binary}, tmp.path / "err",
              tmp.path / "out");
  std::ifstream in(tmp.path / "out");
  return parse_objdump_starts(in);
}

std::vector<report::Row> run_harness_native(const HarnessSpec& h, int64_t packets) {
  if (!fs::is_regular_file(h.path))
    throw std::runtime_error(
        fmt::format("{}: no such harness (it is built as simloop-harness*)", h.path));
  TempDir tmp("simloop-valgrind");
  run_program(harness_argv(h, packets), tmp.path / "err", tmp.path / "out");
  const std::string out = read_all(tmp.path / "out");
  if (out.empty()) throw std::runtime_error(fmt::format("{}: printed nothing", h.path));
  std::vector<report::Row> rows;
  try {
    report::CsvReader csv(out, h.path);
    const auto& header = csv.header();
    while (csv.next()) {
      const auto& f = csv.cells();
      report::Row row;
      for (size_t i = 0; i < f.size(); ++i) {
        // Numbers stay numbers, as in rows made in this process.
        int64_t iv = 0;
        double dv = 0;
        const char* b = f[i].data();
        const char* e = b + f[i].size();
        if (auto r = std::from_chars(b, e, iv); !f[i].empty() && r.ec == std::errc() && r.ptr == e)
          row.set(header[i], iv);
        else if (auto r2 = std::from_chars(b, e, dv);
                 !f[i].empty() && r2.ec == std::errc() && r2.ptr == e)
          row.set(header[i], dv);
        else
          row.set(header[i], f[i]);
      }
      row.set("layout", harness_layout_name(h.path)).set("harness", h.path);
      rows.push_back(std::move(row));
    }
  } catch (const report::CsvError& e) {
    throw std::runtime_error(e.what());
  }
  if (rows.empty()) throw std::runtime_error(fmt::format("{}: printed no result row", h.path));
  return rows;
}

CachegrindResult run_cachegrind(const HarnessSpec& h, const models::CacheGeometry& i1,
                                const models::CacheGeometry& d1, const models::CacheGeometry& ll) {
  const auto totals =
      valgrind_twice(h,
                     {"--tool=cachegrind", "--cache-sim=yes", "--I1=" + geometry_spec(i1),
                      "--D1=" + geometry_spec(d1), "--LL=" + geometry_spec(ll)},
                     "--cachegrind-out-file", parse_cachegrind);
  const double n = static_cast<double>(h.packets_hi - h.packets_lo);
  auto per = [&](std::initializer_list<const char*> events) {
    double d = 0;
    for (const char* e : events) {
      const auto a = totals[0].find(e), b = totals[1].find(e);
      if (a == totals[0].end() || b == totals[1].end())
        throw std::runtime_error(fmt::format("cachegrind output has no {} event", e));
      d += static_cast<double>(b->second) - static_cast<double>(a->second);
    }
    return d / n;
  };
  CachegrindResult r{i1, d1, ll};
  r.instructions = per({"Ir"});
  r.i1_misses = per({"I1mr"});
  r.d1_misses = per({"D1mr", "D1mw"});
  r.ll_misses = per({"ILmr", "DLmr", "DLmw"});
  r.ll_i_misses = per({"ILmr"});
  return r;
}

report::Row cachegrind_row(const HarnessSpec& h, const CachegrindResult& r) {
  report::Row row;
  row.set("source", std::string("cachegrind")).set("layout", harness_layout_name(h.path));
  if (!h.command.empty()) {
    // A program's iterations, not a path through the stack.
    row.set("program", command_line(h.command));
  } else {
    set_path_columns(row, h.opt);
    for (const auto& [column, field] : kCachegrindPathColumns)
      if (h.opt.path.get(field) != workload::Path{}.get(field))
        row.set(std::string(column), h.opt.path.get(field));
  }
  row.set("i1", geometry_spec(r.i1))
      .set("i1_size", r.i1.size_bytes)
      .set("i1_assoc", int64_t{r.i1.assoc})
      .set("i1_line", int64_t{r.i1.line_bytes})
      .set("d1", geometry_spec(r.d1))
      .set("ll", geometry_spec(r.ll))
      .set("packets_lo", h.packets_lo)
      .set("packets_hi", h.packets_hi)
      .set("instructions_per_packet", r.instructions)
      .set("i1_misses_per_packet", r.i1_misses)
      .set("d1_misses_per_packet", r.d1_misses)
      .set("ll_misses_per_packet", r.ll_misses)
      .set("ll_i_misses_per_packet", r.ll_i_misses);
  if (h.command.empty()) row.set("harness", h.path);
  return row;
}

namespace {

// The share of the instructions between the two flows that ran outside
// the binary's code: in other objects, or in its own but, by hot_profile's
// rule, in no function (the last sized text symbol at or before an address
// covers it).
double share_outside(const CallgrindFlow& lo, const CallgrindFlow& hi,
                     const std::vector<models::NmSymbol>& symbols) {
  std::vector<const models::NmSymbol*> text;
  for (const auto& s : symbols)
    if (s.text && s.size > 0) text.push_back(&s);
  const double elsewhere =
      std::max(0.0, static_cast<double>(hi.elsewhere) - static_cast<double>(lo.elsewhere));
  double all = elsewhere, outside = elsewhere;
  for (const auto& [addr, n] : hi.instr) {
    const auto l = lo.instr.find(addr);
    const double d =
        static_cast<double>(n) - (l == lo.instr.end() ? 0.0 : static_cast<double>(l->second));
    if (d <= 0) continue;
    all += d;
    auto it = std::upper_bound(text.begin(), text.end(), addr,
                               [](uint64_t a, const models::NmSymbol* s) { return a < s->addr; });
    if (it == text.begin() || addr >= (*(it - 1))->addr + (*(it - 1))->size) outside += d;
  }
  return all > 0 ? outside / all : 0.0;
}

}  // namespace

CodeProfile run_profile(const HarnessSpec& h, double min_per_packet, double* outside) {
  // PLT stubs as functions of their own (--skip-plt=no): calls through them
  // fetch their lines too.
  const auto flows = valgrind_twice(
      h,
      {"--tool=callgrind", "--dump-instr=yes", "--dump-line=no", "--compress-pos=no",
       "--compress-strings=no", "--collect-jumps=yes", "--skip-plt=no"},
      "--callgrind-out-file", [&h](std::istream& in, const std::string& what) {
        // A program's own object only: a shared library's addresses can
        // fall on its own.
        return parse_callgrind_flow(in, what, h.command.empty() ? std::string() : h.path);
      });
  std::istringstream nm(nm_output(h.path));
  const auto symbols = models::parse_nm(nm);
  const auto starts = instruction_starts(h.path);
  const int64_t n = h.packets_hi - h.packets_lo;
  if (outside != nullptr) *outside = share_outside(flows[0], flows[1], symbols);
  CodeProfile p;
  p.hot = hot_profile(flows[0].instr, flows[1].instr, n, symbols, min_per_packet, &starts);
  p.walks = walk_profile(flows[0], flows[1], n, symbols, starts, min_per_packet);
  return p;
}

}  // namespace simloop::measure
