// Sweep sections: expansion against hand-computed lists, seeds, shards,
// errors that name file:line:col and the key, and the result store.
#include "sim/tools/sweep/sweep.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/config/experiment.h"
#include "sim/tools/sweep/runner.h"

namespace simloop::sweep {
namespace {

namespace fs = std::filesystem;
using Rows = std::vector<std::vector<std::string>>;

// Every point of a sweep, made one by one as a plan makes them.
std::vector<Point> points_of(const Spec& s) {
  std::vector<Point> out;
  for (size_t i = 0; i < s.size(); ++i) out.push_back(s.point(i));
  return out;
}

// What plan_resume decides, with the rows it keeps and sets aside read
// back from the file's text.
struct Resumed {
  Rows kept, dropped;
  std::set<std::pair<size_t, int>> done;
  size_t retried = 0, rerun = 0;
  bool rewrite = false;
};

// plan_resume on CSV text, with each point's settings given as maps.
Resumed resume(const std::string& old, const std::vector<std::string>& hashes, int repeats,
               const std::vector<std::string>& header,
               const std::vector<std::map<std::string, std::string>>& settings, bool retry) {
  std::vector<std::string> swept;
  for (const auto& st : settings)
    for (const auto& [k, v] : st)
      if (std::find(swept.begin(), swept.end(), k) == swept.end()) swept.push_back(k);
  PointHashes listed;
  for (const auto& h : hashes) listed.push_back(std::string_view(h));
  const StoredRows rows = read_rows(old, "r.csv");
  const ResumePlan plan = plan_resume(rows, "r.csv", listed, repeats, header, swept, retry);
  Resumed out{{}, {}, plan.done.runs(), plan.retried, plan.rerun, plan.rewrite};
  for (const auto& r : plan.kept) {
    const auto line = std::string_view(old).substr(r.offset, r.length);
    out.kept.push_back(kept_row(plan, r, line, header, [&](size_t i, const std::string& k) {
      const auto it = settings.at(i).find(k);
      return it == settings.at(i).end() ? std::string() : it->second;
    }));
  }
  for (const auto& r : plan.dropped)
    out.dropped.push_back(stored_row(std::string_view(old).substr(r.offset, r.length)));
  return out;
}

constexpr const char* kBase =
    "machine: athlon-xp-2700\n"
    "stack: freebsd6\n"
    "workload: {payload: 18, packets: 1000}\n";

class SweepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("simloop-sweep-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path write(const std::string& sweep) {
    const fs::path p = dir_ / "exp.yaml";
    std::ofstream(p) << kBase << sweep;
    return p;
  }
  // Each point's values, in key order.
  Rows values(const std::string& sweep) {
    const Spec s = load_spec(write(sweep));
    Rows out;
    for (const auto& p : points_of(s)) {
      std::vector<std::string> v;
      for (const auto& st : p.settings) v.push_back(st.value);
      out.push_back(v);
    }
    return out;
  }
  std::string error_of(const std::string& sweep) {
    try {
      load_spec(write(sweep));
    } catch (const config::ConfigError& e) {
      return e.what();
    }
    return "";
  }
  fs::path dir_;
};

TEST_F(SweepTest, GridIsTheCartesianProductFirstKeySlowest) {
  const Spec s =
      load_spec(write("sweep:\n  grid:\n    workload.payload: [18, 64]\n    options.align: [none, "
                      "copy-down, strict]\n"));
  EXPECT_EQ(s.keys, (std::vector<std::string>{"workload.payload", "options.align"}));
  EXPECT_EQ(
      values(
          "sweep:\n  grid:\n    workload.payload: [18, 64]\n    options.align: [none, copy-down, "
          "strict]\n"),
      (Rows{{"18", "none"},
            {"18", "copy-down"},
            {"18", "strict"},
            {"64", "none"},
            {"64", "copy-down"},
            {"64", "strict"}}));
  for (size_t i = 0; i < s.size(); ++i) EXPECT_EQ(s.point(i).index, i);
  EXPECT_EQ(s.repeats, 1);
}

TEST_F(SweepTest, ZipGoesInLockStepAndIsTheFastestAxisOfAGrid) {
  EXPECT_EQ(values("sweep:\n  zip:\n    machine.clock_hz: [1e9, 2.5e9]\n    "
                   "stack.functions.ip_output: [300, "
                   "150]\n"),
            (Rows{{"1000000000", "300"}, {"2500000000", "150"}}));
  EXPECT_EQ(
      values("sweep:\n  grid:\n    workload.payload: [18, 64]\n  zip:\n    options.align: [none, "
             "strict]\n    options.copy: [m_copy, m_dup]\n"),
      (Rows{{"18", "none", "m_copy"},
            {"18", "strict", "m_dup"},
            {"64", "none", "m_copy"},
            {"64", "strict", "m_dup"}}));
}

TEST_F(SweepTest, StepRangesIncludeStop) {
  EXPECT_EQ(values("sweep:\n  grid:\n    workload.payload: {start: 18, stop: 418, step: 100}\n"),
            (Rows{{"18"}, {"118"}, {"218"}, {"318"}, {"418"}}));
  EXPECT_EQ(values("sweep:\n  grid:\n    workload.payload: {start: 100, stop: 0, step: -50}\n"),
            (Rows{{"100"}, {"50"}, {"0"}}));
  // Decimal steps do not drift: 0.1 + 0.2 is 0.3.
  EXPECT_EQ(
      values("sweep:\n  grid:\n    workload.link.latency_s: {start: 0.1, stop: 0.4, step: 0.1}\n"),
      (Rows{{"0.1"}, {"0.2"}, {"0.3"}, {"0.4"}}));
}

TEST_F(SweepTest, LogAndLinearRanges) {
  // 16 * 4^i: both ends included.
  EXPECT_EQ(
      values(
          "sweep:\n  grid:\n    workload.payload: {start: 16, stop: 1024, num: 4, scale: log}\n"),
      (Rows{{"16"}, {"64"}, {"256"}, {"1024"}}));
  EXPECT_EQ(
      values(
          "sweep:\n  grid:\n    machine.clock_hz: {start: 1e9, stop: 1e11, num: 3, scale: log}\n"),
      (Rows{{"1000000000"}, {"10000000000"}, {"100000000000"}}));
  EXPECT_EQ(values("sweep:\n  grid:\n    workload.payload: {start: 0, stop: 90, num: 4}\n"),
            (Rows{{"0"}, {"30"}, {"60"}, {"90"}}));
  // Integer keys round, and values that round alike are one point: 1, 1.41, 2, 2.83, 4 -> 1, 2,
  // 3, 4.
  EXPECT_EQ(
      values("sweep:\n  grid:\n    workload.payload: {start: 1, stop: 4, num: 5, scale: log}\n"),
      (Rows{{"1"}, {"2"}, {"3"}, {"4"}}));
}

TEST_F(SweepTest, FilterKeepsPointsWhereEveryConditionHolds) {
  EXPECT_EQ(
      values(
          "sweep:\n  grid:\n    workload.payload: [18, 500, 1000, 1400]\n    options.align: [none, "
          "strict]\n  filter:\n    - \"workload.payload <= 1000\"\n    - \"options.align != "
          "strict\"\n"),
      (Rows{{"18", "none"}, {"500", "none"}, {"1000", "none"}}));
  EXPECT_EQ(values("sweep:\n  grid:\n    workload.payload: [18, 64, 128]\n  filter: "
                   "\"workload.payload > 18\"\n"),
            (Rows{{"64"}, {"128"}}));
  const Spec s =
      load_spec(write("sweep:\n  grid:\n    workload.payload: [18, 64, 128]\n  filter: "
                      "\"workload.payload == 64\"\n  repeats: 4\n"));
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s.point(0).index, 0u) << "indices count the points that are kept";
  EXPECT_EQ(s.repeats, 4);
}

