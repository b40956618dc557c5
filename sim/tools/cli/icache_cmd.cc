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
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "sim/report/csv_table.h"
#include "sim/report/table.h"
#include "sim/tools/cli/commands.h"
#include "sim/tools/measure/compare.h"
#include "sim/tools/measure/harness_run.h"
#include "sim/tools/measure/icache_check.h"
#include "sim/tools/measure/kernel.h"
#include "sim/tools/measure/path_options.h"

namespace simloop::cli {

namespace fs = std::filesystem;

namespace {

// What every harness command takes: the payload and the path through the stack.
struct PathArgs {
  measure::NativeOptions opt;
  PathArgs() { opt.warmup = 1000; }
  void add(CLI::App* c) {
    c->add_option("-l,--payload", opt.payload, "UDP payload bytes")
        ->check(CLI::Range(0, workload::Path::kMaxPayload))
        ->capture_default_str();
    c->add_option("--warmup", opt.warmup, "Untimed datagrams first, in every run")
        ->check(CLI::Range(int64_t{0}, int64_t{1} << 30))
        ->capture_default_str();
    measure::add_path_options(c, opt.path);
  }
  // The options, once the payload is known to fit the path.
  measure::NativeOptions resolved() const {
    if (auto why = opt.path.payload_problem(opt.payload, opt.stack); !why.empty())
      throw UserError(fmt::format("--payload {}: {}", opt.payload, why));
    return opt;
  }
};

std::vector<std::string> harnesses_or_default(const std::vector<std::string>& given) {
  if (!given.empty()) return given;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  auto found = ec ? std::vector<std::string>{} : measure::find_harnesses(self.string());
  if (found.empty())
    throw UserError(fmt::format(
        "no simloop-harness* beside this simloop binary or where it is installed ({}); give "
        "HARNESS paths",
        ec ? std::string("?")
           : fmt::format("{}", fmt::join(measure::harness_dirs(self.string()), ", "))));
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
    (void)report::write_beside(a.out, ".machine.json", desc.dump(2) + "\n");
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
  const measure::CodeProfile p = measure::run_profile(h, a.min_per_packet);
  uint64_t bytes = 0, ranges = 0;
  for (const auto& [sym, rs] : p.hot)
    for (const auto& r : rs) {
      bytes += r.second;
      ++ranges;
    }
  const std::string header = fmt::format(
      "Hot profile of {} (callgrind instruction counts, {} minus {} packets;\n"
      "payload {}, dest {}, align {}, copy {}; instructions run at least {} times a packet)",
      harness, a.packets[1], a.packets[0], h.opt.payload, h.opt.path.get("dest"),
      h.opt.path.get("align"), h.opt.path.get("copy"), a.min_per_packet);
  fs::create_directories(fs::path(a.out).parent_path().empty() ? fs::path(".")
                                                               : fs::path(a.out).parent_path());
  report::write_file_atomic(a.out, measure::format_profile(p, header));
  std::cout << fmt::format("{} functions, {} ranges, {} hot bytes, {} walks: wrote {}\n",
                           p.hot.size(), ranges, bytes, p.walks.size(), a.out);
  return 0;
}

// ---- icache ----------------------------------------------------------------

struct ICacheArgs {
  PathArgs path;
  std::vector<std::string> harnesses;
  std::vector<std::string> i1 = {"1024,1,64", "4096,2,64", "8192,4,64"};
  std::string owners, profile, measured, out, summary, ll;
  std::string fetch = "call-sites";
  double hot_fraction = 1.0;
  double noise = 0.01;
};

struct Key {
  std::string layout, i1;
  auto operator<=>(const Key&) const = default;
};

struct Measured {
  double i1 = 0, ll_i = -1;  // ll_i < 0: not given for the --LL geometry
};

// Cachegrind rows for the same path, by layout and geometry.
std::map<Key, Measured> read_measured(const std::string& file, const measure::NativeOptions& o,
                                      const std::string& ll) {
  try {
    const std::string text = report::read_csv_file(file, file, "a CSV of cachegrind rows");
    report::CsvReader csv(text, file);
    auto col = [&](const std::string& name) {
      const auto c = csv.column(name);
      if (!c)
        throw UserError(
            fmt::format("{}: no column '{}' (written by simloop measure cachegrind?)", file, name));
      return *c;
    };
    const size_t src = col("source"), lay = col("layout"), i1 = col("i1"), pay = col("payload"),
                 dst = col("dest"), al = col("align"), cp = col("copy"),
                 val = col("i1_misses_per_packet");
    const size_t ll_col = ll.empty() ? 0 : col("ll"),
                 ll_val = ll.empty() ? 0 : col("ll_i_misses_per_packet");
    std::map<Key, Measured> m;
    while (csv.next()) {
      const auto& f = csv.cells();
      if (f[src] != "cachegrind" || f[pay] != std::to_string(o.payload) ||
          f[dst] != o.path.get("dest") || f[al] != o.path.get("align") ||
          f[cp] != o.path.get("copy"))
        continue;
      auto number = [&](size_t c, const char* name) {
        double v = 0;
        if (!report::parse_number(f[c], &v))
          throw UserError(fmt::format("{}: {} '{}' is not a number", csv.where(), name, f[c]));
        return v;
      };
      Measured& x = m[{f[lay], f[i1]}];
      x.i1 = number(val, "i1_misses_per_packet");
      if (!ll.empty() && f[ll_col] == ll) x.ll_i = number(ll_val, "ll_i_misses_per_packet");
    }
    return m;
  } catch (const report::CsvError& e) {
    throw UserError(e.what());
  }
}

int run_icache_cmd(const ICacheArgs& a) {
  const auto i1s = geometries(a.i1);
  const auto fetch = models::parse_fetch_mode(a.fetch);
  if (!fetch)
    throw UserError(fmt::format("--fetch: expected call-sites or entry, got '{}'", a.fetch));
  std::optional<models::CacheGeometry> ll;
  if (!a.ll.empty()) {
    try {
      ll = measure::parse_geometry(a.ll);
    } catch (const std::invalid_argument& e) {
      throw UserError(fmt::format("--LL: {}", e.what()));
    }
    for (const auto& g : i1s)
      if (g.line_bytes != ll->line_bytes)
        throw UserError(fmt::format("--LL {}: its lines must be as long as I1's ({} bytes)", a.ll,
                                    g.line_bytes));
  }
  const measure::NativeOptions opt = a.path.resolved();
  const std::string owners_file =
      a.owners.empty() ? tree_file("configs/harness/owners.txt").string() : a.owners;
  const auto owners = read_owners(owners_file);
  std::optional<measure::CodeProfile> profile;
  if (!a.profile.empty()) {
    std::istringstream in(read_build_file(a.profile));
    try {
      profile = measure::load_profile(in, a.profile);
    } catch (const std::runtime_error& e) {
      throw UserError(e.what());
    }
  }
  const models::PathTrace trace = measure::harness_trace(opt);
  std::map<Key, Measured> measured;
  if (!a.measured.empty()) measured = read_measured(a.measured, opt, ll ? a.ll : std::string());

  std::vector<report::Row> rows;
  struct Point {
    double m, p;
  };
  std::map<std::string, std::vector<Point>> by_geometry;  // i1 -> points, in layout order
  std::vector<Point> ll_points;
  for (const auto& path : harnesses_or_default(a.harnesses)) {
    // A build, or the symbol map one left (FILE.nm, as measure cachegrind
    // writes them beside its CSV, or FILE.nm.gz): the same text either way.
    const bool gz = path.ends_with(".nm.gz");
    const bool nm_file = gz || path.ends_with(".nm");
    const std::string nm_text = nm_file ? read_build_file(path) : measure::nm_output(path);
    std::istringstream nm(nm_text);
    models::LinkedLayout linked;
    try {
      linked = models::layout_from_nm(nm, owners, a.hot_fraction, profile ? &profile->hot : nullptr,
                                      profile ? &profile->walks : nullptr);
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
        if (!found.count(sym) && (!profile || profile->hot.count(sym))) missing.insert(sym);
      if (found.empty())
        throw UserError(
            fmt::format("{}: no symbol of {} is in this build (or ran): is it a "
                        "simloop-harness build?",
                        path, owners_file));
      if (!missing.empty())
        spdlog::warn("{}: {} symbol(s) of {} not in this build, their code is left out: {}", path,
                     missing.size(), owners_file, fmt::join(missing, " "));
      for (const auto& w :
           {models::absent_warning(linked, path), models::unfetched_warning(linked, path)})
        if (!w.empty()) spdlog::warn(w);
    }
    const std::string layout =
        nm_file ? fs::path(gz ? path.substr(0, path.size() - 3) : path).stem().string()
                : measure::harness_layout_name(path);
    // The profile's hot bytes that this build has (what `measure profile`
    // counts), or without a profile the bytes taken from the owned symbols.
    int64_t hot_bytes = static_cast<int64_t>(models::total_hot_bytes(linked));
    if (profile) {
      std::istringstream again(nm_text);
      std::set<std::string> text;
      for (const auto& sym : models::parse_nm(again))
        if (sym.text) text.insert(sym.name);
      hot_bytes = 0;
      for (const auto& [sym, ranges] : profile->hot)
        if (text.count(sym) != 0)
          for (const auto& r : ranges) hot_bytes += static_cast<int64_t>(r.second);
    }
    for (const auto& g : i1s) {
      const auto p = measure::predict_misses(linked, g, trace, *fetch, ll ? &*ll : nullptr);
      const std::string spec = measure::geometry_spec(g);
      report::Row row;
      row.set("source", std::string("model")).set("layout", layout);
      measure::set_path_columns(row, opt)
          .set("i1", spec)
          .set("fetch", a.fetch)
          .set("hot_bytes", hot_bytes)
          .set("predicted_i1_misses_per_packet", p.i1_misses);
      if (ll) row.set("ll", a.ll).set("predicted_ll_i_misses_per_packet", p.ll_misses);
      if (const auto m = measured.find({layout, spec}); m != measured.end()) {
        const double mi = m->second.i1;
        row.set("measured_i1_misses_per_packet", mi)
            .set("abs_error", p.i1_misses - mi)
            .set("error_pct", mi >= 1 ? report::Value(100 * (p.i1_misses - mi) / mi)
                                      : report::Value(std::string()));
        by_geometry[spec].push_back({mi, p.i1_misses});
        if (ll && m->second.ll_i >= 0) {
          row.set("measured_ll_i_misses_per_packet", m->second.ll_i);
          ll_points.push_back({m->second.ll_i, p.ll_misses});
        }
      }
      rows.push_back(std::move(row));
    }
  }
  std::cout << fmt::format(
      "I1 misses per packet: {} on the harness's path (payload {} B, {}), fetch {}\n",
      profile ? "hot ranges and walks from " + a.profile
              : fmt::format("{:.0f} % of each symbol", 100 * a.hot_fraction),
      opt.payload, opt.path.get("dest"), a.fetch);
  std::vector<std::string> columns = {"layout", "i1", "hot_bytes",
                                      "predicted_i1_misses_per_packet"};
  if (!by_geometry.empty())
    columns.insert(columns.end(), {"measured_i1_misses_per_packet", "error_pct", "abs_error"});
  if (ll) {
    columns.push_back("predicted_ll_i_misses_per_packet");
    if (!ll_points.empty()) columns.push_back("measured_ll_i_misses_per_packet");
  }
  std::cout << report::format_table(rows, columns);
  if (!by_geometry.empty()) {
    std::cout << fmt::format(
        "\nagainst cachegrind, by I1 geometry (relative errors where cachegrind counts at least 1 "
        "miss per packet, absolute ones elsewhere; pairs of layouts ordered only where they "
        "differ by more than {} misses per packet):\n",
        a.noise);
    std::vector<report::Row> summary;
    for (const auto& [spec, points] : by_geometry) {
      std::vector<double> m, p;
      for (const auto& [x, y] : points) {
        m.push_back(x);
        p.push_back(y);
      }
      const auto e = measure::summarize_errors(m, p);
      const auto r = measure::rank_agreement(m, p, a.noise);
      const double lo = *std::min_element(m.begin(), m.end());
      const double hi = *std::max_element(m.begin(), m.end());
      const double spread = hi > 0 ? (hi - lo) / hi : 0;
      report::Row row;
      row.set("i1", spec)
          .set("layouts", static_cast<int64_t>(m.size()))
          .set("measured_min", lo)
          .set("measured_max", hi)
          .set("spread_pct", 100 * spread)
          .set("relative_points", static_cast<int64_t>(e.relative_points))
          .set("median_abs_error_pct", e.median_rel_pct)
          .set("worst_error_pct", e.worst_rel_pct)
          .set("absolute_points", static_cast<int64_t>(e.absolute_points))
          .set("median_abs_error", e.median_abs)
          .set("worst_abs_error", e.worst_abs)
          .set("kendall_tau_b", r.kendall_tau)
          .set("concordant", static_cast<int64_t>(r.concordant))
          .set("discordant", static_cast<int64_t>(r.discordant))
          .set("ties", static_cast<int64_t>(r.tied_measured + r.tied_predicted + r.tied_both));
      summary.push_back(row);
      std::string line =
          fmt::format("  I1 {}: {} layouts, measured {:.2f}-{:.2f}", spec, m.size(), lo, hi);
      if (hi < 1)
        line += " (the hot code fits: under 1 miss per packet)";
      else
        line += fmt::format(" (spread {:.0f} %)", 100 * spread);
      if (e.relative_points > 0)
        line += fmt::format("; error median {:.1f} %, worst {:+.1f} % ({} points)",
                            e.median_rel_pct, e.worst_rel_pct, e.relative_points);
      if (e.absolute_points > 0)
        line += fmt::format("; absolute error median {:.2f}, worst {:+.2f} ({} points)",
                            e.median_abs, e.worst_abs, e.absolute_points);
      if (!r.meaningful)
        line += "; no two layouts differ beyond the noise: no ranking to check";
      else if (r.same_order)
        line += fmt::format("; ranked in the same order (Kendall tau-b {:.2f})", r.kendall_tau);
      else if (std::isnan(r.kendall_tau))
        line += "; the predictions do not tell the layouts apart";
      else
        line += fmt::format(
            "; Kendall tau-b {:.2f} ({} pairs concordant, {} discordant, {} tied "
            "in one list only)",
            r.kendall_tau, r.concordant, r.discordant, r.tied_measured + r.tied_predicted);
      std::cout << line << "\n";
    }
    if (!ll_points.empty()) {
      std::vector<double> m, p;
      for (const auto& [x, y] : ll_points) {
        m.push_back(x);
        p.push_back(y);
      }
      const auto e = measure::summarize_errors(m, p);
      std::cout << fmt::format(
          "  LL {} (instruction misses): {} points; relative error median {:.1f} %, worst "
          "{:+.1f} % ({} points); absolute error median {:.2f}, worst {:+.2f} ({} points)\n",
          a.ll, m.size(), e.median_rel_pct, e.worst_rel_pct, e.relative_points, e.median_abs,
          e.worst_abs, e.absolute_points);
    }
    if (!a.summary.empty()) write_rows(a.summary, summary);
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
                 "Harness builds (default: every simloop-harness* beside this simloop, or in\n"
                 "its installed libexec/simloop)");
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
  pr->add_option("harness", p->harness,
                 "Harness build (default: simloop-harness beside simloop, or installed)");
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
                 "Harness builds, or their symbol maps as LAYOUT.nm or LAYOUT.nm.gz files "
                 "(default: every simloop-harness* beside this simloop)");
  a->path.add(ic);
  add_i1_option(ic, a->i1);
  ic->add_option("--owners", a->owners,
                 "'symbol owner' lines naming what runs each function (default: "
                 "configs/harness/owners.txt); gzip-compressed or not");
  ic->add_option("--profile", a->profile,
                 "Hot ranges and walks from `simloop measure profile` (default: whole symbols); "
                 "gzip-compressed or not");
  ic->add_option("--hot-fraction", a->hot_fraction,
                 "Without --profile: the part of each symbol taken as hot, from its start")
      ->check(CLI::Range(0.001, 1.0))
      ->capture_default_str();
  ic->add_option("--measured", a->measured,
                 "A CSV from `simloop measure cachegrind` to compare against");
  ic->add_option("--fetch", a->fetch,
                 "call-sites: the caller up to each call, the callee, the rest of the caller "
                 "(from the profile's walks); entry: each owner's hot ranges when it is entered")
      ->check(CLI::IsMember({"call-sites", "entry"}))
      ->capture_default_str();
  ic->add_option("--noise", a->noise,
                 "Misses per packet two figures must differ by to order two layouts "
                 "(cachegrind's run-to-run noise)")
      ->check(CLI::Range(0.0, 1e6))
      ->capture_default_str();
  ic->add_option("--LL", a->ll,
                 "Also predict the misses of a last level of this geometry behind I1 (as "
                 "cachegrind's: it sees only I1 misses, never evicts from I1), beside the "
                 "measured ll_i_misses_per_packet of rows made with this --LL");
  ic->add_option("-o,--output", a->out, "Write the rows to this CSV");
  ic->add_option("--summary", a->summary, "Write the comparison by I1 geometry to this CSV");
  commands.push_back({ic, [a] { return run_icache_cmd(*a); }});
}

}  // namespace simloop::cli
