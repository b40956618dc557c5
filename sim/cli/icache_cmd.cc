// simloop measure cachegrind / measure profile: the native harness under
// valgrind. simloop icache: the I-cache model pointed at the harness's
// symbol map, beside cachegrind's counts.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "cli/commands.h"
#include "measure/compare.h"
#include "measure/harness_run.h"
#include "measure/icache_check.h"
#include "measure/kernel.h"
#include "report/table.h"

namespace simloop::cli {

namespace fs = std::filesystem;

namespace {

// What every harness command takes: the payload and the path through the stack.
struct PathArgs {
  measure::NativeOptions opt;
  PathNames names;
  PathArgs() { opt.warmup = 1000; }
  void add(CLI::App* c) {
    c->add_option("-l,--payload", opt.payload, "UDP payload bytes")
        ->check(CLI::Range(0, 9188))
        ->capture_default_str();
    c->add_option("--warmup", opt.warmup, "Untimed datagrams first, in every run")
        ->check(CLI::Range(int64_t{0}, int64_t{1} << 30))
        ->capture_default_str();
    names.add(c);
  }
  measure::NativeOptions resolved() const {
    measure::NativeOptions o = opt;
    names.apply(o);
    return o;
  }
};

// The harness builds next to this simloop binary, base first.
std::vector<std::string> default_harnesses() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  std::vector<std::string> out;
  if (ec) return out;
  for (const auto& e : fs::directory_iterator(self.parent_path(), ec)) {
    const std::string f = e.path().filename().string();
    if (e.is_regular_file() && (f == "simloop-harness" || f.starts_with("simloop-harness-")))
      out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end(), [](const std::string& a, const std::string& b) {
    const bool ab = measure::harness_layout_name(a) == "base";
    const bool bb = measure::harness_layout_name(b) == "base";
    return ab != bb ? ab : a < b;
  });
  return out;
}

std::vector<std::string> harnesses_or_default(const std::vector<std::string>& given) {
  if (!given.empty()) return given;
  auto found = default_harnesses();
  if (found.empty())
    throw UserError("no simloop-harness* next to this simloop binary; give HARNESS paths");
  return found;
}

std::vector<models::CacheGeometry> geometries(const std::vector<std::string>& specs) {
  std::vector<models::CacheGeometry> out;
  for (const auto& s : specs) {
    try {
      out.push_back(measure::parse_geometry(s));
    } catch (const std::invalid_argument& e) {
      throw UserError(fmt::format("--I1: {}", e.what()));
    }
  }
  return out;
}

void write_rows(const std::string& out, const std::vector<report::Row>& rows) {
  if (out.empty()) return;
  report::write_rows(out, rows);
  spdlog::info("wrote {}", out);
}

// ---- measure cachegrind ----------------------------------------------------

struct CachegrindArgs {
  PathArgs path;
  std::vector<std::string> harnesses;
  std::vector<std::string> i1 = {"1024,1,64", "4096,2,64", "8192,4,64"};
  std::string d1 = "32768,8,64", ll = "1048576,16,64";
  std::vector<int64_t> packets = {2000, 12000};
  std::string out;
};

int run_cachegrind_cmd(const CachegrindArgs& a) {
  const auto i1s = geometries(a.i1);
  models::CacheGeometry d1{}, ll{};
  try {
    d1 = measure::parse_geometry(a.d1);
    ll = measure::parse_geometry(a.ll);
  } catch (const std::invalid_argument& e) {
    throw UserError(fmt::format("--D1/--LL: {}", e.what()));
  }
  if (a.packets.size() != 2 || a.packets[0] >= a.packets[1])
    throw UserError("--packets: give two counts, the smaller first (e.g. 2000,12000)");
  std::vector<report::Row> rows;
  for (const auto& path : harnesses_or_default(a.harnesses)) {
    measure::HarnessSpec h{path, a.path.resolved(), a.packets[0], a.packets[1]};
    if (!a.out.empty()) {
      // The symbol map beside the results: what the model is pointed at.
      const std::string nm_file =
          fmt::format("{}.{}.nm", a.out, measure::harness_layout_name(path));
      report::write_file_atomic(nm_file, measure::nm_output(path));
    }
    for (const auto& g : i1s) {
      spdlog::info("cachegrind: {} with I1 {}", path, measure::geometry_spec(g));
      rows.push_back(measure::cachegrind_row(h, measure::run_cachegrind(h, g, d1, ll)));
    }
  }
  std::cout << report::format_table(
      rows, {"layout", "payload", "dest", "i1", "instructions_per_packet", "i1_misses_per_packet",
             "d1_misses_per_packet", "ll_misses_per_packet"});
  write_rows(a.out, rows);
  if (!a.out.empty()) {
    // The machine the runs were made on, beside them: cachegrind's counts do
    // not depend on it, but its glibc chose the copy routine that ran.
    auto desc = measure::machine_info().to_json();
    desc["command"] = "simloop measure cachegrind";
    desc["d1"] = a.d1;
    desc["ll"] = a.ll;
    report::write_file_atomic(a.out + ".machine.json", desc.dump(2) + "\n");
  }
  return 0;
}

// ---- measure profile -------------------------------------------------------

struct ProfileArgs {
  PathArgs path;
  std::string harness;
  std::vector<int64_t> packets = {2000, 12000};
  double min_per_packet = 0.5;
  std::string out = "out/harness-profile.txt";
};

int run_profile_cmd(const ProfileArgs& a) {
  const std::string harness = a.harness.empty() ? harnesses_or_default({}).front() : a.harness;
  if (a.packets.size() != 2 || a.packets[0] >= a.packets[1])
    throw UserError("--packets: give two counts, the smaller first (e.g. 2000,12000)");
  measure::HarnessSpec h{harness, a.path.resolved(), a.packets[0], a.packets[1]};
  const models::HotProfile p = measure::run_profile(h, a.min_per_packet);
  uint64_t bytes = 0, ranges = 0;
  for (const auto& [sym, rs] : p)
    for (const auto& r : rs) {
      bytes += r.second;
      ++ranges;
    }
  const std::string header = fmt::format(
      "Hot profile of {} (callgrind instruction counts, {} minus {} packets;\n"
      "payload {}, dest {}, align {}, copy {}; instructions run at least {} times a packet)",
      harness, a.packets[1], a.packets[0], h.opt.payload, a.path.names.dest, a.path.names.align,
      a.path.names.copy, a.min_per_packet);
  fs::create_directories(fs::path(a.out).parent_path().empty() ? fs::path(".")
                                                               : fs::path(a.out).parent_path());
  report::write_file_atomic(a.out, measure::format_hot_profile(p, header));
  std::cout << fmt::format("{} functions, {} ranges, {} hot bytes: wrote {}\n", p.size(), ranges,
                           bytes, a.out);
  return 0;
}

// ---- icache ----------------------------------------------------------------

struct ICacheArgs {
  PathArgs path;
  std::vector<std::string> harnesses;
  std::vector<std::string> i1 = {"1024,1,64", "4096,2,64", "8192,4,64"};
  std::string owners, profile, measured, out;
  double hot_fraction = 1.0;
};

struct Key {
  std::string layout, i1;
  auto operator<=>(const Key&) const = default;
};

// Cachegrind rows for the same path, by layout and geometry.
std::map<Key, double> read_measured(const std::string& file, const measure::NativeOptions& o) {
  std::ifstream in(file);
  if (!in) throw UserError(fmt::format("{}: cannot read the file", file));
  std::string line;
  if (!std::getline(in, line)) throw UserError(fmt::format("{}: empty", file));
  const auto header = report::split_csv_line(line);
  auto col = [&](const std::string& name) {
    const auto it = std::find(header.begin(), header.end(), name);
    if (it == header.end())
      throw UserError(
          fmt::format("{}: no column '{}' (written by simloop measure cachegrind?)", file, name));
    return static_cast<size_t>(it - header.begin());
  };
  const size_t src = col("source"), lay = col("layout"), i1 = col("i1"), pay = col("payload"),
               dst = col("dest"), al = col("align"), cp = col("copy"),
               val = col("i1_misses_per_packet");
  std::map<Key, double> m;
  int n = 1;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) continue;
    const auto f = report::split_csv_line(line);
    if (f.size() != header.size())
      throw UserError(
          fmt::format("{}:{}: {} fields, the header has {}", file, n, f.size(), header.size()));
    if (f[src] != "cachegrind" || f[pay] != std::to_string(o.payload) ||
        f[dst] != measure::dest_name(o.dest) || f[al] != net::align_policy_name(o.stack.align) ||
        f[cp] != net::loop_copy_name(o.stack.loop_copy))
      continue;
    try {
      m[{f[lay], f[i1]}] = std::stod(f[val]);
    } catch (const std::exception&) {
      throw UserError(
          fmt::format("{}:{}: i1_misses_per_packet '{}' is not a number", file, n, f[val]));
    }
  }
  return m;
}