TEST_F(SweepTest, SeedsAreDeterministicPerPointAndRepeat) {
  const Spec a =
      load_spec(write("sweep:\n  grid:\n    workload.payload: [18, 64]\n  repeats: 3\n"));
  const Spec b = load_spec(write("sweep:\n  grid:\n    workload.payload: [10, 18, 30, 64]\n"));
  std::set<uint64_t> seen;
  for (const auto& p : points_of(a))
    for (int r = 0; r < 3; ++r) {
      const uint64_t s = run_seed(1, p, r);
      EXPECT_LT(s, uint64_t{1} << 52);
      EXPECT_EQ(s, run_seed(1, p, r));
      seen.insert(s);
    }
  EXPECT_EQ(seen.size(), 6u);
  // A point keeps its seeds when the sweep grows around it.
  EXPECT_EQ(run_seed(1, a.point(1), 0), run_seed(1, b.point(3), 0));
  EXPECT_NE(run_seed(1, a.point(0), 0), run_seed(2, a.point(0), 0));
}

// A point's hash is of the base and the settings that change it: equal
// hashes exactly where the resolved configurations are equal, whatever
// order the keys are swept in and whichever of them the sweep names.
TEST_F(SweepTest, PointHashesAreEqualExactlyWhereConfigurationsAre) {
  // Duplicates on purpose: a zip may repeat a tuple, and 18 B and none are
  // the base's own payload and alignment.
  const fs::path file = write(
      "sweep:\n  zip:\n    workload.payload: [18, 64, 18, 64, 18]\n    options.align: "
      "[none, none, none, strict, strict]\n");
  const Spec s = load_spec(file);
  const auto base = config::to_json(config::load_experiment(file));
  const PointHasher hash(s, base);
  std::vector<nlohmann::json> resolved;
  for (const auto& p : points_of(s)) {
    auto c = config::to_json(config::load_experiment(file, p.as_sets()));
    c.erase("output");
    resolved.push_back(c);
    EXPECT_EQ(hash(p.index), hash(p)) << p.index;
  }
  size_t equal = 0;
  for (size_t i = 0; i < s.size(); ++i)
    for (size_t j = i + 1; j < s.size(); ++j) {
      EXPECT_EQ(hash(i) == hash(j), resolved[i] == resolved[j]) << i << " " << j;
      equal += hash(i) == hash(j) ? 1 : 0;
    }
  EXPECT_EQ(equal, 1u) << "points 0 and 2 are the same configuration";
  // Swept in the other order, or not swept at all where the base's value
  // is the point's, a point keeps its hash.
  const Spec other = load_spec(
      write("sweep:\n  grid:\n    options.align: [strict, none]\n    workload.payload: [64]\n"));
  const PointHasher hash2(other, base);
  EXPECT_EQ(hash2(0), hash(3)) << "strict, 64";
  EXPECT_EQ(hash2(1), hash(1)) << "none, 64";
  const Spec one = load_spec(write("sweep:\n  grid:\n    workload.payload: [64]\n"));
  EXPECT_EQ(PointHasher(one, base)(0), hash(1));
  // Another base: other hashes for the same settings.
  auto moved = base;
  moved["workload"]["packets"] = 2000;
  EXPECT_NE(PointHasher(s, moved)(1), hash(1));
  // What leaves results alone does not move them.
  moved = base;
  moved["output"]["dir"] = "elsewhere";
  moved["description"] = "another text";
  EXPECT_EQ(PointHasher(s, moved)(1), hash(1));
}

