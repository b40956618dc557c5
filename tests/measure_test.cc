// Calibration, comparison and the kernel measurement: NNLS against known
// answers, fits that recover the costs the timing model itself priced,
// error arithmetic on a hand-made case, and a short real kernel run.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>

#include "sim/config/experiment.h"
#include "sim/stack/bsd/fns.h"
#include "sim/tools/calibrate/calibrate.h"
#include "sim/tools/measure/compare.h"
#include "sim/tools/measure/harness_run.h"
#include "sim/tools/measure/kernel.h"
#include "sim/tools/measure/stage_timer.h"

namespace simloop::measure {
namespace {

namespace fs = std::filesystem;

TEST(Nnls, RecoversANonNegativeSolutionExactly) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(0, 1);
  Eigen::MatrixXd A(30, 6);
  for (Eigen::Index i = 0; i < A.rows(); ++i)
    for (Eigen::Index j = 0; j < A.cols(); ++j) A(i, j) = u(rng);
  Eigen::VectorXd x(6);
  x << 1.5, 0, 3, 0.25, 0, 7;
  const Eigen::VectorXd got = nnls(A, A * x);
  for (Eigen::Index j = 0; j < x.size(); ++j) EXPECT_NEAR(got(j), x(j), 1e-9) << j;
}

TEST(Nnls, ClampsWhereLeastSquaresGoesNegativeAndMeetsKuhnTucker) {
  // Unconstrained least squares wants x1 < 0 here.
  Eigen::MatrixXd A(4, 2);
  A << 1, 1, 1, 2, 1, 3, 1, 4;
  Eigen::VectorXd b(4);
  b << 4, 3, 2, 1;
  const Eigen::VectorXd ls = A.colPivHouseholderQr().solve(b);
  ASSERT_LT(ls(1), 0);
  const Eigen::VectorXd x = nnls(A, b);
  EXPECT_GE(x.minCoeff(), 0);
  EXPECT_NEAR(x(1), 0, 1e-12);
  EXPECT_NEAR(x(0), 2.5, 1e-9);  // the mean of b, the best fit with x1 = 0
  const Eigen::VectorXd w = A.transpose() * (b - A * x);
  EXPECT_NEAR(w(0), 0, 1e-9);  // free variable: zero gradient
  EXPECT_LE(w(1), 1e-9);       // clamped variable: the gradient pushes it below zero
  EXPECT_THROW(nnls(A, Eigen::VectorXd::Zero(3)), std::invalid_argument);
}

Point native_point(int payload, const std::string& dest, const std::string& align,
                   const std::string& copy) {
  Point p;
  p.source = "native";
  p.keys = {{"payload", std::to_string(payload)}, {"dest", dest}, {"align", align}, {"copy", copy}};
  return p;
}

std::vector<Point> native_grid() {
  std::vector<Point> pts;
  for (int payload : {18, 64, 128, 256, 512, 1024, 1400}) {
    for (const char* align : {"none", "copy-down"}) {
      pts.push_back(native_point(payload, "loopback", align, "m_copy"));
      for (const char* copy : {"m_copy", "m_dup"})
        pts.push_back(native_point(payload, "broadcast", align, copy));
      pts.push_back(native_point(payload, "wire", align, "m_copy"));
      pts.push_back(native_point(payload, "self", align, "m_copy"));
    }
  }
  return pts;
}

// The shipped FreeBSD 6 / Athlon costs, read as ns, by cost key.
std::vector<double> truth() {
  const auto x =
      config::load_experiment(fs::path(SIMLOOP_SOURCE_DIR) / "experiments/seed-athlon.yaml");
  std::vector<double> v;
  for (const auto& k : native_params()) v.push_back(config::get_value(x, k).get<double>());
  return v;
}

// Points measured by the model itself: ns per packet, and (with `split`)
// each function's self time as the instrumented run would show it, twice
// as slow plus 10 ns per call.
void price(std::vector<Point>& pts, std::vector<Features>& feats, bool split) {
  const auto t = truth();
  for (auto& p : pts) {
    feats.push_back(native_features(p, 150));
    const Features& f = feats.back();
    Repeat r;
    r.ns = predict_ns(f, t);
    if (split) {
      r.overhead_self_ns = 10;
      for (const auto& [fn, row] : f.split) {
        double ns = 0;
        for (size_t j = 0; j < row.size(); ++j) ns += row[j] * t[j];
        r.split[fn] = 2 * ns + 10 * f.calls.at(fn);
      }
    }
    p.repeats = {r};
    p.summarize(Stat::median);
  }
}

TEST(Calibrate, TotalsAloneLeaveTheReceiveSideUndeterminedAndSaySo) {
  auto pts = native_grid();
  std::vector<Features> feats;
  price(pts, feats, false);
  // Trained on loopback and broadcast only: every training packet runs the
  // receive side, so its costs are only known in sums with the send side's.
  FitOptions opt;
  opt.split = parse_split({"dest=loopback,broadcast", "align=none", "copy=m_copy"});
  const Fit fit = calibrate(pts, opt);
  EXPECT_LT(fit.rms_rel_residual(), 1e-6);
  EXPECT_LT(fit.rank, static_cast<int>(fit.names.size()));
  EXPECT_FALSE(fit.undetermined.empty());
  for (size_t i = 0; i < pts.size(); ++i) {
    const bool wire = pts[i].key("dest") == "wire";
    const bool trained = opt.split.trains(pts[i]);
    if (trained) {
      EXPECT_TRUE(fit.relies_on(feats[i]).empty()) << pts[i].label();
    }
    // A path without the receive side needs the split the data cannot give.
    if (wire) {
      EXPECT_FALSE(fit.relies_on(feats[i]).empty()) << pts[i].label();
    }
  }
}

TEST(Calibrate, PerFunctionTimesDetermineEveryExercisedCost) {
  auto pts = native_grid();
  std::vector<Features> feats;
  price(pts, feats, true);
  // Every path trains, at three payloads: the per-function times tell the
  // functions apart, the totals fix the instrumented run's slowdown and
  // the cost of its clock reads.
  FitOptions opt;
  opt.split = parse_split({"payload=18,256,1400", "align=none", "copy=m_copy"});
  const Fit fit = calibrate(pts, opt);
  EXPECT_NEAR(fit.slowdown, 2.0, 1e-3);
  const auto t = truth();
  for (size_t j = 0; j < fit.names.size(); ++j) {
    if (fit.names[j].starts_with("stack.functions.")) {
      EXPECT_NEAR(fit.values[j], t[j], 1e-3 * std::max(1.0, t[j])) << fit.names[j];
    }
  }
  // Held-out payloads of the trained paths rely on nothing free and are
  // priced as the truth prices them.
  for (size_t i = 0; i < pts.size(); ++i) {
    if (pts[i].key("align") != "none" || pts[i].key("copy") != "m_copy") continue;
    EXPECT_TRUE(fit.relies_on(feats[i]).empty()) << pts[i].label();
    EXPECT_NEAR(predict_ns(feats[i], fit.values) / pts[i].ns_value, 1.0, 1e-3) << pts[i].label();
  }
  // Never exercised on these paths: the native harness makes no system call.
  EXPECT_NE(
      std::find(fit.undetermined.begin(), fit.undetermined.end(), "machine.syscall.entry_cycles"),
      fit.undetermined.end());
  ASSERT_TRUE(fit.tied_to("machine.syscall.entry_cycles"));
  EXPECT_TRUE(fit.tied_to("machine.syscall.entry_cycles")->empty());
  // Without the wire among the training paths, its points need costs that
  // only the clock reads' own cost could tell apart: they are flagged.
  FitOptions narrow = opt;
  narrow.split = parse_split({"dest=loopback,broadcast", "align=none", "copy=m_copy"});
  const Fit nf = calibrate(pts, narrow);
  for (size_t i = 0; i < pts.size(); ++i)
    if (pts[i].key("dest") == "wire") {
      EXPECT_FALSE(nf.relies_on(feats[i]).empty()) << pts[i].label();
    }
}

// choose_split predicts each training point from fits that never saw its
// path or its payload: per-function times that tell the truth determine
// what totals leave free, and are chosen; times that tell nothing (drawn
// at random) mislead every fold, and totals are chosen.
TEST(Calibrate, TheObservationsChosenAreThoseThatPredictTheTrainingPointsLeftOut) {
  auto pts = native_grid();
  std::vector<Features> feats;
  price(pts, feats, true);
  FitOptions opt;
  opt.split = parse_split({"payload=18,256,1400", "align=none", "copy=m_copy"});
  const SplitChoice honest = choose_split(pts, opt);
  EXPECT_TRUE(honest.split);
  EXPECT_LT(honest.split_error, 1e-3);
  EXPECT_GT(honest.totals_error, honest.split_error);
  // Four paths and three payloads, each point predicted once for each.
  EXPECT_EQ(honest.folds, 7u);
  EXPECT_EQ(honest.predictions, 24u);

  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> noise(0, 100);
  for (auto& p : pts) {
    for (auto& [fn, ns] : p.repeats.front().split) ns = noise(rng);
    p.summarize(Stat::median);
  }
  const SplitChoice garbled = choose_split(pts, opt);
  EXPECT_FALSE(garbled.split);
  EXPECT_GT(garbled.split_error, garbled.totals_error);
  EXPECT_NEAR(garbled.totals_error, honest.totals_error, 1e-9) << "totals are the same data";
  // Without per-function times there is nothing to choose.
  auto totals = native_grid();
  std::vector<Features> tf;
  price(totals, tf, false);
  EXPECT_THROW(choose_split(totals, opt), InputError);
}

TEST(Calibrate, ASendOnlyPathTellsTheSendSideFromTheReceiveSide) {
  // The wire held out: every training path runs the receive side, so
  // the wire's costs are known only in sums with it, even with each
  // function's time (the clock reads' own cost is fitted too). Measured
  // send-only as well (the netisr and the receiver never run), loopback
  // and self tell the two sides apart, and the wire is priced as the
  // truth prices it.
  auto pts = native_grid();
  for (int payload : {18, 128, 512, 1400})
    for (const char* dest : {"loopback", "self"}) {
      pts.push_back(native_point(payload, dest, "none", "m_copy"));
      pts.back().keys["service"] = "send-only";
    }
  std::vector<Features> feats;
  price(pts, feats, true);
  FitOptions opt;
  opt.split = parse_split({"dest=loopback,broadcast,self", "align=none", "copy=m_copy"});
  const Fit fit = calibrate(pts, opt);
  FitOptions without = opt;
  without.split =
      parse_split({"dest=loopback,broadcast,self", "align=none", "copy=m_copy", "service=full"});
  const Fit blind = calibrate(pts, without);
  EXPECT_LT(fit.rms_rel_residual(), 1e-6);
  EXPECT_NEAR(fit.slowdown, 2.0, 1e-3);
  int wire = 0;
  for (size_t i = 0; i < pts.size(); ++i) {
    if (pts[i].key("dest") != "wire" || pts[i].key("align") != "none") continue;
    ++wire;
    EXPECT_TRUE(fit.relies_on(feats[i]).empty())
        << pts[i].label() << ": " << fmt::format("{}", fmt::join(fit.relies_on(feats[i]), " "));
    EXPECT_NEAR(predict_ns(feats[i], fit.values) / pts[i].ns_value, 1.0, 1e-3) << pts[i].label();
    EXPECT_FALSE(blind.relies_on(feats[i]).empty()) << pts[i].label();
  }
  EXPECT_EQ(wire, 7);
  // A sender's buffer off alignment: the payload is copied in misaligned.
  auto off = native_point(1400, "loopback", "none", "m_copy");
  const auto names = native_params();
  const auto col = static_cast<size_t>(
      std::find(names.begin(), names.end(), "machine.copy.unaligned_cycles_per_byte") -
      names.begin());
  EXPECT_EQ(native_features(off, 50).split.at("m_uiotombuf").at(col), 0.0);
  off.keys["buffer_misalign"] = "2";
  EXPECT_EQ(native_features(off, 50).split.at("m_uiotombuf").at(col), 1400.0);
  // Send-only loopback drops at the full netisr queue: no input processing.
  const Features lo = native_features(pts.back(), 300);
  EXPECT_EQ(lo.calls.count("ip_input") ? lo.calls.at("ip_input") : 0.0, 0.0);
  EXPECT_NEAR(lo.calls.at("sendto"), 1.0, 1e-9);
}

TEST(Calibrate, NativeProfileIsWrittenFromTheSchemaAndLoadsBack) {
  auto pts = native_grid();
  std::vector<Features> feats;
  price(pts, feats, true);
  FitOptions opt;
  opt.split = parse_split({"payload=18,512,1400"});
  const Fit fit = calibrate(pts, opt);
  const fs::path dir = fs::temp_directory_path() / "simloop_native_profile_test";
  fs::remove_all(dir);
  write_profile(fit, pts, dir, "n");
  const auto x = config::load_experiment(dir / "n.yaml");
  EXPECT_EQ(x.machine.clock_hz, 1e9);
  for (size_t j = 0; j < fit.names.size(); ++j) {
    const auto v = config::get_value(x, fit.names[j]);
    // A cost no training point exercises is written undetermined (`~`).
    const auto tied = fit.tied_to(fit.names[j]);
    EXPECT_EQ(v.is_null(), tied && tied->empty()) << fit.names[j];
    EXPECT_EQ(x.undetermined.count(fit.names[j]) != 0, v.is_null()) << fit.names[j];
    if (!v.is_null()) {
      EXPECT_NEAR(v.get<double>(), fit.values[j], 1e-5 * std::max(1.0, fit.values[j]))
          << fit.names[j];
    }
  }
  fs::remove_all(dir);
}

std::vector<Point> kernel_points(const std::string& dest, bool with_null) {
  std::vector<Point> pts;
  for (int payload : {1, 100, 400, 900, 1400, 20000, 60000}) {
    Point p;
    p.source = "kernel";
    p.keys = {{"payload", std::to_string(payload)}, {"dest", dest}};
    Repeat r;
    const double null_ns = 150 + payload % 7;
    if (with_null) r.null_ns = null_ns;
    const int calls = dest == "wire" ? 1 : 2;
    r.ns = (with_null ? calls * null_ns : 0) + 3200 + 0.25 * payload;
    p.repeats = {r};
    p.summarize(Stat::median);
    pts.push_back(p);
  }
  return pts;
}

TEST(Calibrate, KernelFitPredictsHeldOutSizesAndSaysWhatItCannotSplit) {
  auto pts = kernel_points("loopback", true);
  FitOptions opt;
  opt.source = "kernel";
  opt.split = parse_split({"payload=1,400,1400,60000"});
  const Fit fit = calibrate(pts, opt);
  EXPECT_EQ(fit.training_points, 4);
  for (const auto& p : pts)
    EXPECT_NEAR(predict_ns(kernel_features(p), fit.values), p.ns_value, 1e-6 * p.ns_value)
        << p.label();
  // Loopback runs pay for sending and receiving alike: only the sums are known.
  EXPECT_NEAR(fit.value("send_fixed_ns") + fit.value("recv_fixed_ns"), 3200, 1e-6);
  ASSERT_TRUE(fit.tied_to("send_fixed_ns"));
  EXPECT_EQ(*fit.tied_to("send_fixed_ns"), std::vector<std::string>{"recv_fixed_ns"});
  // A held-out loopback size relies on nothing free; a wire point does.
  EXPECT_TRUE(fit.relies_on(kernel_features(pts[1])).empty());
  auto wire = kernel_points("wire", true);
  EXPECT_FALSE(fit.relies_on(kernel_features(wire[1])).empty());
  // The constant predictor is the mean of the training points' kpps.
  double mean = 0;
  for (const auto& p : pts)
    if (opt.split.trains(p)) mean += p.kpps() / 4;
  EXPECT_NEAR(fit.constant_kpps, mean, 1e-9);
  // Round trip through JSON, as compare reads it.
  const Fit back = Fit::from_json(fit.to_json());
  EXPECT_EQ(back.split.specs(), fit.split.specs());
  EXPECT_NEAR(predict_ns(kernel_features(pts[2]), back.values),
              predict_ns(kernel_features(pts[2]), fit.values), 1e-9);
  EXPECT_FALSE(back.relies_on(kernel_features(wire[1])).empty());
}

TEST(Calibrate, KernelFitRefusesANullSyscallOnSomeTrainingPointsOnly) {
  auto pts = kernel_points("loopback", true);
  auto more = kernel_points("loopback", false);
  for (auto& p : more) p.source = "other";
  pts[0].null_syscall_ns.reset();
  FitOptions opt;
  opt.source = "kernel";
  opt.split = parse_split({"payload=1,400,1400"});
  EXPECT_THROW(calibrate(pts, opt), InputError);
}

TEST(Calibrate, KernelProfileFollowsTheMeasuredPath) {
  for (const std::string dest : {"loopback", "wire"}) {
    auto pts = kernel_points(dest, true);
    FitOptions opt;
    opt.source = "kernel";
    opt.split = parse_split({"payload=1,400,1400"});
    const Fit fit = calibrate(pts, opt);
    const fs::path dir = fs::temp_directory_path() / "simloop_kernel_profile_test";
    fs::remove_all(dir);
    write_profile(fit, pts, dir, "k");
    const auto x = config::load_experiment(dir / "k.yaml");
    // Nulls 151, 150, 151 on the training points: the median, half on entry.
    EXPECT_NEAR(x.machine.syscall_entry_cycles, 75.5, 1e-9) << dest;
    EXPECT_EQ(std::string(config::dest_name(x.workload.dest)), dest);
    // Loopback copies each payload byte twice (in, and out to the receiver).
    EXPECT_NEAR(x.machine.copy_cycles_per_byte, dest == "wire" ? 0.25 : 0.125, 1e-6) << dest;
    std::ifstream f(dir / "k.yaml");
    std::stringstream text;
    text << f.rdbuf();
    EXPECT_EQ(text.str().find("loopback") != std::string::npos, dest == "loopback") << text.str();
    fs::remove_all(dir);
  }
}

fs::path write_csv(const std::string& name, const std::string& text) {
  const fs::path p = fs::temp_directory_path() / name;
  std::ofstream(p) << text;
  return p;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// Another machine's table read as native rows (the default --source): the
// error says which model its points are for.
TEST(Calibrate, NoTrainingPointOfTheModelSaysWhichSourceTheRowsNeed) {
  const auto pts = kernel_points("loopback", false);
  FitOptions opt;
  opt.split = parse_split({"payload=1,400,1400"});
  const std::string e = error_of([&] { calibrate(pts, opt); });
  EXPECT_NE(e.find("no native points in the training set"), std::string::npos) << e;
  EXPECT_NE(e.find("7 point(s) are for the kernel model: --source kernel"), std::string::npos) << e;
  opt.source = "kernel";
  EXPECT_EQ(calibrate(pts, opt).training_points, 3);
}

TEST(Calibrate, ReadsPointsWithOneStatisticAndSplitsThem) {
  const fs::path csv = write_csv("simloop_measure_test_points.csv",
                                 "source,repeat,payload,dest,kpps,ns_per_packet,null_syscall_ns,"
                                 "fault\n"
                                 "kernel,0,18,loopback,1,100,30,\n"
                                 "kernel,1,18,loopback,1,300,10,\n"
                                 "kernel,2,18,loopback,1,200,20,\n"
                                 "kernel,3,18,loopback,1,50,5,\"stopped, badly\"\n"
                                 "kernel,0,64,loopback,1,400,7,\n");
  const auto pts = read_points({csv}, Stat::median);
  ASSERT_EQ(pts.size(), 2u);
  EXPECT_EQ(pts[0].repeats.size(), 3u);  // the faulted row is left out
  EXPECT_DOUBLE_EQ(pts[0].ns_value, 200);
  EXPECT_DOUBLE_EQ(*pts[0].null_syscall_ns, 20);
  EXPECT_DOUBLE_EQ(pts[0].kpps(), 5000);
  EXPECT_EQ(pts[1].payload(), 64);
  const auto split = parse_split({"payload=18,1400"});
  EXPECT_TRUE(split.trains(pts[0]));
  EXPECT_FALSE(split.trains(pts[1]));
  EXPECT_THROW(parse_split({"payload"}), InputError);
  // The minimum over repeats, for sendto and the null syscall alike.
  const auto mins = read_points({csv}, Stat::min);
  EXPECT_DOUBLE_EQ(mins[0].ns_value, 100);
  EXPECT_DOUBLE_EQ(*mins[0].null_syscall_ns, 10);
  fs::remove(csv);
}

TEST(Calibrate, CpuTimeIsReadInsteadOfWallTimeWhenAsked) {
  const fs::path csv = write_csv("simloop_measure_test_cpu.csv",
                                 "source,repeat,payload,dest,ns_per_packet,null_syscall_ns,"
                                 "cpu_s,cpu_ns_per_packet,null_syscall_cpu_ns\n"
                                 "kernel,0,18,loopback,900,300,0.1,400,100\n"
                                 "kernel,1,18,loopback,500,200,0.1,410,110\n");
  EXPECT_DOUBLE_EQ(read_points({csv}, Stat::min)[0].ns_value, 500);  // wall by default
  ColumnMap cpu;
  cpu.cpu_time = true;
  const auto pts = read_points({csv}, Stat::min, cpu);
  EXPECT_DOUBLE_EQ(pts[0].ns_value, 400);
  EXPECT_DOUBLE_EQ(*pts[0].null_syscall_ns, 100);
  // Without the CPU-time columns there is nothing to read: said, not guessed.
  const fs::path wall_only = write_csv("simloop_measure_test_wall.csv",
                                       "source,payload,dest,ns_per_packet\nkernel,18,loopback,9\n");
  try {
    read_points({wall_only}, Stat::min, cpu);
    FAIL() << "read wall time as CPU time";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("needs column 'cpu_ns_per_packet'"), std::string::npos)
        << e.what();
  }
  const fs::path mixed =
      write_csv("simloop_measure_test_mixed.csv",
                "source,payload,dest,null_syscall_ns,cpu_ns_per_packet\nkernel,18,loopback,9,8\n");
  EXPECT_THROW(read_points({mixed}, Stat::min, cpu), InputError);
  fs::remove(csv);
  fs::remove(wall_only);
  fs::remove(mixed);
}

TEST(Calibrate, OwnDataColumnsAreMappedAndNothingIsFilledIn) {
  const fs::path csv = write_csv(
      "simloop_own_data.csv", "Size,Throughput,Path,Who\n18,350,wire,athlon\n64,300,wire,athlon\n");
  auto cols = [](std::vector<std::string> m, std::vector<std::string> i = {}) {
    return parse_columns(m, i);
  };
  const auto pts = read_points(
      {csv}, Stat::median, cols({"kpps=Throughput", "payload=Size", "dest=Path", "source=Who"}));
  ASSERT_EQ(pts.size(), 2u);
  EXPECT_EQ(pts[0].source, "athlon");
  EXPECT_NEAR(pts[0].ns_value, 1e6 / 350, 1e-9);
  EXPECT_EQ(pts[1].key("dest"), "wire");
  EXPECT_FALSE(pts[0].null_syscall_ns.has_value());
  // An unknown column names itself and the file.
  std::string e = error_of([&] {
    read_points({csv}, Stat::median, cols({"kpps=Throughput", "payload=Size", "dest=Path"}));
  });
  EXPECT_NE(e.find("'Who'"), std::string::npos) << e;
  EXPECT_NE(e.find(csv.string()), std::string::npos) << e;
  // ... unless skipped.
  EXPECT_EQ(read_points({csv}, Stat::median,
                        cols({"kpps=Throughput", "payload=Size", "dest=Path"}, {"Who"}))
                .size(),
            2u);
  // A mapped name the file lacks, a missing rate, a missing dest.
  e = error_of([&] { read_points({csv}, Stat::median, cols({"kpps=Rate"})); });
  EXPECT_NE(e.find("'Rate'"), std::string::npos) << e;
  e = error_of([&] {
    read_points({csv}, Stat::median,
                cols({"payload=Size", "dest=Path", "source=Who"}, {"Throughput"}));
  });
  EXPECT_NE(e.find("rate"), std::string::npos) << e;
  e = error_of([&] {
    read_points({csv}, Stat::median,
                cols({"kpps=Throughput", "payload=Size", "source=Who"}, {"Path"}));
  });
  EXPECT_NE(e.find("'dest'"), std::string::npos) << e;
  EXPECT_THROW(parse_columns({"bogus=Size"}), InputError);
  // An empty null syscall is an error with its line, not a zero.
  const fs::path holes =
      write_csv("simloop_own_holes.csv", "payload,kpps,dest,null_syscall_ns\n18,350,wire,\n");
  e = error_of([&] { read_points({holes}, Stat::median); });
  EXPECT_NE(e.find(":2:"), std::string::npos) << e;
  EXPECT_NE(e.find("null_syscall_ns"), std::string::npos) << e;
  fs::remove(csv);
  fs::remove(holes);
}

// Every unknown column at once, in one error: not one per attempt.
TEST(Calibrate, EveryUnknownColumnIsNamedInOneError) {
  const fs::path csv = write_csv("simloop_unknown_columns.csv",
                                 "Size,Messages,Throughput,Path,Lost,Who,Load\n"
                                 "18,100,350,wire,0.5,athlon,1.2\n");
  const auto cols = parse_columns({"kpps=Throughput", "payload=Size", "dest=Path"}, {"Who"});
  const std::string e = error_of([&] { read_points({csv}, Stat::median, cols); });
  EXPECT_NE(e.find(csv.string() + ":1: "), std::string::npos) << e;
  EXPECT_NE(e.find("3 unknown columns"), std::string::npos) << e;
  for (const char* c : {"Messages", "Lost", "Load"}) {
    const std::string quoted = fmt::format("'{}'", c);
    const size_t at = e.find(quoted);
    EXPECT_NE(at, std::string::npos) << c << ": " << e;
    // named in the list and once in the --ignore-column advice, no more
    EXPECT_NE(e.find("--ignore-column " + quoted), std::string::npos) << e;
    EXPECT_EQ(e.find(quoted, e.find(quoted, at + 1) + 1), std::string::npos) << e;
  }
  // The skipped and the mapped ones are not named.
  for (const char* c : {"'Who'", "'Size'", "'Throughput'", "'Path'"})
    EXPECT_EQ(e.find(c), std::string::npos) << c << ": " << e;
  // Skipping them all is enough.
  EXPECT_EQ(read_points({csv}, Stat::median,
                        parse_columns({"kpps=Throughput", "payload=Size", "dest=Path"},
                                      {"Who", "Messages", "Lost", "Load"}))
                .size(),
            1u);
  fs::remove(csv);
}

TEST(Calibrate, TheServiceColumnIsReadAndChecked) {
  const fs::path csv = write_csv("simloop_service.csv",
                                 "source,payload,dest,align,copy,service,ns_per_packet\n"
                                 "native,18,loopback,none,m_copy,full,140\n"
                                 "native,18,loopback,none,m_copy,send-only,70\n");
  const auto pts = read_points({csv}, Stat::min);
  ASSERT_EQ(pts.size(), 2u);
  EXPECT_EQ(pts[0].key("service", "full"), "full");
  EXPECT_EQ(pts[1].key("service"), "send-only");
  EXPECT_TRUE(parse_split({"service=full"}).trains(pts[0]));
  EXPECT_TRUE(parse_split({"buffer_misalign=0"}).trains(pts[0]));
  EXPECT_FALSE(parse_split({"service=full"}).trains(pts[1]));
  const fs::path bad = write_csv("simloop_service_bad.csv",
                                 "source,payload,dest,align,copy,service,ns_per_packet\n"
                                 "native,18,loopback,none,m_copy,half,140\n");
  try {
    read_points({bad}, Stat::min);
    ADD_FAILURE() << "an unknown service was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("simloop_service_bad.csv:2"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("expected full or send-only"), std::string::npos)
        << e.what();
  }
  fs::remove(csv);
  fs::remove(bad);
}

TEST(Schema, CostKeysAreTheTimingModelsPrices) {
  const auto keys = config::cost_keys();
  // The native fit's parameters: every cost key but the copy to a user's
  // extra, which the native harness's stack never pays (it copies out as it
  // copies in), and the L1d's, which its fit does not model, in the
  // schema's order, as saved fits list them.
  auto native = keys;
  std::erase(native, std::string("machine.copy.to_user_extra_cycles_per_byte"));
  std::erase(native, std::string("machine.copy.l1d_miss_extra_cycles_per_byte"));
  EXPECT_EQ(native, native_params());
  EXPECT_EQ(native.size() + 2, keys.size());
  for (size_t f = 0; f < net::bsd::fn_table().size(); ++f)
    EXPECT_NE(
        std::find(keys.begin(), keys.end(),
                  fmt::format("stack.functions.{}", net::bsd::fn_table().name(net::fn_at(f)))),
        keys.end());
  for (const char* k : {"machine.copy.cycles_per_byte", "stack.alloc.mbuf_cycles",
                        "machine.unaligned_access_cycles", "machine.user_loop_cycles"})
    EXPECT_NE(std::find(keys.begin(), keys.end(), k), keys.end()) << k;
  for (const char* k : {"machine.clock_hz", "workload.payload", "interrupts.enabled"})
    EXPECT_EQ(std::find(keys.begin(), keys.end(), k), keys.end()) << k;
  config::Experiment x;
  config::set_number(x, "stack.functions.ip_output", 42);
  EXPECT_EQ(x.stack.fn_cycles[static_cast<size_t>(net::bsd::Fn::ip_output)], 42);
  EXPECT_THROW(config::set_number(x, "stack.functions.ip_output", -1), config::ConfigError);
  EXPECT_THROW(config::set_number(x, "no.such.key", 1), config::ConfigError);
}

TEST(Compare, HeldOutPointsPastTheTrainingRangeAreFlagged) {
  auto point = [](const char* set, const char* payload, const char* mtu) {
    Comparison c;
    c.set = set;
    c.keys = {{"payload", payload}, {"dest", "wire"}, {"ether_mtu", mtu}};
    return c;
  };
  std::vector<Comparison> cs = {point("train", "18", "1500"), point("train", "1400", "1500"),
                                point("validation", "600", "1500"),
                                point("validation", "8000", "9000"),
                                point("validation", "0", "1500")};
  flag_extrapolation(cs, {"payload", "ether_mtu", "max_linkhdr"});
  EXPECT_EQ(cs[0].caveat, "");
  EXPECT_EQ(cs[2].caveat, "");  // inside the range
  EXPECT_EQ(cs[3].caveat,
            "extrapolated: payload 8000 above the trained 1400; extrapolated: ether_mtu 9000 "
            "above the trained 1500");
  EXPECT_EQ(cs[4].caveat, "extrapolated: payload 0 below the trained 18");
  // The caveat is in the comparison's row.
  const report::Row r = comparison_row(cs[4]);
  ASSERT_NE(r.find("caveat"), nullptr);
  EXPECT_EQ(std::get<std::string>(*r.find("caveat")), cs[4].caveat);
}

TEST(Compare, ErrorsOnAHandMadeCase) {
  std::vector<Comparison> cs = {
      {"a", {{"payload", "18"}}, "validation", 100, 110, 120, 0, 0, "", "", ""},  // +10 %, constant
                                                                                  // +20
                                                                                  // %
      {"b", {{"payload", "64"}}, "validation", 200, 170, 120, 0, 0, "", "", ""},  // -15 %, constant
                                                                                  // -40
                                                                                  // %
      {"c", {{"payload", "99"}}, "validation", 50, 51, 120, 0, 0, "", "", ""},    // +2 %, constant
                                                                                  // +140 %
      {"t", {{"payload", "1"}}, "train", 100, 200, 120, 0, 0, "", "", ""},        // +100 %, not a
                                                                            // validation point
  };
  EXPECT_DOUBLE_EQ(cs[1].error_pct(), -15);
  EXPECT_DOUBLE_EQ(cs[1].abs_error_pct(), 15);
  const auto v = summarize(cs, "validation");
  EXPECT_EQ(v.points, 3);
  EXPECT_NEAR(v.median_abs_pct, 10, 1e-12);
  EXPECT_NEAR(v.worst_abs_pct, 15, 1e-12);
  EXPECT_NEAR(v.worst_signed_pct, -15, 1e-12);
  EXPECT_EQ(v.worst_point, "b");
  EXPECT_NEAR(v.constant_median_abs_pct, 40, 1e-12);
  EXPECT_NEAR(v.constant_worst_abs_pct, 140, 1e-12);
  EXPECT_TRUE(v.beats_constant());
  const auto only_b =
      summarize(cs, "validation", [](const Comparison& c) { return c.point == "b"; });
  EXPECT_EQ(only_b.points, 1);
  const auto all = summarize(cs, "");
  EXPECT_EQ(all.points, 4);
  EXPECT_NEAR(all.median_abs_pct, 12.5, 1e-12);  // even count: mean of the middle two
  EXPECT_EQ(all.worst_point, "t");
  cs[0].source = "iperf3 on lab-box";
  const auto row = comparison_row(cs[0]);
  ASSERT_NE(row.find("source"), nullptr);
  EXPECT_EQ(std::get<std::string>(*row.find("source")), "iperf3 on lab-box")
      << "the measured point's own source, not the model's kind";
  EXPECT_EQ(sources_of(cs), "iperf3 on lab-box");
  ASSERT_NE(row.find("payload"), nullptr);
  EXPECT_EQ(std::get<int64_t>(*row.find("payload")), 18);
  EXPECT_DOUBLE_EQ(std::get<double>(*row.find("measured_ns_per_packet")), 1e4);
  EXPECT_NEAR(std::get<double>(*row.find("error_pct")), 10, 1e-12);
}

// Harness builds are found beside simloop in a build tree, and in
// PREFIX/libexec/simloop for a simloop installed in PREFIX/bin; base first.
// nm and objdump get "--" before the file: a binary named like one of their
// options (--plugin=... would make nm load a library) is read as a file.
TEST(Harness, AFileNamedLikeAnOptionIsReadAsAFile) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("simloop-nm-{}", ::getpid());
  fs::create_directories(dir);
  // --defined-only: without "--", nm would take it as its option, list
  // a.out (missing) and fail; as a file it is this test program.
  const fs::path binary = dir / "--defined-only";
  fs::copy_file("/proc/self/exe", binary, fs::copy_options::overwrite_existing);
  const fs::path was = fs::current_path();
  fs::current_path(dir);
  std::string out;
  EXPECT_NO_THROW(out = nm_output("--defined-only"));
  fs::current_path(was);
  fs::remove_all(dir);
  EXPECT_NE(out.find(" main"), std::string::npos) << out.substr(0, 400);
}

