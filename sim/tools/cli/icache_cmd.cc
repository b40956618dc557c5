// simloop measure cachegrind / measure profile: the native harness under
// valgrind. simloop icache: the I-cache model pointed at the harness's
// symbol map, beside cachegrind's counts (measure::icache_study).
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include "models/fetch_plan.h"
#include "sim/report/safe_file.h"
#include "sim/report/table.h"
#include "sim/tools/cli/commands.h"
#include "sim/tools/measure/harness_run.h"
#include "sim/tools/measure/icache_study.h"
#include "sim/tools/measure/kernel.h"
#include "sim/tools/measure/path_options.h"

namespace simloop::cli {

namespace fs = std::filesystem;

namespace {

// What every harness command takes: the payload and the path through the stack.
struct PathArgs {
  measure::NativeOptions opt;
  std::vector<const CLI::Option*> options;  // the ones add() made
  PathArgs() { opt.warmup = 1000; }
  void add(CLI::App* c) {
    const size_t before = c->get_options().size();
    c->add_option("-l,--payload", opt.payload, "UDP payload bytes")
        ->check(CLI::Range(0, workload::Path::kMaxPayload))
        ->capture_default_str();
    c->add_option("--warmup", opt.warmup, "Untimed datagrams first, in every run")
        ->check(CLI::Range(int64_t{0}, int64_t{1} << 30))
        ->capture_default_str();
    measure::add_path_options(c, opt.path);
    const auto all = c->get_options();
    options.assign(all.begin() + static_cast<std::ptrdiff_t>(before), all.end());
  }
  // The first of them given, or null.
  const CLI::Option* given() const {
    for (const CLI::Option* o : options)
      if (o->count() != 0) return o;
    return nullptr;
  }
  // The options, once the payload is known to fit the path.
  measure::NativeOptions resolved() const {
    if (auto why = opt.path.payload_problem(opt.payload, opt.stack); !why.empty())
      throw UserError(fmt::format("--payload {}: {}", opt.payload, why));
    return opt;
  }
};

// --program: the positional words are a program's command line, and the
// options of a harness's path mean nothing to it (refused if given).
void check_program_options(const CLI::App& cmd) {
  static constexpr std::string_view kProgramOptions[] = {
      "--program", "--I1", "--D1", "--LL", "--packets", "--output", "--min-per-packet", "--help"};
  for (const CLI::Option* o : cmd.get_options()) {
    if (o->count() == 0 || o->get_positional()) continue;
    const std::string name = o->get_name(false, false);
    if (std::find(std::begin(kProgramOptions), std::end(kProgramOptions), name) ==
        std::end(kProgramOptions))
      throw UserError(fmt::format(
          "{}: an option of a harness's path, but --program runs a program of its own: give the "
          "program's own options after -- instead",
          name));
  }
}

// The run specs: the program of --program, or the harness builds.
std::vector<measure::HarnessSpec> specs(bool program, const std::vector<std::string>& words,
                                        const PathArgs& path, const std::vector<int64_t>& packets) {
  if (packets.size() != 2 || packets[0] >= packets[1])
    throw UserError("--packets: give two counts, the smaller first (e.g. 2000,12000)");
  if (program) {
    try {
      return {measure::program_spec(words, packets[0], packets[1])};
    } catch (const config::ConfigError& e) {
      throw UserError(e.what());
    }
  }
  std::vector<measure::HarnessSpec> out;
  for (const auto& h : measure::harnesses_or_default(words))
    out.push_back({.path = h,
                   .opt = path.resolved(),
                   .packets_lo = packets[0],
                   .packets_hi = packets[1],
                   .command = {}});
  return out;
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
  bool program = false;  // harnesses holds a program's command line
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
  std::vector<report::Row> rows;
  for (const auto& h : specs(a.program, a.harnesses, a.path, a.packets)) {
    const std::string& path = h.path;
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
      rows, a.program ? std::vector<std::string>{"layout", "i1", "instructions_per_packet",
                                                 "i1_misses_per_packet", "d1_misses_per_packet",
                                                 "ll_misses_per_packet"}
                      : std::vector<std::string>{"layout", "payload", "dest", "i1",
                                                 "instructions_per_packet", "i1_misses_per_packet",
                                                 "d1_misses_per_packet", "ll_misses_per_packet"});
  if (a.program)
    std::cout << "(per packet: per iteration of the program's loop, the count "
              << measure::kCountWord << " stands for)\n";
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
  std::vector<std::string> harness;  // one build, or with --program a command line
  std::vector<int64_t> packets = {2000, 12000};
  double min_per_packet = 0.5;
  std::string out = "out/harness-profile.txt";
  bool program = false;
};

// A program's profile: its head names the command (`simloop layout` reads
// it there to know the path is a program's).
int program_profile(const ProfileArgs& a, const measure::HarnessSpec& h) {
  double outside = 0;
  const measure::CodeProfile p = measure::run_profile(h, a.min_per_packet, &outside);
  // Code of a shared library is not in the program's symbols: the profile,
  // and so the advice, leave it out.
  if (outside > 0.05)
    spdlog::warn(
        "{:.0f} % of what an iteration of `{}` runs is outside its own code (a shared library's, "
        "or the vDSO's): the profile and the prediction leave it out; link the program "
        "statically (-static) to count the C library's code too",
        100 * outside, measure::command_line(h.command));
  size_t loops = 0;
  for (const auto& [key, walk] : p.walks) loops += walk.calls_per_packet == 0 ? 1 : 0;
  if (p.hot.empty() || loops == 0)
    throw UserError(fmt::format(
        "`{}`: {} between {} and {} iterations (callgrind): does the program run its loop {} "
        "times, and is it built with symbols? nothing written",
        measure::command_line(h.command),
        p.hot.empty()
            ? fmt::format("no function ran at least {} times an iteration", a.min_per_packet)
            : std::string("no loop around the iterations was found (a function that "
                          "runs every iteration but is not called each time)"),
        a.packets[0], a.packets[1], measure::kCountWord));
  const std::string header = fmt::format(
      "Hot profile of a program (callgrind instruction counts, {} minus {} iterations;\n"
      "instructions run at least {} times an iteration)\n"
      "{}{}",
      a.packets[1], a.packets[0], a.min_per_packet, measure::kProgramHead,
      measure::command_line(h.command));
  fs::create_directories(fs::path(a.out).parent_path().empty() ? fs::path(".")
                                                               : fs::path(a.out).parent_path());
  report::write_file_atomic(a.out, measure::format_profile(p, header));
  std::cout << fmt::format("{} functions, {} walks, {} loop{} around the iterations: wrote {}\n",
                           p.hot.size(), p.walks.size(), loops, loops == 1 ? "" : "s", a.out);
  return 0;
}

int run_profile_cmd(const ProfileArgs& a) {
  if (!a.program && a.harness.size() > 1)
    throw UserError(fmt::format(
        "one harness build, not {}: a program's command line needs --program", a.harness.size()));
  auto runs = specs(
      a.program,
      a.program || a.harness.empty() ? a.harness : std::vector<std::string>{a.harness.front()},
      a.path, a.packets);
  if (a.program) return program_profile(a, runs.front());
  const measure::HarnessSpec& h = runs.front();
  const std::string& harness = h.path;
  const measure::CodeProfile p = measure::run_profile(h, a.min_per_packet);
  // An empty profile is no profile: a program that is not a harness (or
  // never sends) runs nothing per packet, and icache or layout would then
  // find no code at all.
  if (p.hot.empty())
    throw UserError(fmt::format(
        "{}: no function ran at least {} times a packet between {} and {} packets (callgrind): "
        "expected a simloop harness build (simloop-harness*) whose loop sends the packets; "
        "nothing written",
        harness, a.min_per_packet, a.packets[0], a.packets[1]));
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
  std::string owners, profile, out, summary, ll;
  std::vector<std::string> measured;
  std::string fetch = "call-sites";
  double hot_fraction = 1.0;
  double noise = 0.01;
};

// --LL: a last level behind I1, its lines as long as every I1's.
std::optional<models::CacheGeometry> last_level(const std::string& spec,
                                                const std::vector<models::CacheGeometry>& i1s) {
  if (spec.empty()) return std::nullopt;
  models::CacheGeometry ll{};
  try {
    ll = measure::parse_geometry(spec);
  } catch (const std::invalid_argument& e) {
    throw UserError(fmt::format("--LL: {}", e.what()));
  }
  for (const auto& g : i1s)
    if (g.line_bytes != ll.line_bytes)
      throw UserError(
          fmt::format("--LL {}: its lines must be as long as I1's ({} bytes)", spec, g.line_bytes));
  return ll;
}

// The measured columns only where cachegrind counted some build.
std::vector<std::string> icache_columns(const measure::ICacheStudy& s, bool ll) {
  std::vector<std::string> columns = {"layout", "i1", "hot_bytes",
                                      "predicted_i1_misses_per_packet"};
  if (!s.summary.empty())
    columns.insert(columns.end(), {"measured_i1_misses_per_packet", "error_pct", "abs_error"});
  if (ll) {
    columns.push_back("predicted_ll_i_misses_per_packet");
    if (!s.ll_line.empty()) columns.push_back("measured_ll_i_misses_per_packet");
  }
  return columns;
}

int run_icache_cmd(const ICacheArgs& a) {
  measure::ICacheStudyOptions o;
  o.i1 = geometries(a.i1);
  const auto fetch = models::parse_fetch_mode(a.fetch);
  if (!fetch)
    throw UserError(fmt::format("--fetch: expected call-sites or entry, got '{}'", a.fetch));
  o.fetch = *fetch;
  o.ll = last_level(a.ll, o.i1);
  o.ll_spec = a.ll;
  o.opt = a.path.resolved();
  o.builds = a.harnesses;
  o.owners = owners_file(a.owners);
  o.profile = a.profile;
  o.hot_fraction = a.hot_fraction;
  o.measured = a.measured;
  o.noise = a.noise;
  o.warn = [](const std::string& w) { spdlog::warn("{}", w); };
  o.owners_given = !a.owners.empty();
  const measure::ICacheStudy s = measure::icache_study(o);
  // A program's loop has no payload or path through the harness's stack.
  if (const CLI::Option* p = a.path.given(); p != nullptr && !s.program.empty())
    throw UserError(fmt::format(
        "{}: an option of a harness's path, but {} is a profile of the program `{}`, whose "
        "iterations run its loop alone: leave it out",
        p->get_name(false, false), a.profile, s.program));

  if (s.program.empty())
    std::cout << fmt::format(
        "I1 misses per packet: {} on the harness's path (payload {} B, {}), fetch {}\n",
        a.profile.empty() ? fmt::format("{:.0f} % of each symbol", 100 * a.hot_fraction)
                          : "hot ranges and walks from " + a.profile,
        o.opt.payload, o.opt.path.get("dest"), a.fetch);
  else
    std::cout << fmt::format(
        "I1 misses per iteration of the program `{}` (its loop, from {}), fetch {}\n", s.program,
        a.profile, a.fetch);
  std::cout << report::format_table(s.rows, icache_columns(s, o.ll.has_value()));
  if (!s.summary.empty()) {
    std::cout << fmt::format(
        "\nagainst cachegrind, by I1 geometry (relative errors where cachegrind counts at least 1 "
        "miss per {0}, absolute ones elsewhere; pairs of layouts ordered only where they "
        "differ by more than {1} misses per {0}):\n",
        s.program.empty() ? "packet" : "iteration", a.noise);
    for (const auto& line : s.summary_lines) std::cout << line << "\n";
    if (!s.ll_line.empty()) std::cout << s.ll_line << "\n";
    if (!a.summary.empty()) write_rows(a.summary, s.summary);
  } else if (!a.measured.empty()) {
    std::cout << fmt::format("\n{}: no cachegrind rows for this {} and these layouts\n",
                             fmt::join(a.measured, ", "),
                             s.program.empty() ? "path" : "program's arguments");
  }
  write_rows(a.out, s.rows);
  return 0;
}

void add_i1_option(CLI::App* c, std::vector<std::string>& i1) {
  // One geometry an --I1: a word after it (a `--` included) is not its.
  c->add_option("--I1", i1,
                "I1 geometry SIZE,ASSOC,LINE in bytes; repeat for several (default: 1024,1,64 "
                "and 4096,2,64 and 8192,4,64)")
      ->allow_extra_args(false);
}

void add_packets_option(CLI::App* c, std::vector<int64_t>& packets) {
  c->add_option("--packets", packets,
                "The two packet counts, smaller first: per-packet figures are their difference")
      ->allow_extra_args(false)  // a `--` after it starts a program's words
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
      "cancels out. With -o, each build's symbol map is written beside the CSV.\n"
      "With --program, a program of your own instead: `simloop measure cachegrind --program\n"
      "-- ./sender -n {n}` runs it with {n} replaced by each count, so each figure is per\n"
      "iteration of its loop.");
  auto a = std::make_shared<CachegrindArgs>();
  cg->add_option("harness", a->harnesses,
                 "Harness builds (default: every simloop-harness* beside this simloop, or in\n"
                 "its installed libexec/simloop); with --program, the program's command line\n"
                 "(after --), {n} where its count of iterations goes");
  cg->add_flag("--program", a->program,
               "The words after -- are a program's command line, not harness builds");
  a->path.add(cg);
  add_i1_option(cg, a->i1);
  cg->add_option("--D1", a->d1, "D1 geometry SIZE,ASSOC,LINE")->capture_default_str();
  cg->add_option("--LL", a->ll, "Last-level geometry SIZE,ASSOC,LINE")->capture_default_str();
  add_packets_option(cg, a->packets);
  cg->add_option("-o,--output", a->out,
                 "Write the rows to this CSV, each build's symbol map to FILE.LAYOUT.nm and the "
                 "machine to FILE.machine.json");
  commands.push_back({cg, [a, cg] {
                        if (a->program) check_program_options(*cg);
                        return run_cachegrind_cmd(*a);
                      }});