// The machine and the stack are axes like any key: their values are names
// (checked against the files there are, at their line), and a point that
// chooses the base's own profile is the base's configuration, hashed so.
TEST_F(SweepTest, MachineAndStackAreAxesWhoseBaseValueIsTheBasesName) {
  const fs::path file = write(
      "sweep:\n  grid:\n    stack: [freebsd6, freebsd6-warm]\n    workload.payload: [18, 64]\n"
      "  filter: [\"stack != none\"]\n");
  const Spec s = load_spec(file);
  EXPECT_EQ(s.keys, (std::vector<std::string>{"stack", "workload.payload"}));
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s.point(2).as_sets(),
            (std::vector<std::string>{"stack=freebsd6-warm", "workload.payload=18"}));
  const config::Experiment base = config::load_experiment(file);
  EXPECT_EQ(config::profile_ref(base, "stack"), "freebsd6");
  EXPECT_EQ(config::profile_ref(base, "machine"), "athlon-xp-2700");
  const auto json = config::to_json(base);
  const PointHasher hash(s, json, profile_refs(base));
  const Spec payloads = load_spec(write("sweep:\n  grid:\n    workload.payload: [18, 64]\n"));
  const PointHasher hash1(payloads, json, profile_refs(base));
  EXPECT_EQ(hash(0), hash1(0)) << "stack=freebsd6 is the base";
  EXPECT_EQ(hash(1), hash1(1));
  EXPECT_NE(hash(2), hash1(0));
  EXPECT_EQ(hash(2), hash(s.point(2)));
  // Without the name (a base whose stack is a map) every setting counts.
  EXPECT_NE(PointHasher(s, json)(0), hash1(0));
  // Each point loads: the stack switched as its value says.
  EXPECT_EQ(config::load_over(base, {}, s.point(3).as_sets()).stack_name, "freebsd6-warm");

  EXPECT_NE(error_of("sweep:\n  grid:\n    stack: [freebsd6, freebsd7]\n")
                .find(":6:23: stack: no stack named 'freebsd7'"),
            std::string::npos);
  EXPECT_NE(error_of("sweep:\n  grid:\n    machine: ['']\n")
                .find("machine: expected the name or path of a machine"),
            std::string::npos);
  EXPECT_NE(error_of("sweep:\n  grid:\n    stak: [freebsd6]\n").find("did you mean 'stack'"),
            std::string::npos);
}

TEST_F(SweepTest, ShardsPartitionThePoints) {
  const Spec s =
      load_spec(write("sweep:\n  grid:\n    workload.payload: {start: 0, stop: 9, step: 1}\n"));
  std::vector<int> owner(s.size(), 0);
  for (int k = 1; k <= 3; ++k)
    for (const auto& p : points_of(s))
      if (parse_shard(fmt::format("{}/3", k)).contains(p)) owner[p.index] += k;
  EXPECT_EQ(owner, (std::vector<int>{1, 2, 3, 1, 2, 3, 1, 2, 3, 1}));
  EXPECT_THROW(parse_shard("0/3"), std::invalid_argument);
  EXPECT_THROW(parse_shard("4/3"), std::invalid_argument);
  EXPECT_THROW(parse_shard("2"), std::invalid_argument);
}

TEST_F(SweepTest, BadSectionsNameFileLineColumnAndKey) {
  const std::string f = (dir_ / "exp.yaml").string();
  // Line 4 is the first line of the sweep section (three lines of base).
  EXPECT_EQ(error_of("sweep:\n  grid:\n    workload.paylod: [1, 2]\n"),
            f + ":6:5: workload.paylod: no such key; did you mean 'workload.payload'? (see "
                "docs/config-reference.md)");
  EXPECT_EQ(error_of("sweep:\n  grid:\n    workload.payload: [18, -4]\n"),
            f + ":6:28: workload.payload: expected an integer in [0, 65507], got '-4'");
  EXPECT_EQ(error_of("sweep:\n  grid:\n    options.align: [none, crooked]\n"),
            f + ":6:27: options.align: expected one of none, copy-down, strict, copy-down-unsafe, "
                "got 'crooked'");
  EXPECT_EQ(error_of("sweep:\n  zip:\n    workload.payload: [18, 64]\n    options.align: [none]\n"),
            f + ":7:5: options.align: has 1 values but workload.payload has 2: zip takes lists of "
                "the same "
                "length");
  EXPECT_EQ(error_of("sweep:\n  grid:\n    workload.payload: {start: 18, stop: 100, step: 0}\n"),
            f + ":6:52: workload.payload.step: must not be 0");
  EXPECT_EQ(error_of("sweep:\n  grid:\n    workload.payload: {start: 18, stop: 100}\n"),
            f + ":6:23: workload.payload: a range needs step, or num (with scale: log or linear)");
  EXPECT_EQ(
      error_of(
          "sweep:\n  grid:\n    workload.payload: {start: 0, stop: 100, num: 3, scale: log}\n"),
      f + ":6:23: workload.payload: a log-spaced range needs start and stop > 0");
  EXPECT_EQ(
      error_of(
          "sweep:\n  grid:\n    workload.payload: [18]\n  filter: [\"options.align == none\"]\n"),
      f + ":7:12: sweep.filter: 'options.align' is not a swept key (swept: workload.payload)");
  EXPECT_EQ(
      error_of(
          "sweep:\n  grid:\n    options.align: [none]\n  filter: [\"options.align < none\"]\n"),
      f + ":7:12: sweep.filter: options.align is not a number: compare it with == or !=");
  EXPECT_EQ(
      error_of(
          "sweep:\n  grid:\n    workload.payload: [18]\n  filter: [\"workload.payload > 100\"]\n"),
      f + ":7:11: sweep.filter: no point is left");
  EXPECT_EQ(error_of("sweep:\n  grid:\n    workload.payload: [18]\n  repeats: 0\n"),
            f + ":7:12: sweep.repeats: expected an integer in [1, 1000000], got '0'");
  EXPECT_EQ(error_of("sweep:\n  grdi:\n    workload.payload: [18]\n"),
            f + ":5:3: sweep.grdi: unknown key in sweep (allowed: grid, zip, filter, repeats)");
  EXPECT_EQ(error_of("sweep:\n  grid:\n    output.dir: [a, b]\n"),
            f + ":6:5: output.dir: cannot be swept: it says where results go");
  EXPECT_EQ(error_of(""),
            f + ":1:1: sweep: the experiment has no sweep section (see docs/config-reference.md)");
}