TEST(Harness, BuildsAreFoundBesideSimloopOrInItsInstalledLibexec) {
  const fs::path d =
      fs::temp_directory_path() / ("simloop-harness-dirs-" + std::to_string(::getpid()));
  fs::remove_all(d);
  auto touch = [](const fs::path& p) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << "x";
  };
  touch(d / "build" / "simloop");
  touch(d / "build" / "simloop-harness-pad");
  touch(d / "build" / "simloop-harness");
  touch(d / "usr" / "bin" / "simloop");
  touch(d / "usr" / "libexec" / "simloop" / "simloop-harness-moved");
  touch(d / "usr" / "libexec" / "simloop" / "simloop-harness");
  EXPECT_EQ(find_harnesses((d / "build" / "simloop").string()),
            (std::vector<std::string>{(d / "build" / "simloop-harness").string(),
                                      (d / "build" / "simloop-harness-pad").string()}));
  EXPECT_EQ(find_harnesses((d / "usr" / "bin" / "simloop").string()),
            (std::vector<std::string>{
                (d / "usr" / "libexec" / "simloop" / "simloop-harness").string(),
                (d / "usr" / "libexec" / "simloop" / "simloop-harness-moved").string()}));
  EXPECT_EQ(harness_dirs((d / "usr" / "bin" / "simloop").string()).back(),
            (d / "usr" / "libexec" / "simloop").string());
  fs::remove_all(d / "usr" / "libexec");
  EXPECT_TRUE(find_harnesses((d / "usr" / "bin" / "simloop").string()).empty());
  fs::remove_all(d);
}

