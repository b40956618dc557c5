#include "sim/tools/measure/icache_study.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/layout/layout.h"
#include "sim/report/csv_table.h"
#include "sim/support/input_error.h"
#include "sim/tools/measure/build_files.h"
#include "sim/tools/measure/compare.h"
#include "sim/tools/measure/harness_run.h"
#include "sim/tools/measure/icache_check.h"

namespace simloop::measure {

namespace fs = std::filesystem;

namespace {

struct Key {
  std::string layout, i1;
  auto operator<=>(const Key&) const = default;
};

struct Measured {
  double i1 = 0, ll_i = -1;  // ll_i < 0: not given for the --LL geometry
};

// The number in column `c` of the row `csv` is at; `name` names it in the
// error.
double cell_number(const report::CsvReader& csv, size_t c, const char* name) {
  double v = 0;
  if (!report::parse_number(csv.cells()[c], &v))
    throw config::ConfigError(
        fmt::format("{}: {} '{}' is not a number", csv.where(), name, csv.cells()[c]));
  return v;
}

// The words of a program's command line after the program's own path: the
// builds of one program, each relinked, run with the same arguments.
std::string arguments_of(const std::string& line) {
  // command_line() quotes a word with spaces as '...' ('\'' inside).
  size_t at = 0;
  bool quoted = false;
  for (; at < line.size(); ++at) {
    if (line[at] == '\'') quoted = !quoted;
    if (line[at] == ' ' && !quoted) break;
  }
  return at < line.size() ? line.substr(at + 1) : "";
}

// Cachegrind rows of the program's runs (`measure cachegrind --program`)
// with the profile's arguments, by layout and geometry.
std::map<Key, Measured> read_measured_program(const std::string& file, const std::string& program,
                                              const std::string& ll) {
  try {
    const std::string text = report::read_csv_file(file, file, "a CSV of cachegrind rows");
    report::CsvReader csv(text, file);
    const auto src = csv.column("source"), lay = csv.column("layout"), i1 = csv.column("i1"),
               prog = csv.column("program"), val = csv.column("i1_misses_per_packet");
    if (!src || !lay || !i1 || !val)
      throw config::ConfigError(
          fmt::format("{}: not a CSV of cachegrind rows (source, layout, i1, "
                      "i1_misses_per_packet): written by simloop measure cachegrind?",
                      file));
    if (!prog)
      throw config::ConfigError(fmt::format(
          "{}: no program column: its rows are a harness's, and the profile is of the program "
          "`{}` (measure it with simloop measure cachegrind --program -- ...)",
          file, program));
    const auto ll_col = csv.column("ll"), ll_val = csv.column("ll_i_misses_per_packet");
    const std::string args = arguments_of(program);
    std::map<Key, Measured> m;
    while (csv.next()) {
      const auto& f = csv.cells();
      if (f[*src] != "cachegrind" || f[*prog].empty() || arguments_of(f[*prog]) != args) continue;
      Measured& x = m[{f[*lay], f[*i1]}];
      x.i1 = cell_number(csv, *val, "i1_misses_per_packet");
      if (!ll.empty() && ll_col && ll_val && f[*ll_col] == ll)
        x.ll_i = cell_number(csv, *ll_val, "ll_i_misses_per_packet");
    }
    return m;
  } catch (const report::CsvError& e) {
    throw config::ConfigError(e.what());
  }
}

// Cachegrind rows for the same path, by layout and geometry.
std::map<Key, Measured> read_measured(const std::string& file, const NativeOptions& o,
                                      const std::string& ll) {
  try {
    const std::string text = report::read_csv_file(file, file, "a CSV of cachegrind rows");
    report::CsvReader csv(text, file);
    auto col = [&](const std::string& name) {
      const auto c = csv.column(name);
      if (!c)
        throw config::ConfigError(
            fmt::format("{}: no column '{}' (written by simloop measure cachegrind?)", file, name));
      return *c;
    };
    if (csv.column("program") && !csv.column("payload"))
      throw config::ConfigError(
          fmt::format("{}: rows of a program's runs (measure cachegrind --program), but the "
                      "profile is a harness's: give a profile of that program, or rows of the "
                      "harness",
                      file));
    const size_t src = col("source"), lay = col("layout"), i1 = col("i1"), pay = col("payload"),
                 dst = col("dest"), al = col("align"), cp = col("copy"),
                 val = col("i1_misses_per_packet");
    // The path's other fields: a row without the column, or with the cell
    // empty, ran at the default.
    std::vector<std::pair<std::optional<size_t>, std::string>> extra;
    for (const auto& [column, field] : kCachegrindPathColumns)
      extra.emplace_back(csv.column(std::string(column)), workload::Path{}.get(field));
    const size_t ll_col = ll.empty() ? 0 : col("ll"),
                 ll_val = ll.empty() ? 0 : col("ll_i_misses_per_packet");
    std::map<Key, Measured> m;
    while (csv.next()) {
      const auto& f = csv.cells();
      if (f[src] != "cachegrind" || f[pay] != std::to_string(o.payload) ||
          f[dst] != o.path.get("dest") || f[al] != o.path.get("align") ||
          f[cp] != o.path.get("copy"))
        continue;
      bool same = true;
      for (size_t k = 0; k < extra.size(); ++k)
        same = same && (extra[k].first && !f[*extra[k].first].empty()
                            ? f[*extra[k].first]
                            : extra[k].second) == o.path.get(kCachegrindPathColumns[k].second);
      if (!same) continue;
      Measured& x = m[{f[lay], f[i1]}];
      x.i1 = cell_number(csv, val, "i1_misses_per_packet");
      if (!ll.empty() && f[ll_col] == ll)
        x.ll_i = cell_number(csv, ll_val, "ll_i_misses_per_packet");
    }
    return m;
  } catch (const report::CsvError& e) {
    throw config::ConfigError(e.what());
  }
}

std::set<std::string> owned_symbols(const std::multimap<std::string, std::string>& owners) {
  std::set<std::string> out;
  for (const auto& [sym, owner] : owners) out.insert(sym);
  return out;
}

// The layout a symbol map names: LAYOUT of LAYOUT.nm, and of the
// CSV.LAYOUT.nm that `measure cachegrind -o CSV` writes beside its rows
// (whose layout column says LAYOUT).
std::string nm_layout_name(const std::string& path, bool gz) {
  const std::string stem = fs::path(gz ? path.substr(0, path.size() - 3) : path).stem().string();
  const size_t csv = stem.rfind(".csv.");
  return csv == std::string::npos ? stem : stem.substr(csv + 5);
}

// One build as the model sees it.
struct Build {
  std::string layout;  // its name in the rows (and in cachegrind's)
  models::LinkedLayout linked;
  int64_t hot_bytes = 0;
};

Build read_build(const std::string& path, const ICacheStudyOptions& o,
                 const std::multimap<std::string, std::string>& owners,
                 const std::optional<CodeProfile>& profile, const std::string& program) {
  const std::string owners_name =
      program.empty() || o.owners_given ? o.owners : std::string("the profile's loops");
  // A build, or the symbol map one left (FILE.nm, as measure cachegrind
  // writes them beside its CSV, or FILE.nm.gz): the same text either way.
  const bool gz = path.ends_with(".nm.gz");
  const bool nm_file = gz || path.ends_with(".nm");
  const std::string nm_text = nm_file ? read_build_file(path) : nm_output(path);
  std::istringstream nm(nm_text);
  Build b;
  try {
    b.linked = models::layout_from_nm(nm, owners, o.hot_fraction, profile ? &profile->hot : nullptr,
                                      profile ? &profile->walks : nullptr);
  } catch (const models::LayoutError& e) {
    throw config::ConfigError(fmt::format("{} (owners {}): {}", path, owners_name, e.what()));
  }
  // Owners the build does not have: another compiler inlined or named
  // differently. Their code is then missing from the prediction.
  std::set<std::string> found;
  for (const auto& [owner, ranges] : b.linked.by_owner)
    for (const auto& r : ranges) found.insert(r.symbol);
  std::set<std::string> missing;
  for (const auto& [sym, owner] : owners)
    if (!found.count(sym) && (!profile || profile->hot.count(sym))) missing.insert(sym);
  if (found.empty())
    throw config::ConfigError(
        program.empty()
            ? fmt::format("{}: no symbol of {} is in this build (or ran): is it a "
                          "simloop-harness build?",
                          path, o.owners)
            : fmt::format("{}: no function of {} ({}) is in this build: is it a build of the "
                          "program `{}`?",
                          path, owners_name, fmt::join(owned_symbols(owners), ", "), program));
  if (!missing.empty())
    o.warn(fmt::format("{}: {} symbol(s) of {} not in this build, their code is left out: {}", path,
                       missing.size(), owners_name, fmt::join(missing, " ")));
  for (const auto& w :
       {models::absent_warning(b.linked, path), models::unfetched_warning(b.linked, path)})
    if (!w.empty()) o.warn(w);
  b.layout = nm_file ? nm_layout_name(path, gz) : harness_layout_name(path);
  // The profile's hot bytes that this build has (what `measure profile`
  // counts), or without a profile the bytes taken from the owned symbols.
  b.hot_bytes = static_cast<int64_t>(models::total_hot_bytes(b.linked));
  if (profile) {
    std::istringstream again(nm_text);
    std::set<std::string> text;
    for (const auto& sym : models::parse_nm(again))
      if (sym.text) text.insert(sym.name);
    b.hot_bytes = 0;
    for (const auto& [sym, ranges] : profile->hot)
      if (text.count(sym) != 0)
        for (const auto& r : ranges) b.hot_bytes += static_cast<int64_t>(r.second);
  }
  return b;
}

// Measured and predicted misses per packet of one build.
struct Point {
  double m, p;
};

void split(const std::vector<Point>& points, std::vector<double>* m, std::vector<double>* p) {
  for (const auto& [x, y] : points) {
    m->push_back(x);
    p->push_back(y);
  }
}

// The builds of one I1 geometry against cachegrind: a summary row, and a
// line that says whether the model ranks the layouts as cachegrind does.
void compare_geometry(const std::string& spec, const std::vector<Point>& points, double noise,
                      ICacheStudy* s) {
  std::vector<double> m, p;
  split(points, &m, &p);
  const auto e = summarize_errors(m, p);
  const auto r = rank_agreement(m, p, noise);
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
      .set("mean_signed_error", e.mean_signed)
      .set("kendall_tau_b", r.kendall_tau)
      .set("concordant", static_cast<int64_t>(r.concordant))
      .set("discordant", static_cast<int64_t>(r.discordant))
      .set("ties", static_cast<int64_t>(r.tied_measured + r.tied_predicted + r.tied_both));
  s->summary.push_back(row);
  std::string line =
      fmt::format("  I1 {}: {} layouts, measured {:.2f}-{:.2f}", spec, m.size(), lo, hi);
  if (hi < 1)
    line += " (the hot code fits: under 1 miss per packet)";
  else
    line += fmt::format(" (spread {:.0f} %)", 100 * spread);
  if (e.relative_points > 0)
    line += fmt::format("; error median {:.1f} %, worst {:+.1f} % ({} points)", e.median_rel_pct,
                        e.worst_rel_pct, e.relative_points);
  if (e.absolute_points > 0)
    line += fmt::format("; absolute error median {:.2f}, worst {:+.2f} ({} points)", e.median_abs,
                        e.worst_abs, e.absolute_points);
  line += fmt::format("; mean signed error {:+.2f} misses", e.mean_signed);
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
  s->summary_lines.push_back(line);
}

}  // namespace

ICacheStudy icache_study(const ICacheStudyOptions& o) {
  ICacheStudy s;
  std::optional<CodeProfile> profile;
  if (!o.profile.empty()) {
    const std::string text = read_build_file(o.profile);
    s.program = profiled_program(text);
    std::istringstream in(text);
    try {
      profile = load_profile(in, o.profile);
    } catch (const std::runtime_error& e) {
      throw config::ConfigError(e.what());
    }
  }
  // A program's builds are not beside simloop: they must be named.
  if (!s.program.empty() && o.builds.empty())
    throw config::ConfigError(fmt::format(
        "{}: a profile of the program `{}`: name its builds (the programs, or the LAYOUT.nm "
        "maps `simloop measure cachegrind -o` left) to predict their misses",
        o.profile, s.program));
  const auto owners = s.program.empty() ? read_owners(o.owners)
                                        : program_owners(program_loops(*profile), o.owners,
                                                         o.owners_given, o.profile);
  const models::PathTrace trace = s.program.empty() ? harness_trace(o.opt) : program_trace();
  std::map<Key, Measured> measured;
  for (const auto& file : o.measured) {
    auto rows = s.program.empty() ? read_measured(file, o.opt, o.ll ? o.ll_spec : "")
                                  : read_measured_program(file, s.program, o.ll ? o.ll_spec : "");
    rows.merge(measured);  // the later file's rows kept where both have one
    measured = std::move(rows);
  }

  std::map<std::string, std::vector<Point>> by_geometry;  // i1 -> points, in layout order
  std::vector<Point> ll_points;
  const std::string fetch(models::fetch_mode_name(o.fetch));
  for (const auto& path : harnesses_or_default(o.builds)) {
    const Build b = read_build(path, o, owners, profile, s.program);
    if (profile && o.fetch == models::FetchMode::call_sites && !o.i1.empty()) {
      // Code the profile says runs on this path but that no event of the
      // replay reaches is missing from every prediction below.
      models::ICacheConfig c;
      c.l1 = o.i1.front();
      c.next_line_prefetch = false;
      models::EvalOptions detail;
      detail.detail = true;
      const auto e = models::evaluate(b.linked, c, trace, detail);
      if (!e.never_fetched.empty())
        o.warn(fmt::format(
            "{}: the hot code of {} function(s) of the profile is never fetched, as no event "
            "reaches it where it is called (is each listed in {} under the owner that calls "
            "it?), so the prediction leaves it out: {}",
            path, e.never_fetched.size(), o.owners, fmt::join(e.never_fetched, " ")));
    }
    for (const auto& g : o.i1) {
      const auto p = predict_misses(b.linked, g, trace, o.fetch, o.ll ? &*o.ll : nullptr);
      const std::string spec = geometry_spec(g);
      report::Row row;
      row.set("source", std::string("model")).set("layout", b.layout);
      if (s.program.empty())
        set_path_columns(row, o.opt);
      else
        row.set("program", s.program);
      row.set("i1", spec)
          .set("fetch", fetch)
          .set("hot_bytes", b.hot_bytes)
          .set("predicted_i1_misses_per_packet", p.i1_misses);
      if (o.ll) row.set("ll", o.ll_spec).set("predicted_ll_i_misses_per_packet", p.ll_misses);
      if (const auto m = measured.find({b.layout, spec}); m != measured.end()) {
        const double mi = m->second.i1;
        row.set("measured_i1_misses_per_packet", mi)
            .set("abs_error", p.i1_misses - mi)
            .set("error_pct", mi >= 1 ? report::Value(100 * (p.i1_misses - mi) / mi)
                                      : report::Value(std::string()));
        by_geometry[spec].push_back({mi, p.i1_misses});
        if (o.ll && m->second.ll_i >= 0) {
          row.set("measured_ll_i_misses_per_packet", m->second.ll_i);
          ll_points.push_back({m->second.ll_i, p.ll_misses});
        }
      }
      s.rows.push_back(std::move(row));
    }
  }
  for (const auto& [spec, points] : by_geometry) compare_geometry(spec, points, o.noise, &s);
  if (!ll_points.empty()) {
    std::vector<double> m, p;
    split(ll_points, &m, &p);
    const auto e = summarize_errors(m, p);
    s.ll_line = fmt::format(
        "  LL {} (instruction misses): {} points; relative error median {:.1f} %, worst "
        "{:+.1f} % ({} points); absolute error median {:.2f}, worst {:+.2f} ({} points)",
        o.ll_spec, m.size(), e.median_rel_pct, e.worst_rel_pct, e.relative_points, e.median_abs,
        e.worst_abs, e.absolute_points);
  }
  return s;
}

}  // namespace simloop::measure