TEST_F(SweepTest, TheLoaderAcceptsAndIgnoresTheSweepSection) {
  const auto x =
      config::load_experiment(write("sweep:\n  grid:\n    workload.payload: [64, 128]\n"));
  EXPECT_EQ(x.workload.payload, 18);
}

TEST_F(SweepTest, ResultStoreAppendsWholeRows) {
  const fs::path p = dir_ / "r.csv";
  const std::vector<std::string> header = {"point", "repeat", "note"};
  write_file_atomic(p, csv_line(header));
  {
    ResultStore s(p, header);
    s.append({"0", "0", "a, with comma"});
    s.append({"1", "0", "say \"hi\""});
    EXPECT_THROW(s.append({"2"}), std::logic_error);
  }
  // A write cut short leaves a partial line: it is not a row.
  { std::ofstream(p, std::ios::app) << "2,0,partial"; }
  const Table t = read_csv(p);
  EXPECT_EQ(t.header, header);
  EXPECT_EQ(t.rows, (Rows{{"0", "0", "a, with comma"}, {"1", "0", "say \"hi\""}}));
  EXPECT_EQ(t.lines, (std::vector<size_t>{2, 3}));
}

// Each row is in the file as soon as it is appended (another reader sees
// it; it survives the end of this process); fsync runs once per interval,
// not once per row, and at sync() and the store's end.
TEST_F(SweepTest, RowsAreWrittenAtOnceAndSyncedInBatches) {
  const fs::path p = dir_ / "r.csv";
  const std::vector<std::string> header = {"point", "repeat"};
  write_file_atomic(p, csv_line(header));
  {
    ResultStore s(p, header, std::chrono::hours(1));
    for (int i = 0; i < 100; ++i) {
      s.append({std::to_string(i), "0"});
      ASSERT_EQ(read_csv(p).rows.size(), static_cast<size_t>(i + 1));
    }
    EXPECT_EQ(s.syncs(), 0u);
    s.sync();
    s.sync();  // nothing new: no second fsync
    EXPECT_EQ(s.syncs(), 1u);
  }
  ResultStore every(p, header, std::chrono::milliseconds(0));
  every.append({"100", "0"});
  every.append({"101", "0"});
  EXPECT_EQ(every.syncs(), 2u);
}

// A full disk is reported as such, not as "Success", and as a failed write
// (simloop's exit status 4), not as any other error.
TEST_F(SweepTest, AFullDiskIsReportedAsENOSPC) {
  // The store's file swapped for /dev/full under it (a link to /dev/full
  // would be refused: see below).
  const fs::path p = dir_ / "full.csv";
  write_file_atomic(p, "point\n");
  ResultStore s(p, {"point"});
  const int full = ::open("/dev/full", O_WRONLY | O_CLOEXEC);
  ASSERT_GE(full, 0);
  ASSERT_EQ(::dup2(full, s.fd()), s.fd());
  ::close(full);
  try {
    s.append({"0"});
    ADD_FAILURE() << "a write to a full device succeeded";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("No space left on device (ENOSPC)"), std::string::npos)
        << e.what();
    EXPECT_NE(dynamic_cast<const report::WriteError*>(&e), nullptr) << e.what();
  }
}

