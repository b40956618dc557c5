// Calibration, comparison and the kernel measurement: NNLS against known
// answers, fits that recover the costs the timing model itself priced,
// error arithmetic on a hand-made case, and a short real kernel run.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>

#include "config/experiment.h"
#include "measure/calibrate.h"
#include "measure/compare.h"
#include "measure/kernel.h"

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
    }
  }
  return pts;
}

TEST(Calibrate, NativeFitRecoversThePricesTheModelGenerated) {
  // Ground truth: the shipped FreeBSD 6 / Athlon costs, read as ns.
  const auto x =
      config::load_experiment(fs::path(SIMLOOP_SOURCE_DIR) / "experiments/seed-athlon.yaml");
  auto pts = native_grid();
  std::vector<std::vector<double>> feats;
  for (auto& p : pts) {
    feats.push_back(native_features(p, 300));
    p.ns_value = native_price(feats.back(), x.machine, x.stack);
    p.ns = {p.ns_value};
    ASSERT_GT(p.ns_value, 1000) << p.label();
  }
  // Train on three payloads of every path, align none and m_copy only.
  const auto split = parse_split({"payload=18,256,1400", "align=none", "copy=m_copy"});
  const Fit fit = calibrate(pts, "native", split);
  EXPECT_EQ(fit.training_points, 9);
  EXPECT_EQ(fit.held_out_points, static_cast<int>(pts.size()) - 9);
  for (double v : fit.values) EXPECT_GE(v, 0);
  EXPECT_LT(fit.rms_rel_residual(), 1e-6);
  models::MachineCosts m;
  models::StackCosts s;
  fitted_costs(fit, m, s);
  // Costs that every path charges alike (one call of each send-side
  // function per packet) cannot be told apart, only their sum; the fit is
  // judged by the prices it gives, which is what predictions use.
  // Every training point is priced as the truth prices it, and so is each
  // held-out payload of the trained paths.
  for (size_t i = 0; i < pts.size(); ++i) {
    const bool in_span = pts[i].keys["align"] == "none" && pts[i].keys["copy"] == "m_copy";
    if (!in_span) continue;
    EXPECT_NEAR(native_price(feats[i], m, s) / pts[i].ns_value, 1.0, 0.01) << pts[i].label();
  }
}

TEST(Calibrate, KernelFitRecoversFixedAndPerByteCosts) {
  std::vector<Point> pts;
  for (int payload : {1, 100, 400, 900, 1400}) {
    Point p;
    p.source = "kernel";
    p.keys = {{"payload", std::to_string(payload)}, {"dest", "loopback"}};
    p.null_syscall_ns = 150 + payload % 7;
    p.ns_value = 2 * p.null_syscall_ns + 3200 + 0.25 * payload;
    pts.push_back(p);
  }
  const Fit fit = calibrate(pts, "kernel", parse_split({"payload=1,400,1400"}));
  EXPECT_EQ(fit.training_points, 3);
  EXPECT_NEAR(fit.values[0], 3200, 1e-6);
  EXPECT_NEAR(fit.values[1], 0.25, 1e-9);
  EXPECT_NEAR(kernel_predict_ns(fit, pts[1]), pts[1].ns_value, 1e-6);
  // A per-byte cost that the data says is negative is held at zero.
  for (auto& p : pts) p.ns_value = 2 * p.null_syscall_ns + 3200 - 0.1 * p.payload();
  const Fit clamped = calibrate(pts, "kernel", parse_split({"payload=1,400,1400"}));
  EXPECT_EQ(clamped.values[1], 0);
  EXPECT_GT(clamped.values[0], 3000);
  // Round trip through JSON, as compare reads it.
  const Fit back = Fit::from_json(fit.to_json());
  EXPECT_EQ(back.split.specs(), fit.split.specs());
  EXPECT_NEAR(kernel_predict_ns(back, pts[2]), kernel_predict_ns(fit, pts[2]), 1e-9);
}

