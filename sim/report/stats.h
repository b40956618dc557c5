// Summary statistics of repeated measurements: one place for the mean,
// the sample standard deviation, the median and Student's t interval that
// the commands print.
#pragma once

#include <cstddef>
#include <vector>

namespace simloop::report {

double mean(const std::vector<double>& v);  // 0 for none
// Sample standard deviation (n - 1); 0 for fewer than two values.
double sd(const std::vector<double>& v);
double median(std::vector<double> v);  // 0 for none; the mean of the middle two for even n

// The two-sided `confidence` quantile of Student's t with `df` degrees of
// freedom (Boost.Math), e.g. 12.706 for 0.95 and df 1.
double t_quantile(double confidence, double df);

// Half the width of the `confidence` interval of the mean of `v` (0 for
// fewer than two values).
double mean_ci_half_width(const std::vector<double>& v, double confidence = 0.95);

}  // namespace simloop::report