// Results, lock and replaced files are never written through a link: a
// link planted there is refused by name and what it points to is kept.
TEST_F(SweepTest, NoFileIsWrittenThroughALink) {
  const fs::path target = dir_ / "target";
  write_file_atomic(target, "kept\n");
  auto expect_refused = [&](const fs::path& link, auto&& write) {
    fs::create_symlink(target, link);
    try {
      write();
      ADD_FAILURE() << link << ": written through the link";
    } catch (const report::LinkError& e) {
      EXPECT_EQ(std::string(e.what()),
                link.string() + ": is a symbolic link; simloop does not write through links");
    }
    EXPECT_EQ(read_text(target), "kept\n");
    EXPECT_TRUE(fs::is_symlink(link));
  };
  expect_refused(dir_ / "r.csv", [&] { ResultStore s(dir_ / "r.csv", {"point"}); });
  expect_refused(dir_ / "r.lock", [&] { StoreLock l(dir_ / "r.lock", "r.csv"); });
  expect_refused(dir_ / "w.csv", [&] { write_file_atomic(dir_ / "w.csv", "point\n"); });
  // A dangling link: what it names is not created either.
  const fs::path nowhere = dir_ / "nowhere";
  fs::create_symlink(nowhere, dir_ / "d.lock");
  EXPECT_THROW(StoreLock(dir_ / "d.lock", "d.csv"), report::LinkError);
  EXPECT_FALSE(fs::exists(nowhere));
}

// The temporary file of an atomic write has a name no one can guess: links
// planted at <file>.tmp.<pid> (the old names) stay unwritten, and nothing
// but the file itself is left.
TEST_F(SweepTest, AtomicWritesUseNoPredictableTemporary) {
  const fs::path p = dir_ / "out.csv";
  const fs::path planted = dir_ / "planted";
  fs::path link = p;
  link += ".tmp." + std::to_string(::getpid());
  fs::create_symlink(planted, link);
  write_file_atomic(p, "a\n");
  write_file_atomic(p, "b\n");
  EXPECT_EQ(read_text(p), "b\n");
  EXPECT_FALSE(fs::exists(planted));
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir_)) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 2u);  // out.csv and the planted link
}