TEST(Calibrate, KernelProfileLoadsAsAnExperimentWithTheFittedCosts) {
  std::vector<Point> pts;
  for (int payload : {1, 100, 400, 900, 1400}) {
    Point p;
    p.source = "kernel";
    p.keys = {{"payload", std::to_string(payload)}, {"dest", "loopback"}};
    p.null_syscall_ns = 150 + payload % 7;  // 151, 152, 151, 153, 150 on the training points
    p.ns_value = 2 * p.null_syscall_ns + 3200 + 0.25 * payload;
    pts.push_back(p);
  }
  const Fit fit = calibrate(pts, "kernel", parse_split({"payload=1,400,1400"}));
  const fs::path dir = fs::temp_directory_path() / "simloop_kernel_profile_test";
  fs::remove_all(dir);
  write_kernel_profile(fit, pts, dir, "k");
  const auto x = config::load_experiment(dir / "k.yaml");
  // Training nulls 151, 151, 150: median 151, half on entry, half on exit.
  EXPECT_NEAR(x.machine.syscall_entry_cycles, 75.5, 1e-9);
  EXPECT_NEAR(x.machine.syscall_exit_cycles, 75.5, 1e-9);
  // The stack copies each payload byte twice (into mbufs, out to the receiver).
  EXPECT_NEAR(x.machine.copy_cycles_per_byte, 0.125, 1e-9);
  EXPECT_NEAR(x.stack.fn_cycles[static_cast<size_t>(net::Fn::sendto)], 3200, 1e-6);
  EXPECT_EQ(x.stack.fn_cycles[static_cast<size_t>(net::Fn::ip_output)], 0);
  EXPECT_EQ(x.machine.clock_hz, 1e9);
  EXPECT_TRUE(x.workload.receive);
  fs::remove_all(dir);
}

TEST(Calibrate, ReadsPointsAsMediansAndSplitsThem) {
  const fs::path csv = fs::temp_directory_path() / "simloop_measure_test_points.csv";
  {
    std::ofstream f(csv);
    f << "source,repeat,payload,dest,kpps,ns_per_packet,fault\n"
      << "kernel,0,18,loopback,1,100,\n"
      << "kernel,1,18,loopback,1,300,\n"
      << "kernel,2,18,loopback,1,200,\n"
      << "kernel,3,18,loopback,1,50,\"stopped, badly\"\n"
      << "kernel,0,64,loopback,1,400,\n";
  }
  const auto pts = read_points({csv});
  fs::remove(csv);
  ASSERT_EQ(pts.size(), 2u);
  EXPECT_EQ(pts[0].ns.size(), 3u);  // the faulted row is left out
  EXPECT_DOUBLE_EQ(pts[0].ns_value, 200);
  EXPECT_DOUBLE_EQ(pts[0].kpps(), 5000);
  EXPECT_EQ(pts[1].payload(), 64);
  const auto split = parse_split({"payload=18,1400"});
  EXPECT_TRUE(split.trains(pts[0]));
  EXPECT_FALSE(split.trains(pts[1]));
  EXPECT_THROW(parse_split({"payload"}), std::invalid_argument);
  // The minimum over repeats, for a shared machine.
  {
    std::ofstream f(csv);
    f << "source,payload,ns_per_packet\nkernel,18,100\nkernel,18,300\nkernel,18,200\n";
  }
  EXPECT_DOUBLE_EQ(read_points({csv}, Stat::min)[0].ns_value, 100);
  fs::remove(csv);
}

TEST(Compare, ErrorsOnAHandMadeCase) {
  std::vector<Comparison> cs = {
      {"a", {{"payload", "18"}}, "validation", 100, 110},  // +10 %
      {"b", {{"payload", "64"}}, "validation", 200, 170},  // -15 %
      {"c", {{"payload", "99"}}, "validation", 50, 51},    // +2 %
      {"t", {{"payload", "1"}}, "train", 100, 200},        // +100 %, not a validation point
  };
  EXPECT_DOUBLE_EQ(cs[1].error_pct(), -15);
  EXPECT_DOUBLE_EQ(cs[1].abs_error_pct(), 15);
  const auto v = summarize(cs, "validation");
  EXPECT_EQ(v.points, 3);
  EXPECT_NEAR(v.median_abs_pct, 10, 1e-12);
  EXPECT_NEAR(v.worst_abs_pct, 15, 1e-12);
  EXPECT_NEAR(v.worst_signed_pct, -15, 1e-12);
  EXPECT_EQ(v.worst_point, "b");
  const auto all = summarize(cs, "");
  EXPECT_EQ(all.points, 4);
  EXPECT_NEAR(all.median_abs_pct, 12.5, 1e-12);  // even count: mean of the middle two
  EXPECT_EQ(all.worst_point, "t");
  const auto row = comparison_row("kernel", cs[0]);
  ASSERT_NE(row.find("payload"), nullptr);
  EXPECT_EQ(std::get<int64_t>(*row.find("payload")), 18);
  EXPECT_DOUBLE_EQ(std::get<double>(*row.find("measured_ns_per_packet")), 1e4);
  EXPECT_NEAR(std::get<double>(*row.find("error_pct")), 10, 1e-12);
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

}  // namespace
}  // namespace simloop::measure
