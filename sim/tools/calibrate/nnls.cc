#include "sim/tools/calibrate/nnls.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <vector>

namespace simloop::measure {

Eigen::VectorXd nnls(const Eigen::MatrixXd& A, const Eigen::VectorXd& b, int max_iter) {
  if (A.rows() != b.size()) throw std::invalid_argument("nnls: A and b have different row counts");
  const Eigen::Index n = A.cols();
  if (max_iter <= 0) max_iter = static_cast<int>(3 * n + 10);
  Eigen::VectorXd x = Eigen::VectorXd::Zero(n);
  std::vector<bool> passive(static_cast<size_t>(n), false);
  const double tol = 1e-10 * std::max(1.0, A.norm() * b.norm());

  // Least squares on the passive columns only; the others are held at 0.
  auto solve_passive = [&] {
    std::vector<Eigen::Index> idx;
    for (Eigen::Index j = 0; j < n; ++j)
      if (passive[static_cast<size_t>(j)]) idx.push_back(j);
    Eigen::MatrixXd Ap(A.rows(), static_cast<Eigen::Index>(idx.size()));
    for (size_t k = 0; k < idx.size(); ++k) Ap.col(static_cast<Eigen::Index>(k)) = A.col(idx[k]);
    const Eigen::VectorXd zp = Ap.completeOrthogonalDecomposition().solve(b);
    Eigen::VectorXd z = Eigen::VectorXd::Zero(n);
    for (size_t k = 0; k < idx.size(); ++k) z(idx[k]) = zp(static_cast<Eigen::Index>(k));
    return z;
  };

  for (int outer = 0; outer < max_iter; ++outer) {
    const Eigen::VectorXd w = A.transpose() * (b - A * x);  // the negative gradient
    Eigen::Index best = -1;
    double best_w = tol;
    for (Eigen::Index j = 0; j < n; ++j)
      if (!passive[static_cast<size_t>(j)] && w(j) > best_w) best_w = w(j), best = j;
    if (best < 0) break;  // Kuhn-Tucker conditions hold
    passive[static_cast<size_t>(best)] = true;
    for (int inner = 0; inner < max_iter; ++inner) {
      Eigen::VectorXd z = solve_passive();
      bool feasible = true;
      for (Eigen::Index j = 0; j < n; ++j)
        if (passive[static_cast<size_t>(j)] && z(j) <= 0) feasible = false;
      if (feasible) {
        x = z;
        break;
      }
      // Step from x towards z as far as feasibility allows, then drop the
      // variables that reached zero.
      double alpha = std::numeric_limits<double>::infinity();
      for (Eigen::Index j = 0; j < n; ++j)
        if (passive[static_cast<size_t>(j)] && z(j) <= 0)
          alpha = std::min(alpha, x(j) / (x(j) - z(j)));
      x += alpha * (z - x);
      for (Eigen::Index j = 0; j < n; ++j)
        if (passive[static_cast<size_t>(j)] && x(j) <= 1e-15)
          passive[static_cast<size_t>(j)] = false, x(j) = 0;
    }
  }
  return x.cwiseMax(0.0);
}

}  // namespace simloop::measure