TEST_F(SweepTest, CorruptResultsNameTheirLine) {
  auto error = [](std::string_view text) {
    try {
      row_ids(parse_csv(text, "r.csv"), "r.csv");
    } catch (const StoreError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error("point,repeat,point_hash\n0,0,a\n1,x\n"), "r.csv:3: 2 fields, the header has 3");
  EXPECT_EQ(error("point,repeat,point_hash\n0,0,a\n-1,0,b\n"),
            "r.csv:3: point: expected an index in [0, 10000000], got '-1'");
  EXPECT_EQ(error("point,repeat,point_hash\n99999999999999999999,0,a\n"),
            "r.csv:2: point: expected an index in [0, 10000000], got '99999999999999999999'");
  EXPECT_EQ(error("point,repeat,point_hash\n0,1e3,a\n"),
            "r.csv:2: repeat: expected an integer in [0, 1000000], got '1e3'");
  EXPECT_EQ(error("point,point\n"), "r.csv:1: column 'point' appears twice");
  EXPECT_EQ(error("point,repeat\n0,0\n"),
            "r.csv: not sweep results: the header lacks point, repeat or point_hash");
  EXPECT_EQ(error(""), "r.csv:1:1: no header line");
  EXPECT_EQ(error(std::string("point,repeat,point_hash\n0,0,") + '\0' + "\n"),
            "r.csv:2: not CSV text (a NUL byte)");

  const auto ids = row_ids(
      parse_csv("point,repeat,point_hash\n0,0,aa\n1,0,bb\n5,0,cc\n0,2,aa\n", "r.csv"), "r.csv");
  try {
    check_known(ids, KnownPoints{{"aa", "zz"}, 2}, "r.csv");
    ADD_FAILURE();
  } catch (const StoreError& e) {
    EXPECT_EQ(std::string(e.what()),
              "r.csv: 3 rows of points its manifest does not list: line 3 (point 1 hash bb, not "
              "zz), line 4 (point 5: the sweep has 2), line 5 (repeat 2: the sweep has 2)");
  }
  EXPECT_THROW(known_points(parse_manifest("{\"points\": [{\"index\": 1, \"hash\": \"a\"}], "
                                           "\"repeats\": 1}",
                                           "m.json"),
                            "m.json"),
               StoreError);
  // Found by fuzz/store_fuzz.cc: a number JSON cannot hold.
  EXPECT_THROW(parse_manifest("{\"experiment\": 1e6473}", "m.json"), StoreError);
  try {
    parse_manifest("{\n  \"points\": [1,\n", "m.json");
    ADD_FAILURE();
  } catch (const StoreError& e) {
    EXPECT_EQ(std::string(e.what()).substr(0, 9), "m.json:3:") << e.what();
  }
}

TEST_F(SweepTest, ResumeKeepsRowsByPointHash) {
  const std::string old =
      "point,repeat,point_hash,k,kpps,status\n"
      "0,0,h18,18,300,ok\n1,0,h64,64,290,crashed\n2,0,h99,99,280,ok\n0,1,h18,18,301,ok\n";
  // The grid grew in front (h5 is new) and lost h99; one more swept key.
  const std::vector<std::string> header = {"point", "repeat", "point_hash", "k",
                                           "j",     "kpps",   "status"};
  const std::vector<std::map<std::string, std::string>> settings = {
      {{"k", "5"}, {"j", "a"}}, {{"k", "18"}, {"j", "a"}}, {{"k", "64"}, {"j", "a"}}};
  const auto plan = resume(old, {"h5", "h18", "h64"}, 2, header, settings, false);
  EXPECT_EQ(plan.kept, (Rows{{"1", "0", "h18", "18", "a", "300", "ok"},
                             {"2", "0", "h64", "64", "a", "290", "crashed"},
                             {"1", "1", "h18", "18", "a", "301", "ok"}}));
  EXPECT_EQ(plan.dropped, (Rows{{"2", "0", "h99", "99", "280", "ok"}}));
  EXPECT_EQ(plan.done, (std::set<std::pair<size_t, int>>{{1, 0}, {2, 0}, {1, 1}}));
  EXPECT_TRUE(plan.rewrite);
  const auto retry = resume(old, {"h5", "h18", "h64"}, 2, header, settings, true);
  EXPECT_EQ(retry.retried, 1u);
  EXPECT_EQ(retry.done, (std::set<std::pair<size_t, int>>{{1, 0}, {1, 1}}));
  // Fewer repeats drop the later ones.
  EXPECT_EQ(resume(old, {"h18"}, 1, header, {settings[1]}, false).kept.size(), 1u);
  // Other metric columns: not the same results.
  EXPECT_THROW(
      resume(old, {"h18"}, 1, {"point", "repeat", "point_hash", "k", "x"}, {settings[1]}, false),
      StoreError);
  // The same run twice is corruption, not a result.
  EXPECT_THROW(resume("point,repeat,point_hash,k\n0,0,h,1\n0,0,h,1\n", {"h"}, 1,
                      {"point", "repeat", "point_hash", "k"}, {{{"k", "1"}}}, false),
               StoreError);
}

// A row that says its run ended without a result (status error) is run
// again by every resume; it is not set aside as a point the sweep lost.
// A run recorded twice is refused at the first row, in the file's order,
// whose run an earlier row holds: here line 5 (point 2 repeat 0, as line
// 2), before line 6 (point 1, as line 3) and line 7 (point 2 a third time).
TEST_F(SweepTest, ARunRecordedTwiceIsRefusedAtItsFirstRepetition) {
  const std::string old =
      "point,repeat,point_hash,status\n2,0,cc,ok\n1,0,bb,ok\n0,0,aa,ok\n2,0,cc,ok\n1,0,bb,ok\n"
      "2,0,cc,ok\n";
  const std::vector<std::string> header = {"point", "repeat", "point_hash", "status"};
  try {
    resume(old, {"aa", "bb", "cc"}, 1, header, {{}, {}, {}}, false);
    FAIL() << "not refused";
  } catch (const StoreError& e) {
    EXPECT_STREQ(e.what(), "r.csv:5: point 2 repeat 0 is recorded twice");
  }
  // Each once: kept, and known as done.
  const auto plan = resume("point,repeat,point_hash,status\n2,0,cc,ok\n0,0,aa,ok\n",
                           {"aa", "bb", "cc"}, 1, header, {{}, {}, {}}, false);
  EXPECT_EQ(plan.done, (std::set<std::pair<size_t, int>>{{0, 0}, {2, 0}}));
}

TEST_F(SweepTest, ResumeRunsRowsWithoutAResultAgain) {
  const std::string old =
      "point,repeat,point_hash,k,kpps,status\n"
      "0,0,h1,1,300,ok\n1,0,h2,2,,error\n2,0,h3,3,280,crashed\n";
  const std::vector<std::string> header = {"point", "repeat", "point_hash", "k", "kpps", "status"};
  const std::vector<std::map<std::string, std::string>> settings = {
      {{"k", "1"}}, {{"k", "2"}}, {{"k", "3"}}};
  const auto plan = resume(old, {"h1", "h2", "h3"}, 1, header, settings, false);
  EXPECT_EQ(plan.rerun, 1u);
  EXPECT_EQ(plan.retried, 0u);
  EXPECT_TRUE(plan.dropped.empty());
  EXPECT_EQ(plan.done, (std::set<std::pair<size_t, int>>{{0, 0}, {2, 0}}));
  EXPECT_TRUE(plan.rewrite);
  const auto retry = resume(old, {"h1", "h2", "h3"}, 1, header, settings, true);
  EXPECT_EQ(retry.rerun, 1u);
  EXPECT_EQ(retry.retried, 1u);
  EXPECT_TRUE(retry.dropped.empty());
  EXPECT_EQ(retry.done, (std::set<std::pair<size_t, int>>{{0, 0}}));
}

// Rows set aside keep every column of every sweep that set rows aside, and
// a run set aside twice (a grid shrunk, grown and shrunk again) is there once.
TEST_F(SweepTest, RowsSetAsideAreAUnionWithoutDuplicates) {
  const std::string first =
      aside_text("", "d.csv", {"point", "repeat", "point_hash", "a", "kpps"},
                 {{"0", "0", "h1", "1", "300"}, {"1", "0", "h2", "2", "290"}});
  EXPECT_EQ(first, "point,repeat,point_hash,a,kpps\n0,0,h1,1,300\n1,0,h2,2,290\n");
  // Another sweep's columns (b swept, not a), one run already there.
  const std::string second =
      aside_text(first, "d.csv", {"point", "repeat", "point_hash", "b", "kpps"},
                 {{"3", "0", "h1", "", "300"}, {"0", "0", "h7", "x", "100"}});
  EXPECT_EQ(second,
            "point,repeat,point_hash,a,kpps,b\n0,0,h1,1,300,\n1,0,h2,2,290,\n0,0,h7,,100,x\n");
  // Nothing new: the text as it was.
  EXPECT_EQ(aside_text(second, "d.csv", {"point", "repeat", "point_hash", "kpps"},
                       {{"5", "0", "h2", "290"}}),
            second);
  EXPECT_THROW(aside_text("point,repeat,point_hash\n\"0,0,h\n", "d.csv",
                          {"point", "repeat", "point_hash"}, {{"0", "0", "h"}}),
               StoreError);
}

// Point hashes as sweeps write them are held as numbers, any other text as
// it is, and each compares exactly as its text would.
TEST_F(SweepTest, PointHashesCompareAsTheirText) {
  const std::string a = "00000000000000aa", b = "0123456789abcdef";
  const PointHashes h{a, "h5", b, "0123456789ABCDEF", "0123456789abcde", a};
  ASSERT_EQ(h.size(), 6u);
  EXPECT_EQ(h.number(0), 0xaau);
  EXPECT_EQ(h.number(2), 0x0123456789abcdefu);
  for (const size_t odd : {1u, 3u, 4u}) EXPECT_FALSE(h.number(odd)) << odd;
  const std::vector<std::string> texts = {a, "h5", b, "0123456789ABCDEF", "0123456789abcde", a};
  for (size_t i = 0; i < texts.size(); ++i) {
    EXPECT_EQ(h.text(i), texts[i]);
    for (const auto& t : texts) EXPECT_EQ(h.is(i, t), t == texts[i]) << i << " " << t;
    EXPECT_FALSE(h.is(i, "aa"));  // the same number in fewer digits is another text
  }
  EXPECT_EQ(hash_number("00000000000000AA"), std::nullopt);
  EXPECT_EQ(hash_number(a), 0xaau);
  // Where rows' points are: the first index of each hash, by number or text.
  const auto ids = row_ids(parse_csv("point,repeat,point_hash\n9,0," + b + "\n9,0,h5\n9,0," + a +
                                         "\n9,0,0123456789ABCDEF\n9,0,cc\n",
                                     "r.csv"),
                           "r.csv");
  const auto at = indices_of(ids, h);
  EXPECT_EQ(at.all(), (std::unordered_map<std::string, size_t>{
                          {b, 2}, {"h5", 1}, {a, 0}, {"0123456789ABCDEF", 3}}));
}

// Rows re-indexed to a resumed sweep's points (its results written, its
// manifest not yet) are known by that sweep's list, at the same index.
TEST_F(SweepTest, RowsAreKnownByTheManifestOrTheResumingSweep) {
  const auto ids =
      row_ids(parse_csv("point,repeat,point_hash\n0,0,bb\n1,0,aa\n", "r.csv"), "r.csv");
  const KnownPoints manifest{{"aa", "bb", "cc"}, 1}, resuming{{"bb", "aa"}, 1};
  EXPECT_THROW(check_known(ids, manifest, "r.csv"), StoreError);
  EXPECT_NO_THROW(check_known(ids, manifest, "r.csv", &resuming));
  const KnownPoints other{{"aa", "bb"}, 1};
  EXPECT_THROW(check_known(ids, manifest, "r.csv", &other), StoreError);
}

// Checking rows against a manifest does not need a tree of its points,
// most of a large manifest: parsed without them, the rest stays, and the
// hashes are read from the text, as sweeps write them and as older
// simloops wrote them (objects with each point's configuration).
TEST_F(SweepTest, AManifestParsedWithoutItsPointsKeepsTheRest) {
  const nlohmann::json m = {{"config", {{"seed", 1}, {"workload", {{"payload", 18}}}}},
                            {"repeats", 2},
                            {"status", "complete"}};
  const std::string now = manifest_text(m, "[\n    \"aa\",\n    \"bb\"\n  ]");
  const std::string old = manifest_text(m, R"([
    {"index": 0, "hash": "aa", "settings": {"workload.payload": "18"}, "seeds": [1, 2],
     "config": {"seed": 1, "workload": {"payload": 18}}},
    {"index": 1, "hash": "bb", "settings": {"config": "x"}, "seeds": [3, 4],
     "config": {"seed": 1, "workload": {"payload": 19}}}
  ])");
  for (const std::string& text : {now, old}) {
    const auto whole = parse_manifest(text, "m.json");
    const auto lean = parse_manifest(text, "m.json", false);
    ASSERT_TRUE(whole.contains("points"));
    EXPECT_FALSE(lean.contains("points"));
    EXPECT_EQ(lean["config"], whole["config"]);
    EXPECT_EQ(lean["status"], "complete");
    for (const auto& k : {known_points(whole, "m.json"), known_points(lean, "m.json", text)}) {
      EXPECT_EQ(k.hashes, (PointHashes{"aa", "bb"})) << text;
      EXPECT_EQ(k.repeats, 2);
    }
    // Without the text, a lean manifest has no points to give.
    EXPECT_THROW(known_points(lean, "m.json"), StoreError);
  }
  // A manifest rewritten by another tool (members sorted: the points no
  // longer last) keeps its points in the tree, where they are read.
  const std::string sorted =
      R"({"config": {"seed": 1}, "points": ["aa", "bb"], "repeats": 2, "status": "complete"})";
  EXPECT_EQ(known_points(parse_manifest(sorted, "m.json", false), "m.json", sorted).hashes,
            (PointHashes{"aa", "bb"}));
  // A list of hashes with an escape, or a bad point, is read as JSON and
  // judged as before.
  const std::string odd = manifest_text(m, "[\"a\\u0062\", 7]");
  EXPECT_THROW(known_points(parse_manifest(odd, "m.json", false), "m.json", odd), StoreError);
  const std::string escaped = manifest_text(m, "[\"a\\u0062\"]");
  EXPECT_EQ(known_points(parse_manifest(escaped, "m.json", false), "m.json", escaped).hashes,
            PointHashes{"ab"});
  EXPECT_THROW(parse_manifest("{\"points\": [", "m.json", false), StoreError);
}