  auto* pr = measure.add_subcommand(
      "profile",
      "Runs a harness build under valgrind --tool=callgrind (instruction counts only, no cache)\n"
      "and writes which bytes of each function run per packet: the hot ranges that\n"
      "`simloop icache --profile` feeds the I-cache model. Offsets are relative to each\n"
      "function, so one profile serves every build of the same objects.\n"
      "With --program, a program of your own (an ELF with symbols): `simloop measure profile\n"
      "--program -o prof.txt -- ./sender -n {n}` runs it with {n} replaced by each count; the\n"
      "function that runs every iteration without being called each time is its loop, and\n"
      "`simloop layout --nm ./sender --map sender.map --path name=N,profile=prof.txt` advises\n"
      "on its link order.");
  auto p = std::make_shared<ProfileArgs>();
  pr->add_option("harness", p->harness,
                 "Harness build (default: simloop-harness beside simloop, or installed); with\n"
                 "--program, the program's command line (after --), {n} where its count of\n"
                 "iterations goes");
  pr->add_flag("--program", p->program,
               "The words after -- are a program's command line, not a harness build");
  p->path.add(pr);
  add_packets_option(pr, p->packets);
  pr->add_option("--min-per-packet", p->min_per_packet,
                 "An instruction is hot if it runs at least this often per packet")
      ->check(CLI::Range(0.0, 1e6))
      ->capture_default_str();
  pr->add_option("-o,--output", p->out, "The profile file")->capture_default_str();
  commands.push_back({pr, [p, pr] {
                        if (p->program) check_program_options(*pr);
                        return run_profile_cmd(*p);
                      }});
}

void add_icache(CLI::App& app, std::vector<Command>& commands) {
  auto* ic = app.add_subcommand(
      "icache",
      "Predicts I1 misses per packet of native harness builds with simloop's I-cache model:\n"
      "addresses from each build's symbol map (nm), hot bytes from a profile (or a fraction\n"
      "of each symbol), and the order they run in from the real stack run through the\n"
      "harness's loop. With --measured, puts cachegrind's counts beside the predictions,\n"
      "with errors and whether the layouts are ranked alike.\n"
      "With a program's profile (`simloop measure profile --program`), the positional\n"
      "arguments are that program's builds (or their LAYOUT.nm maps) and each figure is per\n"
      "iteration of its loop: `simloop icache --profile prof.txt --measured a.csv --measured\n"
      "b.csv ./sender ./sender-advised`, each CSV from `simloop measure cachegrind\n"
      "--program`; the profile's loops own its code unless --owners names one as user_loop.");
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
                 "A CSV from `simloop measure cachegrind` to compare against; repeat for several "
                 "(one per program build, say)")
      ->allow_extra_args(false);  // a build after it is a build
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