int run_icache_cmd(const ICacheArgs& a) {
  const auto i1s = geometries(a.i1);
  const measure::NativeOptions opt = a.path.resolved();
  const std::string owners_file =
      a.owners.empty() ? tree_file("configs/harness/owners.txt").string() : a.owners;
  const auto owners = read_owners(owners_file);
  std::optional<models::HotProfile> profile;
  if (!a.profile.empty()) {
    std::ifstream in(a.profile);
    if (!in) throw UserError(fmt::format("{}: cannot read the file", a.profile));
    try {
      profile = measure::load_hot_profile(in, a.profile);
    } catch (const std::runtime_error& e) {
      throw UserError(e.what());
    }
  }
  const models::PathTrace trace = measure::harness_trace(opt);
  std::map<Key, double> measured;
  if (!a.measured.empty()) measured = read_measured(a.measured, opt);

  std::vector<report::Row> rows;
  std::vector<measure::Comparison> cmp;
  std::map<std::string, std::vector<std::pair<double, double>>> by_geometry;  // i1 -> (m, p)
  for (const auto& path : harnesses_or_default(a.harnesses)) {
    std::istringstream nm(measure::nm_output(path));
    models::LinkedLayout linked;
    try {
      linked = models::layout_from_nm(nm, owners, a.hot_fraction, profile ? &*profile : nullptr);
    } catch (const models::LayoutError& e) {
      throw UserError(fmt::format("{} (owners {}): {}", path, owners_file, e.what()));
    }
    {
      // Owners the build does not have: another compiler inlined or named
      // differently. Their code is then missing from the prediction.
      std::set<std::string> found;
      for (const auto& [owner, ranges] : linked.by_owner)
        for (const auto& r : ranges) found.insert(r.symbol);
      std::set<std::string> missing;
      for (const auto& [sym, owner] : owners)
        if (!found.count(sym) && (!profile || profile->count(sym))) missing.insert(sym);
      if (found.empty())
        throw UserError(
            fmt::format("{}: no symbol of {} is in this build (or ran): is it a "
                        "simloop-harness build?",
                        path, owners_file));
      if (!missing.empty())
        spdlog::warn("{}: {} symbol(s) of {} not in this build, their code is left out: {}", path,
                     missing.size(), owners_file, fmt::join(missing, " "));
    }
    const std::string layout = measure::harness_layout_name(path);
    const auto hot_bytes = static_cast<int64_t>(models::total_hot_bytes(linked));
    for (const auto& g : i1s) {
      const double p = measure::predict_i1_misses(linked, g, trace);
      const std::string spec = measure::geometry_spec(g);
      report::Row row;
      row.set("source", std::string("model")).set("layout", layout);
      measure::set_path_columns(row, opt)
          .set("i1", spec)
          .set("hot_bytes", hot_bytes)
          .set("predicted_i1_misses_per_packet", p);
      if (const auto m = measured.find({layout, spec}); m != measured.end()) {
        measure::Comparison c;
        c.point = fmt::format("layout={} i1={}", layout, spec);
        c.set = "validation";
        c.measured = m->second;
        c.predicted = p;
        row.set("measured_i1_misses_per_packet", m->second)
            .set("error_pct", c.error_pct())
            .set("abs_error_pct", c.abs_error_pct());
        cmp.push_back(c);
        by_geometry[spec].emplace_back(m->second, p);
      }
      rows.push_back(std::move(row));
    }
  }
  std::cout << fmt::format("I1 misses per packet: {} on the harness's path (payload {} B, {})\n",
                           profile ? "hot ranges from " + a.profile
                                   : fmt::format("{:.0f} % of each symbol", 100 * a.hot_fraction),
                           opt.payload, a.path.names.dest);
  std::vector<std::string> columns = {"layout", "i1", "hot_bytes",
                                      "predicted_i1_misses_per_packet"};
  if (!cmp.empty()) columns.insert(columns.end(), {"measured_i1_misses_per_packet", "error_pct"});
  std::cout << report::format_table(rows, columns);
  if (!cmp.empty()) {
    const auto s = measure::summarize(cmp, "");
    std::cout << fmt::format(
        "\nagainst cachegrind: {} points, median absolute error {:.1f} %, worst {:+.1f} % "
        "({})\n",
        s.points, s.median_abs_pct, s.worst_signed_pct, s.worst_point);
    for (const auto& [spec, pairs] : by_geometry) {
      std::vector<double> m, p;
      for (const auto& [x, y] : pairs) {
        m.push_back(x);
        p.push_back(y);
      }
      const auto r = measure::rank_agreement(m, p);
      std::cout << fmt::format("  I1 {}: layouts ranked {} (Kendall tau {:.2f}, {} layouts)\n",
                               spec, r.same_order ? "in the same order" : "differently",
                               r.kendall_tau, m.size());
    }
  } else if (!a.measured.empty()) {
    std::cout << fmt::format("\n{}: no cachegrind rows for this path and these layouts\n",
                             a.measured);
  }
  write_rows(a.out, rows);
  return 0;
}