// Merge copies the first shard's points as text: found only where they are
// the manifest's last member, as sweep writes them.
TEST_F(SweepTest, AManifestsPointsAreFoundAsTextOnlyWhereTheyComeLast) {
  const nlohmann::json m = {{"experiment", "e"}, {"status", "complete"}, {"zeta", 1}};
  // A setting's value may hold the member's own name and a newline (escaped).
  const std::string points =
      "[\n    {\"index\":0,\"settings\":{\"k\":\"\\n  \\\"points\\\": [\"},"
      "\"config\":{\"seed\":1}},\n    {\"index\":1,\"config\":{\"seed\":2}}\n  ]";
  const std::string text = manifest_text(m, points);
  EXPECT_EQ(manifest_points_text(text), points);
  const auto parsed = nlohmann::json::parse(text);
  EXPECT_EQ(parsed["points"], nlohmann::json::parse(points));
  EXPECT_EQ(parsed["zeta"], 1);
  EXPECT_EQ(manifest_points_text(manifest_text(m, "[]")), "[]");
  // Written otherwise (keys sorted, points before status): not found.
  nlohmann::json sorted = parsed;
  EXPECT_EQ(manifest_points_text(sorted.dump(2) + "\n"), "");
  // Cut short, or not an array: not found.
  EXPECT_EQ(manifest_points_text(text.substr(0, text.size() - 10) + "\n}\n"), "");
  EXPECT_EQ(manifest_points_text(manifest_text(m, "{}")), "");
  EXPECT_EQ(manifest_points_text(manifest_text(m, "[1,]")), "");  // brackets, but not an array
}

