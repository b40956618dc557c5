// simloop sweep and merge end to end: real processes, real SimGrid runs,
// real files.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "sim/tools/sweep/runner.h"
#include "sim/tools/sweep/sweep.h"

namespace simloop::sweep {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// 3 payloads x 2 alignment policies, 2 repeats: 12 runs of 3000 packets.
constexpr const char* kExperiment = R"(name: small
machine: athlon-xp-2700
stack: freebsd6
workload: {payload: 18, packets: 3000, dest: broadcast}
options: {align: none, copy: m_copy}
seed: 7
sweep:
  grid:
    workload.payload: [18, 64, 256]
    options.align: [none, copy-down]
  repeats: 2
)";

struct Result {
  int status;
  std::string output;
};

class SweepCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("simloop-sweepcli-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    exp_ = write("small.yaml", kExperiment);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }
  fs::path write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return dir_ / name;
  }
  // Runs simloop with `args`; stdout and stderr together.
  Result simloop(const std::string& args) {
    const std::string cmd = fmt::format("'{}' {} 2>&1", SIMLOOP_BIN, args);
    FILE* p = ::popen(cmd.c_str(), "r");
    std::string out;
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    const int st = ::pclose(p);
    return {WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), out};
  }
  std::string sweep(const std::string& extra = "", const fs::path& exp = {}) {
    return fmt::format("sweep '{}' -j 2 -o '{}' {}", (exp.empty() ? exp_ : exp).string(),
                       dir_.string(), extra);
  }
  // Rows keyed by (point, repeat), without the columns that hold wall times.
  static std::map<std::pair<int, int>, std::vector<std::string>> comparable(const Table& t) {
    std::map<std::pair<int, int>, std::vector<std::string>> out;
    const int pc = t.column("point"), rc = t.column("repeat");
    for (const auto& r : t.rows) {
      std::vector<std::string> keep;
      for (size_t i = 0; i < r.size(); ++i)
        if (t.header[i] != "wall_s" && t.header[i] != "process_s") keep.push_back(r[i]);
      EXPECT_TRUE(out.emplace(std::make_pair(std::stoi(r[pc]), std::stoi(r[rc])), keep).second)
          << "run " << r[pc] << "/" << r[rc] << " appears twice";
    }
    return out;
  }
  static std::string slurp(const fs::path& p) {
    std::ifstream f(p);
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  }
  // Starts `simloop -v sweep EXP -j 1` in the background, its log in `log`;
  // with `own_group`, as a terminal starts a job: in a process group of its
  // own, which a Ctrl-C signals as a whole.
  pid_t start(const fs::path& exp, const fs::path& log, const std::string& extra = "",
              bool own_group = false) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      if (own_group) ::setpgid(0, 0);
      std::freopen(log.c_str(), "w", stderr);
      std::freopen("/dev/null", "w", stdout);
      if (extra.empty())
        ::execl(SIMLOOP_BIN, SIMLOOP_BIN, "-v", "sweep", exp.c_str(), "-j", "1", "-o", dir_.c_str(),
                nullptr);
      ::execl(SIMLOOP_BIN, SIMLOOP_BIN, "-v", "sweep", exp.c_str(), "-j", "1", "-o", dir_.c_str(),
              extra.c_str(), nullptr);
      ::_exit(127);
    }
    return pid;
  }
  // Waits until the sweep's log says it has recorded `n` runs (each row is
  // on disk before it says so); false if the sweep ended first.
  static bool wait_for_recorded(const fs::path& log, pid_t pid, size_t n) {
    return wait_for(log, pid, "] recorded point ", n);
  }
  // Waits until `what` appears `n` times in the log.
  static bool wait_for(const fs::path& log, pid_t pid, const std::string& what, size_t n) {
    for (;;) {
      const std::string text = slurp(log);
      size_t count = 0;
      for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
        ++count;
      if (count >= n) return true;
      if (::waitpid(pid, nullptr, WNOHANG) == pid) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  fs::path dir_, exp_;
};

TEST_F(SweepCliTest, ARealSweepWritesOneRowPerRunAndAManifest) {
  const Result r = simloop(sweep());
  ASSERT_EQ(r.status, 0) << r.output;
  const Table t = read_csv(dir_ / "small-sweep.csv");
  ASSERT_EQ(t.rows.size(), 12u);
  for (const char* col :
       {"point", "repeat", "point_hash", "workload.payload", "options.align", "kpps",
        "cycles_per_packet", "seed", "status", "error", "process_s", "wall_s"})
    EXPECT_GE(t.column(col), 0) << col;
  // The runs listed by --list are exactly the runs in the results, with their seeds.
  const Result list = simloop(fmt::format("sweep '{}' --list", exp_.string()));
  ASSERT_EQ(list.status, 0) << list.output;
  std::map<std::pair<int, int>, std::string> listed;  // seed,payload,align
  std::istringstream in(list.output);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#' || line.rfind("point,", 0) == 0) continue;
    const auto f = split_csv_line(line);
    listed[{std::stoi(f[0]), std::stoi(f[1])}] = f[2] + "," + f[4] + "," + f[5];
  }
  ASSERT_EQ(listed.size(), 12u);
  std::map<int, double> kpps;  // by point, the mean over repeats
  for (const auto& row : t.rows) {
    auto at = [&](const char* c) { return row[t.column(c)]; };
    const std::pair<int, int> key{std::stoi(at("point")), std::stoi(at("repeat"))};
    EXPECT_EQ(listed[key], at("seed") + "," + at("workload.payload") + "," + at("options.align"));
    EXPECT_EQ(at("status"), "ok");
    EXPECT_EQ(at("packets"), "3000");
    EXPECT_GT(std::stod(at("kpps")), 10);
    EXPECT_GE(std::stod(at("process_s")), std::stod(at("wall_s")));
    kpps[key.first] += std::stod(at("kpps")) / 2;
  }
  // Points are ordered payload-major: bigger datagrams go slower.
  EXPECT_GT(kpps[0], kpps[4]);
  // One column per thing: the swept keys, not a copy of them among the metrics.
  EXPECT_EQ(t.column("align"), -1);
  EXPECT_EQ(t.column("payload"), -1);
  // Rows in point order, whatever order the runs finished in.
  for (size_t i = 1; i < t.rows.size(); ++i)
    EXPECT_LT(std::make_pair(std::stoi(t.rows[i - 1][0]), std::stoi(t.rows[i - 1][1])),
              std::make_pair(std::stoi(t.rows[i][0]), std::stoi(t.rows[i][1])));
  // The summary lists every point by its settings, and says that repeats of
  // a deterministic experiment cannot differ.
  EXPECT_NE(r.output.find("workload.payload  options.align  runs  ok"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("     256      copy-down     2   2"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("every repeat of a point will give the same result"), std::string::npos)
      << r.output;

  std::ifstream mf(dir_ / "small-sweep.json");
  const json m = json::parse(mf);
  EXPECT_EQ(m["status"], "complete");
  EXPECT_EQ(m["experiment_hash"].get<std::string>().size(), 16u);
  EXPECT_FALSE(m["git_revision"].get<std::string>().empty());
  EXPECT_TRUE(m["git_dirty"].is_boolean());
  EXPECT_FALSE(m["simloop_version"].get<std::string>().empty());
  EXPECT_EQ(m["config"]["workload"]["dest"], "broadcast");
  // Each point's hash by index, as the results and the list give it; its
  // settings follow from the sweep as written, in file order.
  ASSERT_EQ(m["points"].size(), 6u);
  for (const auto& row : t.rows)
    EXPECT_EQ(m["points"][std::stoul(row[0])], row[t.column("point_hash")]);
  const std::string section = m["sweep_yaml"].get<std::string>();
  EXPECT_LT(section.find("workload.payload"), section.find("options.align")) << section;
  EXPECT_EQ(m["points_checked"], true);
  EXPECT_FALSE(m["started_at"].is_null());
  EXPECT_FALSE(m["finished_at"].is_null());

  // Results are never overwritten by accident.
  const Result again = simloop(sweep());
  EXPECT_EQ(again.status, 2) << again.output;
  EXPECT_NE(again.output.find("--resume"), std::string::npos) << again.output;
}

TEST_F(SweepCliTest, ShardsMergedEqualTheUnshardedSweep) {
  ASSERT_EQ(simloop(sweep()).status, 0);
  std::string shards;
  for (int k = 1; k <= 3; ++k) {
    const Result r = simloop(sweep(fmt::format("--shard {}/3", k)));
    ASSERT_EQ(r.status, 0) << r.output;
    const fs::path p = dir_ / fmt::format("small-sweep-shard-{}-of-3.csv", k);
    EXPECT_EQ(read_csv(p).rows.size(), 4u) << "points k-1, k+2: 2 points x 2 repeats";
    shards += " '" + p.string() + "'";
  }
  const Result m = simloop(fmt::format("merge '{}' {}", (dir_ / "merged.csv").string(), shards));
  ASSERT_EQ(m.status, 0) << m.output;
  const Table merged = read_csv(dir_ / "merged.csv");
  const Table whole = read_csv(dir_ / "small-sweep.csv");
  EXPECT_EQ(merged.header, whole.header);
  EXPECT_EQ(comparable(merged), comparable(whole));
  // The merged file is in (point, repeat) order.
  for (size_t i = 1; i < merged.rows.size(); ++i)
    EXPECT_LT(std::make_pair(std::stoi(merged.rows[i - 1][0]), std::stoi(merged.rows[i - 1][1])),
              std::make_pair(std::stoi(merged.rows[i][0]), std::stoi(merged.rows[i][1])));
  std::ifstream mf(dir_ / "merged.json");
  const json mj = json::parse(mf);
  EXPECT_EQ(mj["status"], "complete");
  EXPECT_EQ(mj["merged_from"].size(), 3u);
  // Every point's hash, as the shards list them (copied as text, last, so
  // that a merge of merges copies them again).
  std::ifstream sf(dir_ / "small-sweep-shard-1-of-3.json");
  const json shard = json::parse(sf);
  EXPECT_EQ(mj["points"], shard["points"]);
  ASSERT_EQ(mj["points"].size(), 6u);
  EXPECT_EQ(mj["points"][5], whole.rows.back()[whole.column("point_hash")]);
  std::ifstream again(dir_ / "merged.json");
  const std::string text((std::istreambuf_iterator<char>(again)), std::istreambuf_iterator<char>());
  EXPECT_FALSE(manifest_points_text(text).empty());
}

// Merge reads rows back from the shards' files by where they are: rows in
// any order, a line ending in CR LF, a field that needs quotes, and a run
// recorded by two shards (the first named is kept) all come out as the
// rows themselves would.
TEST_F(SweepCliTest, MergeKeepsEveryRowAsItIsInAnyOrder) {
  for (int k = 1; k <= 2; ++k) ASSERT_EQ(simloop(sweep(fmt::format("--shard {}/2", k))).status, 0);
  const fs::path one = dir_ / "small-sweep-shard-1-of-2.csv";
  const fs::path two = dir_ / "small-sweep-shard-2-of-2.csv";
  Table a = read_csv(one);
  const Table b = read_csv(two);
  ASSERT_GE(a.rows.size(), 2u);
  ASSERT_GE(b.rows.size(), 1u);
  const int err = a.column("error");
  ASSERT_GE(err, 0);
  a.rows[0][static_cast<size_t>(err)] = "a \"quoted\", with commas";
  std::vector<std::string> twice = b.rows[0];  // shard 2's run, also in shard 1, changed
  twice[static_cast<size_t>(err)] = "shard 1's copy";
  std::string text = csv_line(a.header);
  for (auto it = a.rows.rbegin(); it != a.rows.rend(); ++it) text += csv_line(*it);
  text.insert(text.size() - 1, "\r");  // the last line ends in CR LF
  text += csv_line(twice);
  {
    std::ofstream f(one, std::ios::trunc | std::ios::binary);
    f << text;
  }
  const Result m = simloop(fmt::format("merge '{}' '{}' '{}'", (dir_ / "merged.csv").string(),
                                       one.string(), two.string()));
  ASSERT_EQ(m.status, 0) << m.output;
  EXPECT_NE(m.output.find("1 runs appeared in more than one shard"), std::string::npos) << m.output;
  const Table merged = read_csv(dir_ / "merged.csv");
  EXPECT_EQ(merged.header, a.header);
  std::map<std::pair<int, int>, std::vector<std::string>> expected;
  for (const Table* t : std::initializer_list<const Table*>{&a, &b})
    for (const auto& r : t->rows) expected.emplace(std::pair(std::stoi(r[0]), std::stoi(r[1])), r);
  expected[std::pair(std::stoi(twice[0]), std::stoi(twice[1]))] = twice;
  ASSERT_EQ(merged.rows.size(), expected.size());
  size_t i = 0;
  for (const auto& [key, row] : expected) EXPECT_EQ(merged.rows[i++], row) << key.first;
  // Written as simloop writes CSV: the same text as its rows written again.
  std::string again = csv_line(merged.header);
  for (const auto& r : merged.rows) again += csv_line(r);
  std::ifstream mf(dir_ / "merged.csv", std::ios::binary);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(mf), {}), again);
}

