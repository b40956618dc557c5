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
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "sweep/sweep.h"

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
    EXPECT_EQ(at("payload"), at("workload.payload"))
        << "the point's setting reached the simulation";
    EXPECT_EQ(at("align"), at("options.align"));
    EXPECT_EQ(at("status"), "ok");
    EXPECT_EQ(at("packets"), "3000");
    EXPECT_GT(std::stod(at("kpps")), 10);
    EXPECT_GE(std::stod(at("process_s")), std::stod(at("wall_s")));
    kpps[key.first] += std::stod(at("kpps")) / 2;
  }
  // Points are ordered payload-major: bigger datagrams go slower.
  EXPECT_GT(kpps[0], kpps[4]);

  std::ifstream mf(dir_ / "small-sweep.json");
  const json m = json::parse(mf);
  EXPECT_EQ(m["status"], "complete");
  EXPECT_EQ(m["experiment_hash"].get<std::string>().size(), 16u);
  EXPECT_FALSE(m["git_revision"].get<std::string>().empty());
  EXPECT_TRUE(m["git_dirty"].is_boolean());
  EXPECT_FALSE(m["simloop_version"].get<std::string>().empty());
  EXPECT_EQ(m["config"]["workload"]["dest"], "broadcast");
  EXPECT_EQ(m["points"].size(), 6u);
  EXPECT_EQ(m["points"][1]["settings"]["options.align"], "copy-down");
  EXPECT_EQ(m["points"][1]["seeds"].size(), 2u);
  const std::string first = listed[std::make_pair(1, 0)];
  EXPECT_EQ(std::to_string(m["points"][1]["seeds"][0].get<uint64_t>()),
            first.substr(0, first.find(',')));
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
  const Result r = simloop(sweep("--resume"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("9 of 12 runs already done"), std::string::npos) << r.output;
  std::ifstream g(csv);
  const std::string after((std::istreambuf_iterator<char>(g)), std::istreambuf_iterator<char>());
  ASSERT_EQ(after.substr(0, kept.size()), kept) << "rows already there are untouched";
  const Table t = read_csv(csv);
  ASSERT_EQ(t.rows.size(), 12u);
  std::set<std::pair<int, int>> rerun;
  for (size_t i = 9; i < t.rows.size(); ++i)
    rerun.insert({std::stoi(t.rows[i][0]), std::stoi(t.rows[i][1])});
  EXPECT_EQ(rerun, deleted);
  comparable(t);  // no run twice

  // Nothing left: a second resume runs nothing.
  const Result none = simloop(sweep("--resume"));
  EXPECT_EQ(none.status, 0) << none.output;
  EXPECT_EQ(read_csv(csv).rows.size(), 12u);

  // Results of another experiment hash are not resumed into.
  const Result other = simloop(sweep("--resume --set workload.packets=2000"));
  EXPECT_EQ(other.status, 2) << other.output;
  EXPECT_NE(other.output.find("different sweep"), std::string::npos) << other.output;
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
  const pid_t pid = ::fork();
  if (pid == 0) {
    const std::string out = (dir_ / "sweep.log").string();
    std::freopen(out.c_str(), "w", stderr);
    ::execl(SIMLOOP_BIN, SIMLOOP_BIN, "sweep", exp.c_str(), "-j", "1", "-o", dir_.c_str(), nullptr);
    ::_exit(127);
  }
  // Wait for two rows, then Ctrl-C.
  for (int i = 0; i < 600; ++i) {
    if (fs::exists(csv) && read_csv(csv).rows.size() >= 2) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
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
  std::ifstream lf(dir_ / "sweep.log");
  const std::string log((std::istreambuf_iterator<char>(lf)), std::istreambuf_iterator<char>());
  EXPECT_NE(log.find("--resume"), std::string::npos) << log;

  const Result r = simloop(sweep("--resume", exp));
  ASSERT_EQ(r.status, 0) << r.output;
  const Table t = read_csv(csv);
  EXPECT_EQ(t.rows.size(), 21u);
  EXPECT_EQ(comparable(t).size(), 21u);
}

}  // namespace
}  // namespace simloop::sweep