TEST(Kernel, AShortLoopbackRunReportsAPositiveRate) {
  KernelOptions opt;
  opt.payloads = {18, 600};
  opt.packets = 300;
  opt.warmup = 20;
  opt.null_syscalls = 1000;
  const auto rs = run_kernel(opt);
  ASSERT_EQ(rs.size(), 2u);
  for (const auto& r : rs) {
    EXPECT_TRUE(r.fault.empty()) << r.fault;
    EXPECT_EQ(r.packets, 300);
    EXPECT_GT(r.kpps(), 0);
    EXPECT_GT(r.null_syscall_ns, 0);
    // Nearly every datagram was read back by the receiver in the timed loop.
    EXPECT_GE(r.delivered, r.packets - 2);
    EXPECT_EQ(r.delivered_bytes, r.delivered * r.payload);
  }
  const auto row = kernel_row(rs[1], machine_info());
  EXPECT_EQ(std::get<std::string>(*row.find("source")), "kernel");
  EXPECT_EQ(std::get<int64_t>(*row.find("payload")), 600);
  EXPECT_FALSE(std::get<std::string>(*row.find("cpu_model")).empty());
}

// The stage timer waits randomly after each clock read only where the
// counter has steps. A counter a hypervisor scales steps 25 and 26 ticks
// in turn (10 ns at 2.6 GHz): it must be found stepped, though the gcd of
// its distances is 1; a counter that ticks every cycle must not.
TEST(StageTimer, ACounterWithUnevenStepsIsFoundStepped) {
  uint64_t cycles = 0;  // a pretend CPU: a read takes 20 cycles, a turn 1
  const auto wait = [&](uint32_t turns) { cycles += turns; };
  const auto fine = [&] { return cycles += 20; };
  // Steps of 25 and 26 in turn: the counter reads 51 ticks per 2 steps
  // of 51 cycles, so it advances at the cycles' rate, 25 or 26 at a time.
  const auto stepped = [&] {
    cycles += 20;
    const uint64_t pairs = cycles / 51, rest = cycles % 51;
    return pairs * 51 + (rest >= 26 ? 26 : 0);
  };
  EXPECT_EQ(counter_step(fine, wait), 1U);
  // A fine counter faster than the waits' turns skips values: still fine.
  const auto faster = [&] { return (cycles += 20) * 13 / 10; };
  EXPECT_EQ(counter_step(faster, wait), 1U);
  // Steps of 21 ticks, as on another host.
  const auto even = [&] { return (cycles += 20) / 21 * 21; };
  EXPECT_EQ(counter_step(even, wait), 21U);
  const uint64_t step = counter_step(stepped, wait);
  EXPECT_GE(step, 25U) << "a counter with steps of 25 and 26 ticks";
  EXPECT_LE(step, 26U);
}

}  // namespace
}  // namespace simloop::measure