TEST_F(SweepCliTest, MergeRefusesShardsOfDifferentExperiments) {
  ASSERT_EQ(simloop(sweep("--shard 1/2")).status, 0);
  fs::create_directories(dir_ / "other");
  const Result other =
      simloop(fmt::format("sweep '{}' -j 2 -o '{}' --shard 2/2 --set workload.packets=2000",
                          exp_.string(), (dir_ / "other").string()));
  ASSERT_EQ(other.status, 0) << other.output;
  const Result m = simloop(fmt::format("merge '{}' '{}' '{}'", (dir_ / "merged.csv").string(),
                                       (dir_ / "small-sweep-shard-1-of-2.csv").string(),
                                       (dir_ / "other/small-sweep-shard-2-of-2.csv").string()));
  EXPECT_EQ(m.status, 2) << m.output;
  EXPECT_NE(m.output.find("different sweeps"), std::string::npos) << m.output;
  EXPECT_FALSE(fs::exists(dir_ / "merged.csv"));
}

TEST_F(SweepCliTest, ResumeRunsOnlyTheMissingRuns) {
  ASSERT_EQ(simloop(sweep()).status, 0);
  const fs::path csv = dir_ / "small-sweep.csv";
  std::ifstream f(csv);
  std::vector<std::string> lines;
  for (std::string l; std::getline(f, l);) lines.push_back(l);
  f.close();
  ASSERT_EQ(lines.size(), 13u);
  // Delete three rows, and leave a fourth cut short as a crash would.
  std::set<std::pair<int, int>> deleted;
  std::string kept;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i == 2 || i == 5 || i == 11) {
      const auto fl = split_csv_line(lines[i]);
      deleted.insert({std::stoi(fl[0]), std::stoi(fl[1])});
      continue;
    }
    kept += lines[i] + "\n";
  }
  { std::ofstream(csv, std::ios::trunc) << kept << lines[11].substr(0, 20); }
  const Table before = read_csv(csv);
  const Result r = simloop(sweep("--resume"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("kept 9 rows, 3 runs to add, dropped 0 rows"), std::string::npos)
      << r.output;
  const Table t = read_csv(csv);
  ASSERT_EQ(t.rows.size(), 12u);
  // Rows already there are untouched; the three deleted ones ran again.
  auto now = comparable(t);
  for (const auto& [k, v] : comparable(before)) EXPECT_EQ(now[k], v);
  std::set<std::pair<int, int>> rerun;
  for (const auto& [k, v] : now)
    if (comparable(before).count(k) == 0) rerun.insert(k);
  EXPECT_EQ(rerun, deleted);

  // Nothing left: a second resume runs nothing.
  const Result none = simloop(sweep("--resume"));
  EXPECT_EQ(none.status, 0) << none.output;
  EXPECT_EQ(read_csv(csv).rows.size(), 12u);

  // Results of another base configuration are not resumed into, and the
  // message names what changed.
  const Result other = simloop(sweep("--resume --set workload.packets=2000"));
  EXPECT_EQ(other.status, 2) << other.output;
  EXPECT_NE(other.output.find("base configuration differs in workload.packets;"), std::string::npos)
      << other.output;
  EXPECT_EQ(read_csv(csv).rows.size(), 12u);
}