TEST_F(SweepTest, TheLockIsExclusiveAndNamesItsHolder) {
  const fs::path lock = dir_ / "s.lock";
  EXPECT_FALSE(StoreLock::held(lock));
  {
    const StoreLock first(lock, "s.csv");
    EXPECT_TRUE(StoreLock::held(lock));
    // Another open file description: flock excludes it even in this process.
    try {
      const StoreLock second(lock, "s.csv");
      ADD_FAILURE() << "taken twice";
    } catch (const StoreError& e) {
      EXPECT_NE(std::string(e.what()).find(fmt::format("(pid {})", ::getpid())), std::string::npos)
          << e.what();
    }
  }
  EXPECT_FALSE(StoreLock::held(lock)) << "released with its holder";
  const StoreLock again(lock, "s.csv");
}

// The lock file goes with its holder; the one refused never removes it,
// and a forked child (a sweep's run) that ends does not either.
TEST_F(SweepTest, TheLockFileIsRemovedWhenItsHolderEnds) {
  const fs::path lock = dir_ / "s.lock";
  pid_t child = -1;
  {
    const StoreLock first(lock, "s.csv");
    EXPECT_THROW(StoreLock(lock, "s.csv"), StoreError);
    EXPECT_TRUE(fs::exists(lock)) << "removed by the one refused";
    child = ::fork();
    ASSERT_GE(child, 0);
    if (child != 0) {
      int status = 0;
      ASSERT_EQ(::waitpid(child, &status, 0), child);
      EXPECT_TRUE(fs::exists(lock)) << "removed by a forked child";
      EXPECT_TRUE(StoreLock::held(lock));
    }
  }  // in the child too: its copy of `first` ends here
  if (child == 0) ::_exit(0);
  EXPECT_FALSE(fs::exists(lock)) << "left behind by its holder";
  const StoreLock again(lock, "s.csv");
  EXPECT_TRUE(StoreLock::held(lock));
}

// A signal that ends the holder (Ctrl-C before a sweep's runs start or
// after they end, a kill, a hang-up) takes the lock file with it; a signal
// the process ignores stays ignored; a forked child ended by one leaves it.
TEST_F(SweepTest, TheLockFileGoesWithAHolderEndedByASignal) {
  for (const int sig : {SIGINT, SIGTERM, SIGHUP}) {
    const fs::path lock = dir_ / fmt::format("sig{}.lock", sig);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::signal(sig, SIG_DFL);
      const StoreLock held(lock, "s.csv");
      // A child of the holder (a sweep's run) ended by the same signal.
      const pid_t run = ::fork();
      if (run == 0) ::raise(sig);
      int st = 0;
      ::waitpid(run, &st, 0);
      if (!WIFSIGNALED(st) || !fs::exists(lock)) ::_exit(3);
      ::raise(sig);
      ::_exit(4);  // not reached
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status)) << "signal " << sig << ": exit " << WEXITSTATUS(status);
    EXPECT_EQ(WTERMSIG(status), sig) << "ended by the signal, as it would have been";
    EXPECT_FALSE(fs::exists(lock)) << "signal " << sig << " left the lock file behind";
    const StoreLock again(lock, "s.csv");
  }
  const fs::path lock = dir_ / "ignored.lock";
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::signal(SIGINT, SIG_IGN);
    {
      const StoreLock held(lock, "s.csv");
      ::raise(SIGINT);
      if (!fs::exists(lock)) ::_exit(3);
    }
    ::_exit(fs::exists(lock) ? 4 : 0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "an ignored SIGINT ended it";
}

}  // namespace
}  // namespace simloop::sweep
