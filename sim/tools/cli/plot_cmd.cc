// simloop plot: draws result files with the matplotlib scripts in plots/.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <memory>

#include "sim/report/row_filter.h"
#include "sim/stack/stack_set.h"
#include "sim/support/yaml_input.h"
#include "sim/tools/cli/commands.h"

namespace simloop::cli {

namespace fs = std::filesystem;

namespace {

// Debian's interpreter: the one that has python3-matplotlib.
constexpr const char* kPython = "/usr/bin/python3";

fs::path plot_script() {
  const fs::path p = tree_file("plots/simloop_plot.py");
  if (!fs::is_regular_file(p))
    throw UserError(
        fmt::format("cannot find the plotting script {} (set SIMLOOP_DATA_DIR to the directory "
                    "that holds plots/, or reinstall simloop)",
                    p.string()),
        1);
  return p;
}

// The JSON of simloop explain -o or of simloop run --trace.
bool plottable_json(const std::string& path) {
  if (fs::path(path).extension() != ".json" || !fs::is_regular_file(path)) return false;
  const auto j = nlohmann::json::parse(read_input_file(path, "a result file", size_t{1} << 30),
                                       nullptr, false);
  return j.is_object() && (j.contains("waterfall") || j.contains("traceEvents"));
}

int run_plot(const std::vector<std::string>& results, const std::string& kind, const std::string& x,
             const std::string& series, const std::string& output,
             const std::vector<std::string>& wheres, const std::string& describe) {
  // Refused here, with exit status 2, rather than by a Python traceback.
  // An explanation (explain -o) or a trace (run --trace) is JSON the script
  // draws; anything else must be a CSV of results.
  for (const auto& r : results)
    if (!plottable_json(r))
      check_results_csv(r, {}, {"kpps", "payload"}, kMaxPlotCsvBytes,
                        "the most simloop plot draws (pick the rows to draw first)");
  for (const auto& w : wheres) {
    try {
      (void)report::parse_condition(w);
    } catch (const report::ConditionError& e) {
      throw UserError(fmt::format("--where {}: {}", config::printable(w, 80), e.what()), 2);
    }
  }
  const std::string script = plot_script().string();
  std::vector<std::string> args = {kPython, script};
  if (!kind.empty()) args.insert(args.end(), {"--kind", kind});
  if (!x.empty()) args.insert(args.end(), {"--x", x});
  if (!series.empty()) args.insert(args.end(), {"--series", series});
  if (!output.empty()) args.insert(args.end(), {"-o", output});
  for (const auto& w : wheres) args.insert(args.end(), {"--where", w});
  if (!describe.empty()) args.insert(args.end(), {"--describe", describe});
  // The stacks' own names of stages, so that each is drawn as its stage.
  std::vector<std::string> words;
  for (const net::FnTable* t : stacks::fn_tables())
    for (const net::StageName& n : t->stage_names())
      if (!n.word.empty() && n.word != n.stage)
        words.push_back(fmt::format("{}={}", n.word, n.stage));
  if (!words.empty())
    args.insert(args.end(), {"--stage-words", fmt::format("{}", fmt::join(words, ","))});
  // The files last, after "--": a file named like an option is a file.
  args.emplace_back("--");
  args.insert(args.end(), results.begin(), results.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw UserError("cannot start the plotting script", 1);
  if (pid == 0) {
    execv(kPython, argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status))
    throw UserError(fmt::format("the plotting script {} was killed by signal {} ({})", script,
                                WTERMSIG(status), strsignal(WTERMSIG(status))),
                    1);
  if (!WIFEXITED(status) || WEXITSTATUS(status) == 127)
    throw UserError(fmt::format("cannot run {}: simloop plot needs it, with matplotlib "
                                "(apt-get install python3-matplotlib)",
                                kPython),
                    1);
  return WEXITSTATUS(status);
}

}  // namespace

void add_plot(CLI::App& app, std::vector<Command>& commands) {
  struct Args {
    std::vector<std::string> results, wheres;
    std::string kind, x, series, output, describe;
  };
  auto a = std::make_shared<Args>();
  // The kinds plots/simloop_plot.py draws (its KINDS; a test keeps the two in step).
  struct Kind {
    const char* name;
    const char* what;
  };
  static constexpr Kind kKinds[] = {
      {"breakdown",
       "cycles per packet by stage, a stacked bar per configuration (mean of its runs)"},
      {"payload", "kpps against payload size, error bars over repeats; the y axis fits the data"},
      {"padding", "kpps against code padding (a column named like *pad*), or --x COLUMN"},
      {"distribution",
       "run-to-run spread of kpps over the repeats of each configuration (one\n"
       "                run is drawn as a point, not a box)"},
      {"scatter",
       "predicted against measured kpps, y = x and a +-15 % band: give a sweep\n"
       "                CSV and a `simloop measure native` CSV"},
      {"crossover", "kpps against payload, one line per options.align (or per --series KEY)"},
      {"accuracy",
       "predicted against measured kpps of a simloop compare CSV, held-out\n"
       "                and training points apart, y = x and +-10 % / +-15 % bands"},
      {"waterfall", "from A's kpps to B's, one bar per part: the JSON of simloop explain -o"},
      {"timeline",
       "spans of simulated time per track: the JSON of simloop run --trace (the\n"
       "                first few packets unless --where packets=FROM:TO or packets=all)"},
  };
  std::string help =
      "Draw result CSVs as PNG and SVG next to the first. Kinds (chosen from the columns\n"
      "unless --kind says):\n";
  std::vector<std::string> names;
  for (const auto& k : kKinds) {
    help += fmt::format("  {:<13} {}\n", k.name, k.what);
    names.emplace_back(k.name);
  }
  help +=
      "A plot never averages rows that differ in what ran: each key that differs (a swept key,\n"
      "the stack, the machine, the experiment, the path) is on an axis, in the labels of lines,\n"
      "bars or boxes, or a panel per value; else the plot refuses, naming it (pick values with\n"
      "--where, or draw one apart with --series). The stack and machine all rows share are in\n"
      "the title. Faulted runs are marked.";
  auto* plot = app.add_subcommand("plot", help);
  plot->add_option("results", a->results,
                   "CSVs written by simloop run, sweep, merge or measure (at most 16 MiB each); "
                   "or the JSON of "
                   "simloop explain -o (a waterfall) or of simloop run --trace (a timeline)")
      ->required();
  std::string kinds_help;
  for (size_t i = 0; i < names.size(); ++i)
    kinds_help += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  plot->add_option("--kind", a->kind, kinds_help)->check(CLI::IsMember(names));
  plot->add_option("--x", a->x,
                   "padding: the numeric column on the x axis (e.g. layout.pad_bytes)");
  plot->add_option("--series", a->series,
                   "Draw the values of this key apart, in one panel (without it, a key the plot "
                   "does not label gets a panel per value): a line per value (payload, padding, "
                   "crossover), a group of bars (breakdown), a colour (distribution, scatter), a "
                   "marker (accuracy); e.g. --series stack");
  plot->add_option("-o,--output", a->output,
                   "Output file stem: STEM.png and STEM.svg (a .png or .svg given is the stem\n"
                   "without it); default: next to the results");
  plot->add_option("--where", a->wheres,
                   "Only rows that satisfy it (repeatable, all must hold): KEY=VALUE, KEY!=VALUE, "
                   "or a range KEY<N, KEY<=N, KEY>N, KEY>=N; numbers compare as numbers. E.g. "
                   "--where 'payload>=512' --where 'payload<1000' --where align!=none. A "
                   "timeline: packets=FROM:TO (the trace's packets drawn; default the first few) "
                   "or packets=all");
  plot->add_option("--describe", a->describe,
                   "Also write what was drawn (lines, bars, markers, legend) as JSON to this file");
  commands.push_back({plot, [a] {
                        return run_plot(a->results, a->kind, a->x, a->series, a->output, a->wheres,
                                        a->describe);
                      }});
}

}  // namespace simloop::cli
