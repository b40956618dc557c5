// Non-negative least squares, the solver of every calibration fit.
#pragma once

#include <Eigen/Dense>

namespace simloop::measure {

// min ||A x - b||_2 subject to x >= 0 (Lawson and Hanson's active set
// method). Throws std::invalid_argument on mismatched sizes.
Eigen::VectorXd nnls(const Eigen::MatrixXd& A, const Eigen::VectorXd& b, int max_iter = 0);

}  // namespace simloop::measure