TEST_F(SweepCliTest, AFaultingPointIsRecordedAndTheSweepGoesOn) {
  const fs::path exp = write("fault.yaml", R"(name: fault
machine: athlon-xp-2700
stack: freebsd6
workload: {payload: 18, packets: 2000, dest: broadcast}
options: {align: none, copy: m_dup}
sweep:
  grid:
    options.align: [strict, none, copy-down, strict]
)");
  const Result r = simloop(sweep("", exp));
  EXPECT_EQ(r.status, 3) << "some runs failed: " << r.output;
  const Table t = read_csv(dir_ / "fault-sweep.csv");
  ASSERT_EQ(t.rows.size(), 4u);
  for (const auto& row : t.rows) {
    const std::string align = row[t.column("options.align")];
    if (align == "strict") {
      EXPECT_EQ(row[t.column("status")], "fault");
      EXPECT_EQ(row[t.column("outcome")], "alignment-fault");
      EXPECT_FALSE(row[t.column("error")].empty());
    } else {
      EXPECT_EQ(row[t.column("status")], "ok") << align;
      EXPECT_EQ(row[t.column("packets")], "2000");
    }
  }
}

TEST_F(SweepCliTest, BadSweepSectionsExitTwoNamingTheLine) {
  const fs::path exp = write("bad.yaml",
                             "machine: athlon-xp-2700\nstack: freebsd6\nsweep:\n  grid:\n    "
                             "workload.payload: [18, 99999]\n");
  const Result r = simloop(sweep("", exp));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find(exp.string() + ":5:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("workload.payload"), std::string::npos) << r.output;
  // A point whose combination is invalid is caught before anything runs.
  const fs::path mtu = write("mtu.yaml",
                             "machine: athlon-xp-2700\nstack: freebsd6\nsweep:\n  grid:\n    "
                             "workload.payload: [18, 1600]\n");
  const Result m = simloop(sweep("", mtu));
  EXPECT_EQ(m.status, 2);
  EXPECT_NE(m.output.find("sweep point 1 (workload.payload=1600)"), std::string::npos) << m.output;
  EXPECT_FALSE(fs::exists(dir_ / "unnamed-sweep.csv"));
  EXPECT_EQ(simloop(sweep("--shard 3/2")).status, 2);
}

TEST_F(SweepCliTest, InterruptKeepsFinishedRowsAndResumeCompletes) {
  const fs::path exp = write("long.yaml", R"(name: long
machine: athlon-xp-2700
stack: freebsd6
workload: {payload: 18, packets: 200000}
interrupts: {enabled: true, handler_cycles: 2000, moderation: {interval_s: 125e-6}}
sweep:
  grid:
    workload.payload: {start: 18, stop: 118, step: 5}
)");
  const fs::path csv = dir_ / "long-sweep.csv";
  const fs::path log_path = dir_ / "sweep.log";
  const pid_t pid = start(exp, log_path);
  // Ctrl-C once the sweep says it has recorded two runs: a state it
  // reports, however slow the machine.
  ASSERT_TRUE(wait_for_recorded(log_path, pid, 2)) << slurp(log_path);
  ::kill(pid, SIGINT);
  int st = 0;
  ::waitpid(pid, &st, 0);
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 130);
  const size_t rows = read_csv(csv).rows.size();
  EXPECT_GE(rows, 2u);
  EXPECT_LT(rows, 21u);
  std::ifstream mf(dir_ / "long-sweep.json");
  EXPECT_EQ(json::parse(mf)["status"], "interrupted");
  const std::string log = slurp(log_path);
  EXPECT_NE(log.find("--resume"), std::string::npos) << log;

  const Result r = simloop(sweep("--resume", exp));
  ASSERT_EQ(r.status, 0) << r.output;
  const Table t = read_csv(csv);
  EXPECT_EQ(t.rows.size(), 21u);
  EXPECT_EQ(comparable(t).size(), 21u);
}