void add_i1_option(CLI::App* c, std::vector<std::string>& i1) {
  c->add_option("--I1", i1,
                "I1 geometry SIZE,ASSOC,LINE in bytes; repeat for several (default: 1024,1,64 "
                "and 4096,2,64 and 8192,4,64)");
}

void add_packets_option(CLI::App* c, std::vector<int64_t>& packets) {
  c->add_option("--packets", packets,
                "The two packet counts, smaller first: per-packet figures are their difference")
      ->delimiter(',')
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30))
      ->capture_default_str();
}

}  // namespace

void add_measure_valgrind(CLI::App& measure, std::vector<Command>& commands) {
  auto* cg = measure.add_subcommand(
      "cachegrind",
      "Runs native harness builds (simloop-harness*) under valgrind --tool=cachegrind and\n"
      "reports instructions, I1, D1 and LL misses per packet for each I1 geometry. Each figure\n"
      "is the difference of two runs that differ only in their packet counts, so start-up\n"
      "cancels out. With -o, each build's symbol map is written beside the CSV.");
  auto a = std::make_shared<CachegrindArgs>();
  cg->add_option("harness", a->harnesses,
                 "Harness builds (default: every simloop-harness* beside this simloop)");
  a->path.add(cg);
  add_i1_option(cg, a->i1);
  cg->add_option("--D1", a->d1, "D1 geometry SIZE,ASSOC,LINE")->capture_default_str();
  cg->add_option("--LL", a->ll, "Last-level geometry SIZE,ASSOC,LINE")->capture_default_str();
  add_packets_option(cg, a->packets);
  cg->add_option("-o,--output", a->out,
                 "Write the rows to this CSV, each build's symbol map to FILE.LAYOUT.nm and the "
                 "machine to FILE.machine.json");
  commands.push_back({cg, [a] { return run_cachegrind_cmd(*a); }});

  auto* pr = measure.add_subcommand(
      "profile",
      "Runs a harness build under valgrind --tool=callgrind (instruction counts only, no cache)\n"
      "and writes which bytes of each function run per packet: the hot ranges that\n"
      "`simloop icache --profile` feeds the I-cache model. Offsets are relative to each\n"
      "function, so one profile serves every build of the same objects.");
  auto p = std::make_shared<ProfileArgs>();
  pr->add_option("harness", p->harness, "Harness build (default: simloop-harness beside simloop)");
  p->path.add(pr);
  add_packets_option(pr, p->packets);
  pr->add_option("--min-per-packet", p->min_per_packet,
                 "An instruction is hot if it runs at least this often per packet")
      ->check(CLI::Range(0.0, 1e6))
      ->capture_default_str();
  pr->add_option("-o,--output", p->out, "The profile file")->capture_default_str();
  commands.push_back({pr, [p] { return run_profile_cmd(*p); }});
}

