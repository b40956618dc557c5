#include "sim/report/stats.h"

#include <algorithm>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <numeric>

namespace simloop::report {

double mean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

double sd(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double m = mean(v);
  double sq = 0;
  for (double x : v) sq += (x - m) * (x - m);
  return std::sqrt(sq / static_cast<double>(v.size() - 1));
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

double t_quantile(double confidence, double df) {
  const boost::math::students_t t(df);
  return boost::math::quantile(t, 0.5 + confidence / 2);
}

double mean_ci_half_width(const std::vector<double>& v, double confidence) {
  if (v.size() < 2) return 0;
  const double n = static_cast<double>(v.size());
  return t_quantile(confidence, n - 1) * sd(v) / std::sqrt(n);
}

}  // namespace simloop::report