// Ctrl-C in a terminal signals the sweep's whole process group: the runs
// under way are not killed by it (they would be recorded as errors); the
// sweep finishes them, records them and stops.
TEST_F(SweepCliTest, CtrlCToTheProcessGroupLetsRunningRunsFinish) {
  // Runs of about a second on a quiet machine (more when loaded), and the
  // interrupt soon after the first is recorded, so that it reaches the
  // second in the middle of its simulation (where SimGrid's own handler
  // would end it) and the last two have not run.
  const fs::path exp = write("long.yaml", R"(name: long
machine: athlon-xp-2700
stack: freebsd6
workload: {payload: 18, packets: 3000000}
interrupts: {enabled: true, handler_cycles: 2000, moderation: {interval_s: 125e-6}}
sweep:
  grid:
    workload.payload: {start: 18, stop: 33, step: 5}
)");
  const fs::path csv = dir_ / "long-sweep.csv";
  const fs::path log_path = dir_ / "sweep.log";
  const pid_t pid = start(exp, log_path, "", true);
  ASSERT_TRUE(wait_for_recorded(log_path, pid, 1)) << slurp(log_path);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_EQ(::kill(-pid, SIGINT), 0) << "the group of the sweep and its runs";
  int st = 0;
  ::waitpid(pid, &st, 0);
  ASSERT_TRUE(WIFEXITED(st)) << slurp(log_path);
  EXPECT_EQ(WEXITSTATUS(st), 130) << slurp(log_path);
  const Table t = read_csv(csv);
  ASSERT_GE(t.rows.size(), 2u) << "the run under way at the interrupt is recorded";
  EXPECT_LT(t.rows.size(), 4u);
  for (const auto& r : t.rows) EXPECT_EQ(r[t.column("status")], "ok") << r[t.column("error")];
  const Result r = simloop(sweep("--resume", exp));
  ASSERT_EQ(r.status, 0) << r.output;
  const Table all = read_csv(csv);
  EXPECT_EQ(comparable(all).size(), 4u);
  for (const auto& row : all.rows) EXPECT_EQ(row[all.column("status")], "ok");
}