void add_icache(CLI::App& app, std::vector<Command>& commands) {
  auto* ic = app.add_subcommand(
      "icache",
      "Predicts I1 misses per packet of native harness builds with simloop's I-cache model:\n"
      "addresses from each build's symbol map (nm), hot bytes from a profile (or a fraction\n"
      "of each symbol), and the order they run in from the real stack run through the\n"
      "harness's loop. With --measured, puts cachegrind's counts beside the predictions,\n"
      "with errors and whether the layouts are ranked alike.");
  auto a = std::make_shared<ICacheArgs>();
  ic->add_option("harness", a->harnesses,
                 "Harness builds (default: every simloop-harness* beside this simloop)");
  a->path.add(ic);
  add_i1_option(ic, a->i1);
  ic->add_option("--owners", a->owners,
                 "'symbol owner' lines naming what runs each function (default: "
                 "configs/harness/owners.txt)");
  ic->add_option("--profile", a->profile,
                 "Hot ranges from `simloop measure profile` (default: whole symbols)");
  ic->add_option("--hot-fraction", a->hot_fraction,
                 "Without --profile: the part of each symbol taken as hot, from its start")
      ->check(CLI::Range(0.001, 1.0))
      ->capture_default_str();
  ic->add_option("--measured", a->measured,
                 "A CSV from `simloop measure cachegrind` to compare against");
  ic->add_option("-o,--output", a->out, "Write the rows to this CSV");
  commands.push_back({ic, [a] { return run_icache_cmd(*a); }});
}

}  // namespace simloop::cli
