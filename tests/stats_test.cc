// Summary statistics: values checked against published tables and by hand.
#include "sim/report/stats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/report/table.h"

namespace simloop::report {
namespace {

TEST(Stats, StudentsTQuantilesMatchThePublishedTable) {
  // Two-sided 95 %: the usual table to three decimals.
  EXPECT_NEAR(t_quantile(0.95, 1), 12.706, 5e-4);
  EXPECT_NEAR(t_quantile(0.95, 2), 4.303, 5e-4);
  EXPECT_NEAR(t_quantile(0.95, 10), 2.228, 5e-4);
  EXPECT_NEAR(t_quantile(0.95, 30), 2.042, 5e-4);
  EXPECT_NEAR(t_quantile(0.95, 120), 1.980, 5e-4);
  // Towards the normal distribution's 1.960 as df grows, never below it.
  EXPECT_GT(t_quantile(0.95, 1e6), 1.9599);
  EXPECT_LT(t_quantile(0.95, 1e6), 1.9601);
  // Other levels: 99 % with df 5.
  EXPECT_NEAR(t_quantile(0.99, 5), 4.032, 5e-4);
}

TEST(Stats, MeanSdMedianByHand) {
  const std::vector<double> v = {2, 4, 4, 4, 5, 5, 7, 9};
  EXPECT_DOUBLE_EQ(mean(v), 5);
  EXPECT_NEAR(sd(v), 2.1380899352993950, 1e-12);  // sqrt(32 / 7)
  EXPECT_DOUBLE_EQ(median(v), 4.5);
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2);
  // Too few values: nothing to spread.
  EXPECT_EQ(mean({}), 0);
  EXPECT_EQ(median({}), 0);
  EXPECT_EQ(sd({7}), 0);
  EXPECT_EQ(mean_ci_half_width({7}), 0);
}

TEST(Stats, ConfidenceIntervalOfTheMean) {
  // n = 4, sd = sqrt(5/3): half width t(0.975, 3) * sd / 2.
  const std::vector<double> v = {1, 2, 3, 4};
  EXPECT_NEAR(mean_ci_half_width(v), 3.182446305 * std::sqrt(5.0 / 3.0) / 2, 1e-8);
  EXPECT_GT(mean_ci_half_width(v, 0.99), mean_ci_half_width(v, 0.95));
}

std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(ReportRows, WriteRowsPicksTheFormatByTheName) {
  const auto dir = std::filesystem::temp_directory_path() / "simloop-write-rows-test";
  std::filesystem::create_directories(dir);
  std::vector<Row> rows(2);
  rows[0].set("payload", int64_t{18}).set("kpps", 1.5);
  rows[1].set("payload", int64_t{256}).set("kpps", 0.25);
  write_rows(dir / "r.csv", rows);
  write_rows(dir / "r.json", rows);
  EXPECT_EQ(slurp(dir / "r.csv"), to_csv(rows));
  const auto j = nlohmann::json::parse(slurp(dir / "r.json"));
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[1]["payload"], 256);
  EXPECT_DOUBLE_EQ(j[0]["kpps"].get<double>(), 1.5);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace simloop::report