// A row of a run that ended without a result (status error) is run again by
// --resume; the summary counts it.
TEST_F(SweepCliTest, ResumeRunsRowsWithoutAResultAgain) {
  ASSERT_EQ(simloop(sweep()).status, 0);
  const fs::path csv = dir_ / "small-sweep.csv";
  const Table whole = read_csv(csv);
  Table t = whole;
  const int sc = t.column("status"), ec = t.column("error"), kc = t.column("kpps");
  for (size_t i : {size_t{2}, size_t{9}}) {
    t.rows[i][static_cast<size_t>(sc)] = "error";
    t.rows[i][static_cast<size_t>(ec)] = "exited with status 1 and no result";
    t.rows[i][static_cast<size_t>(kc)] = "";
  }
  std::string text = csv_line(t.header);
  for (const auto& r : t.rows) text += csv_line(r);
  { std::ofstream(csv, std::ios::trunc) << text; }
  const Result r = simloop(sweep("--resume"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("kept 10 rows, 2 runs to add, dropped 0 rows; 2 runs without a result "
                          "to run again"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(comparable(read_csv(csv)), comparable(whole));
  EXPECT_FALSE(fs::exists(dir_ / "small-sweep-dropped.csv"));
}

// The store of a sweep whose grid changed its keys stays resumable: rows
// set aside by two grids of different columns go into one file (the union
// of the columns), a run set aside twice is there once, and a resume that
// is refused leaves every file as it was, byte for byte.
TEST_F(SweepCliTest, EveryStoreStaysResumable) {
  auto grid = [&](const std::string& lines) {
    std::string text = kExperiment;
    const auto from = text.find("  grid:\n") + 8;
    text.replace(from, text.find("  repeats:") - from, lines);
    write("small.yaml", text);
  };
  const fs::path csv = dir_ / "small-sweep.csv", manifest = dir_ / "small-sweep.json",
                 aside = dir_ / "small-sweep-dropped.csv";
  ASSERT_EQ(simloop(sweep()).status, 0);
  grid("    workload.payload: [18, 64]\n    options.align: [none, copy-down]\n");
  const Result shrunk = simloop(sweep("--resume"));
  ASSERT_EQ(shrunk.status, 0) << shrunk.output;
  ASSERT_EQ(read_csv(aside).rows.size(), 4u);
  // Another grid, other keys, into the same place.
  fs::remove(csv);
  fs::remove(manifest);
  grid("    workload.payload: [18, 64]\n    workload.dest: [broadcast, wire]\n");
  ASSERT_EQ(simloop(sweep()).status, 0);
  grid("    workload.payload: [18]\n    workload.dest: [broadcast, wire]\n");
  const Result other = simloop(sweep("--resume"));
  ASSERT_EQ(other.status, 0) << other.output;
  const Table both = read_csv(aside);
  EXPECT_EQ(both.rows.size(), 8u);
  EXPECT_GE(both.column("options.align"), 0);
  EXPECT_GE(both.column("workload.dest"), 0);
  const Result again = simloop(sweep("--resume"));
  ASSERT_EQ(again.status, 0) << again.output;
  EXPECT_NE(again.output.find("kept 4 rows, 0 runs to add"), std::string::npos) << again.output;

  // Grown and shrunk again, twice: the same runs go aside, once each.
  for (int i = 0; i < 2; ++i) {
    grid("    workload.payload: [18, 64]\n    workload.dest: [broadcast, wire]\n");
    ASSERT_EQ(simloop(sweep("--resume")).status, 0);
    grid("    workload.payload: [18]\n    workload.dest: [broadcast, wire]\n");
    ASSERT_EQ(simloop(sweep("--resume")).status, 0);
  }
  const Table t = read_csv(aside);
  std::set<std::pair<std::string, std::string>> runs;
  for (const auto& r : t.rows)
    EXPECT_TRUE(runs.emplace(r[t.column("point_hash")], r[t.column("repeat")]).second)
        << "set aside twice: " << r[t.column("point_hash")] << " " << r[t.column("repeat")];
  EXPECT_EQ(t.rows.size(), 8u);

  // A refused resume (the rows set aside cannot be read) changes nothing.
  { std::ofstream(aside, std::ios::app) << "\"0,0\n"; }
  const std::string csv_before = slurp(csv), manifest_before = slurp(manifest),
                    aside_before = slurp(aside);
  grid("    workload.payload: [18]\n    workload.dest: [wire]\n");
  const Result refused = simloop(sweep("--resume"));
  EXPECT_EQ(refused.status, 2) << refused.output;
  EXPECT_NE(refused.output.find(aside.string()), std::string::npos) << refused.output;
  EXPECT_EQ(slurp(csv), csv_before);
  EXPECT_EQ(slurp(manifest), manifest_before);
  EXPECT_EQ(slurp(aside), aside_before);
  // Mended, the same resume goes through.
  { std::ofstream(aside, std::ios::trunc) << aside_before.substr(0, aside_before.size() - 5); }
  const Result mended = simloop(sweep("--resume"));
  ASSERT_EQ(mended.status, 0) << mended.output;
  EXPECT_EQ(read_csv(aside).rows.size(), 10u);
}

// --keep-runs keeps each run's document (as simloop run writes it) and log,
// named by point hash and repeat; explain reads two of them as they are.
TEST_F(SweepCliTest, KeptRunsAreReadByExplain) {
  ASSERT_EQ(simloop(sweep("--keep-runs")).status, 0);
  const Table t = read_csv(dir_ / "small-sweep.csv");
  ASSERT_EQ(t.rows.size(), 12u);
  std::vector<fs::path> docs;
  for (const auto& r : t.rows) {
    const std::string stem = r[t.column("point_hash")] + "-" + r[t.column("repeat")];
    const fs::path doc = dir_ / "small-sweep-runs" / (stem + ".json");
    ASSERT_TRUE(fs::exists(doc)) << doc;
    EXPECT_TRUE(fs::exists(dir_ / "small-sweep-runs" / (stem + ".log")));
    const json j = json::parse(slurp(doc));
    EXPECT_TRUE(j.contains("functions") && j.contains("icache_sets")) << doc;
    const double kpps = std::stod(r[t.column("kpps")]);
    EXPECT_NEAR(j["result"]["kpps"].get<double>(), kpps, 1e-5 * kpps)
        << doc;  // the CSV keeps 6 digits
    docs.push_back(doc);
  }
  // Point 0 (18 B, none) against point 1 (18 B, copy-down).
  const Result e = simloop(fmt::format("explain '{}' '{}' -o '{}'", docs[0].string(),
                                       docs[2].string(), (dir_ / "why.json").string()));
  ASSERT_EQ(e.status, 0) << e.output;
  EXPECT_TRUE(json::parse(slurp(dir_ / "why.json")).is_object());
}

// A grid that grows keeps every row of the points it had (by the hash of
// their resolved configuration), runs only the new points, and a grid that
// shrinks sets the rows of the points it lost aside.
TEST_F(SweepCliTest, ResumeFollowsAGrowingAndShrinkingGrid) {
  auto grid = [&](const std::string& payloads) {
    std::string text = kExperiment;
    const std::string from = "workload.payload: [18, 64, 256]";
    text.replace(text.find(from), from.size(), "workload.payload: [" + payloads + "]");
    write("small.yaml", text);
  };
  grid("18, 256");
  ASSERT_EQ(simloop(sweep()).status, 0);
  const fs::path csv = dir_ / "small-sweep.csv";
  grid("18, 64, 256");
  const Result grown = simloop(sweep("--resume"));
  ASSERT_EQ(grown.status, 0) << grown.output;
  EXPECT_NE(grown.output.find("kept 8 rows, 4 runs to add, dropped 0 rows"), std::string::npos)
      << grown.output;
  // The same as the grown sweep run from scratch, row for row.
  fs::create_directories(dir_ / "fresh");
  const Result fresh =
      simloop(fmt::format("sweep '{}' -j 2 -o '{}'", exp_.string(), (dir_ / "fresh").string()));
  ASSERT_EQ(fresh.status, 0) << fresh.output;
  EXPECT_EQ(comparable(read_csv(csv)), comparable(read_csv(dir_ / "fresh/small-sweep.csv")));

  grid("64, 256");
  const Result shrunk = simloop(sweep("--resume"));
  ASSERT_EQ(shrunk.status, 0) << shrunk.output;
  EXPECT_NE(shrunk.output.find("kept 8 rows, 0 runs to add, dropped 4 rows"), std::string::npos)
      << shrunk.output;
  const Table t = read_csv(csv);
  ASSERT_EQ(t.rows.size(), 8u);
  EXPECT_EQ(t.rows.front()[t.column("workload.payload")], "64");
  EXPECT_EQ(t.rows.front()[t.column("point")], "0") << "re-indexed to the new grid";
  const Table aside = read_csv(dir_ / "small-sweep-dropped.csv");
  ASSERT_EQ(aside.rows.size(), 4u) << "finished results are never lost";
  for (const auto& r : aside.rows) EXPECT_EQ(r[aside.column("workload.payload")], "18");
}

// Two sweeps never write into one place at once, with or without --resume;
// the refusal names the process that holds it.
TEST_F(SweepCliTest, ASecondSweepIntoTheSamePlaceIsRefusedNamingTheHolder) {
  const fs::path exp = write("long.yaml", R"(name: long
machine: athlon-xp-2700
stack: freebsd6
workload: {payload: 18, packets: 20000}
interrupts: {enabled: true, handler_cycles: 2000, moderation: {interval_s: 125e-6}}
sweep:
  grid:
    workload.payload: {start: 18, stop: 118, step: 5}
)");
  const fs::path log = dir_ / "first.log";
  const pid_t pid = start(exp, log);
  // Once it says it has started, stop it where it is: it holds the lock
  // for as long as it lives, however slow the machine.
  ASSERT_TRUE(wait_for(log, pid, "] sweep long: ", 1)) << slurp(log);
  ::kill(pid, SIGSTOP);
  for (const char* extra : {"", "--resume"}) {
    const Result second = simloop(sweep(extra, exp));
    EXPECT_EQ(second.status, 2) << second.output;
    EXPECT_NE(second.output.find(fmt::format("another simloop (pid {})", pid)), std::string::npos)
        << second.output;
  }
  std::ifstream mf(dir_ / "long-sweep.json");
  EXPECT_EQ(json::parse(mf)["status"], "running");
  // Killed outright, it cannot say so; its manifest still says running, but
  // no one holds the lock, so a resume goes ahead and completes it.
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  const Result resumed = simloop(sweep("--resume", exp));
  EXPECT_EQ(resumed.status, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("ended without finishing"), std::string::npos) << resumed.output;
  EXPECT_EQ(comparable(read_csv(dir_ / "long-sweep.csv")).size(), 21u);
}

// The lock file goes when the sweep ends: done, refused (exit 2),
// interrupted (Ctrl-C: exit 130), or ended by a hang-up it does not handle.
TEST_F(SweepCliTest, TheLockFileGoesHoweverTheSweepEnds) {
  const fs::path lock = dir_ / "small-sweep.lock";
  ASSERT_EQ(simloop(sweep()).status, 0);
  EXPECT_FALSE(fs::exists(lock)) << "left by a sweep that finished";
  EXPECT_EQ(simloop(sweep()).status, 2) << "the results exist";
  EXPECT_FALSE(fs::exists(lock)) << "left by a sweep that was refused";
  const fs::path exp = write("long.yaml", R"(name: long
machine: athlon-xp-2700
stack: freebsd6
workload: {payload: 18, packets: 400000}
sweep:
  grid:
    workload.payload: {start: 18, stop: 118, step: 5}
)");
  const fs::path long_lock = dir_ / "long-sweep.lock";
  for (const int sig : {SIGINT, SIGHUP}) {
    fs::remove(dir_ / "long-sweep.csv");
    fs::remove(dir_ / "long-sweep.json");
    const fs::path log = dir_ / fmt::format("sig{}.log", sig);
    const pid_t pid = start(exp, log);
    // Its runs under way (the first recorded), the lock held.
    ASSERT_TRUE(wait_for_recorded(log, pid, 1)) << slurp(log);
    EXPECT_TRUE(fs::exists(long_lock));
    ::kill(pid, sig);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    // A hang-up, like Ctrl-C, ends the sweep as interrupted (its running
    // runs stopped at once, as by SIGTERM, rather than left running).
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 130) << slurp(log);
    EXPECT_FALSE(fs::exists(long_lock)) << "left by a sweep ended by signal " << sig;
  }
}

// A results file whose manifest was never written (the disk filled between
// the two) needs no manual deletion: with no rows it is started afresh, and
// with rows --resume keeps those whose point hash is a point of the sweep.
TEST_F(SweepCliTest, ResultsWithoutAManifestAreRestartedOrResumed) {
  const fs::path csv = dir_ / "small-sweep.csv";
  { std::ofstream(csv) << "point,repeat,point_ha"; }
  const Result fresh = simloop(sweep());
  ASSERT_EQ(fresh.status, 0) << fresh.output;
  const Table whole = read_csv(csv);
  ASSERT_EQ(whole.rows.size(), 12u);

  std::string text;
  {
    std::ifstream f(csv);
    std::string line;
    for (int i = 0; std::getline(f, line) && i < 6; ++i) text += line + "\n";
  }
  fs::remove(dir_ / "small-sweep.json");
  { std::ofstream(csv, std::ios::trunc) << text; }
  EXPECT_EQ(simloop(sweep()).status, 2) << "rows are never overwritten";
  const Result resumed = simloop(sweep("--resume"));
  ASSERT_EQ(resumed.status, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("kept 5 rows, 7 runs to add"), std::string::npos) << resumed.output;
  EXPECT_EQ(comparable(read_csv(csv)), comparable(whole));
}

// Rows that name a point the manifest does not list are refused, with their
// lines, by resume and merge alike; nothing is written.
TEST_F(SweepCliTest, RowsOfUnknownPointsAreRefusedWithTheirLines) {
  ASSERT_EQ(simloop(sweep("--shard 1/2")).status, 0);
  ASSERT_EQ(simloop(sweep("--shard 2/2")).status, 0);
  const fs::path s1 = dir_ / "small-sweep-shard-1-of-2.csv";
  const fs::path s2 = dir_ / "small-sweep-shard-2-of-2.csv";
  const std::string good = slurp(s1);
  auto lines = good;
  const auto second = lines.find('\n') + 1;
  const auto row = lines.substr(second, lines.find('\n', second) - second + 1);
  std::string bad = row;
  bad.replace(0, bad.find(','), "500");
  { std::ofstream(s1, std::ios::app) << bad; }
  const Result r = simloop(sweep("--resume --shard 1/2"));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("line 8 (point 500: the sweep has 6)"), std::string::npos) << r.output;
  const Result m = simloop(
      fmt::format("merge '{}' '{}' '{}'", (dir_ / "m.csv").string(), s1.string(), s2.string()));
  EXPECT_EQ(m.status, 2) << m.output;
  EXPECT_NE(m.output.find("line 8 (point 500"), std::string::npos) << m.output;
  EXPECT_FALSE(fs::exists(dir_ / "m.csv"));
  // A point that is not a number is named by its line and column.
  { std::ofstream(s1, std::ios::trunc) << good << "x" << row.substr(row.find(',')); }
  const Result x = simloop(sweep("--resume --shard 1/2"));
  EXPECT_EQ(x.status, 2) << x.output;
  EXPECT_NE(x.output.find(s1.string() + ":8: point: expected an index"), std::string::npos)
      << x.output;
}

TEST_F(SweepCliTest, MergeRefusesToWriteOverAnInput) {
  ASSERT_EQ(simloop(sweep("--shard 1/2")).status, 0);
  ASSERT_EQ(simloop(sweep("--shard 2/2")).status, 0);
  const fs::path s1 = dir_ / "small-sweep-shard-1-of-2.csv";
  const std::string before = slurp(s1);
  const Result m =
      simloop(fmt::format("merge '{}' '{}' '{}' '{}'", s1.string(), s1.string(), s1.string(),
                          (dir_ / "small-sweep-shard-2-of-2.csv").string()));
  EXPECT_EQ(m.status, 2) << m.output;
  EXPECT_NE(m.output.find("is also one of the merge's inputs"), std::string::npos) << m.output;
  EXPECT_EQ(slurp(s1), before);
  // Another name for the same file is the same file.
  const Result via =
      simloop(fmt::format("merge '{}/./small-sweep-shard-1-of-2.csv' '{}' '{}'", dir_.string(),
                          s1.string(), (dir_ / "small-sweep-shard-2-of-2.csv").string()));
  EXPECT_EQ(via.status, 2) << via.output;
  EXPECT_EQ(slurp(s1), before);
}

TEST_F(SweepCliTest, RetryCrashedRunsCrashedRowsAgain) {
  ASSERT_EQ(simloop(sweep()).status, 0);
  const fs::path csv = dir_ / "small-sweep.csv";
  const Table whole = read_csv(csv);
  // Two runs recorded as killed (as by the OOM killer).
  Table t = whole;
  const int sc = t.column("status"), ec = t.column("error");
  for (size_t i : {size_t{3}, size_t{7}}) {
    t.rows[i][static_cast<size_t>(sc)] = "crashed";
    t.rows[i][static_cast<size_t>(ec)] = "killed by signal 9 (Killed)";
  }
  std::string text = csv_line(t.header);
  for (const auto& r : t.rows) text += csv_line(r);
  { std::ofstream(csv, std::ios::trunc) << text; }
  const Result plain = simloop(sweep("--resume"));
  EXPECT_EQ(plain.status, 0) << plain.output;
  EXPECT_NE(plain.output.find("kept 12 rows, 0 runs to add"), std::string::npos) << plain.output;
  const Result retry = simloop(sweep("--resume --retry-crashed"));
  EXPECT_EQ(retry.status, 0) << retry.output;
  EXPECT_NE(retry.output.find("kept 10 rows, 2 runs to add, dropped 0 rows; 2 crashed runs to "
                              "run again"),
            std::string::npos)
      << retry.output;
  EXPECT_EQ(comparable(read_csv(csv)), comparable(whole));
  EXPECT_EQ(simloop(sweep("--retry-crashed")).status, 2) << "it needs --resume";
}

// Any row can be rerun alone from what the manifest keeps, and gives the
// same row.
TEST_F(SweepCliTest, AnyRowCanBeRerunAloneFromTheSweep) {
  ASSERT_EQ(simloop(sweep()).status, 0);
  const fs::path csv = dir_ / "small-sweep.csv";
  const Table t = read_csv(csv);
  const auto& row = t.rows[9];  // point 4 repeat 1: 256 B, none
  ASSERT_EQ(row[0] + "/" + row[1], "4/1");
  const Result r = simloop(fmt::format("run --from-sweep '{}' --point 4 --repeat 1 -o '{}'",
                                       csv.string(), (dir_ / "rerun").string()));
  ASSERT_EQ(r.status, 0) << r.output;
  const Table one = read_csv(dir_ / "rerun/small.csv");
  ASSERT_EQ(one.rows.size(), 1u);
  for (const char* c : {"kpps", "cycles_per_packet", "seed", "packets", "enobufs"})
    EXPECT_EQ(one.rows[0][one.column(c)], row[t.column(c)]) << c;
  EXPECT_EQ(one.rows[0][one.column("payload")], "256");
  EXPECT_EQ(one.rows[0][one.column("align")], "none");
  // The stored configuration is what runs, even once the file has changed.
  write("small.yaml",
        std::string(kExperiment).replace(std::string(kExperiment).find("3000"), 4, "5000"));
  const Result changed = simloop(fmt::format("run --from-sweep '{}' --point 4 --repeat 1 -o '{}'",
                                             csv.string(), (dir_ / "rerun2").string()));
  ASSERT_EQ(changed.status, 0) << changed.output;
  EXPECT_NE(changed.output.find("workload.packets"), std::string::npos) << changed.output;
  const Table two = read_csv(dir_ / "rerun2/small.csv");
  EXPECT_EQ(two.rows[0][two.column("kpps")], row[t.column("kpps")]);
  EXPECT_EQ(two.rows[0][two.column("packets")], "3000");
  EXPECT_EQ(simloop(fmt::format("run --from-sweep '{}' --point 6", csv.string())).status, 2);
}

// Above 200 points in a shard the summary is a count, read a row at a time:
// of the shard's own points, and whether their repeats agreed.
TEST_F(SweepCliTest, ALargeShardsSummaryCountsItsPointsAndWhetherRepeatsAgree) {
  const fs::path exp = write("large.yaml",
                             "name: large\n"
                             "machine: athlon-xp-2700\n"
                             "stack: freebsd6\n"
                             "workload: {payload: 18, packets: 1}\n"
                             "sweep:\n"
                             "  grid:\n"
                             "    workload.payload: {start: 0, stop: 602, step: 1}\n"
                             "  repeats: 2\n");
  const std::string same = "every repeat of every point gave the same kpps";
  const Result first = simloop(sweep("--shard 2/3", exp));
  ASSERT_EQ(first.status, 0) << first.output;
  EXPECT_NE(first.output.find("201 points, 201 with a run that ended ok"), std::string::npos)
      << first.output;
  EXPECT_NE(first.output.find(same), std::string::npos) << first.output;

  // One run of one point gave another kpps: its repeats no longer agree.
  const fs::path csv = dir_ / "large-sweep-shard-2-of-3.csv";
  Table t = read_csv(csv);
  ASSERT_EQ(t.rows.size(), 402u);
  auto& kpps = t.rows[7][static_cast<size_t>(t.column("kpps"))];
  kpps = fmt::format("{:.3f}", std::stod(kpps) + 1);
  std::string text = csv_line(t.header);
  for (const auto& r : t.rows) text += csv_line(r);
  write_file_atomic(csv, text);
  const Result again = simloop(sweep("--shard 2/3 --resume", exp));
  ASSERT_EQ(again.status, 0) << again.output;
  EXPECT_NE(again.output.find("kept 402 rows, 0 runs to add"), std::string::npos) << again.output;
  EXPECT_NE(again.output.find("201 points, 201 with a run that ended ok"), std::string::npos)
      << again.output;
  EXPECT_EQ(again.output.find(same), std::string::npos) << again.output;
}

}  // namespace
}  // namespace simloop::sweep
