#include "sim/tools/calibrate/fit.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <stdexcept>

#include "sim/tools/calibrate/calibrate_detail.h"
#include "sim/tools/calibrate/nnls.h"

namespace simloop::measure {

double predict_ns(const Features& f, const std::vector<double>& values) {
  double ns = f.known;
  for (size_t j = 0; j < values.size() && j < f.total.size(); ++j) ns += f.total[j] * values[j];
  return ns;
}

double Fit::rms_rel_residual() const {
  double sq = 0;
  for (const auto& r : residuals) sq += std::pow((r.fitted_ns - r.measured_ns) / r.measured_ns, 2);
  return residuals.empty() ? 0 : std::sqrt(sq / static_cast<double>(residuals.size()));
}

double Fit::value(const std::string& name) const {
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return values[i];
  throw std::runtime_error("the fit has no parameter " + name);
}

namespace {
constexpr double kNullTol = 1e-6;  // a direction counts if it carries this share of a vector
}

std::vector<std::string> Fit::relies_on(const Features& f) const {
  std::vector<std::string> out;
  if (null_basis.cols() == 0) return out;
  const auto n = static_cast<Eigen::Index>(names.size());
  Eigen::VectorXd a(n);
  for (Eigen::Index j = 0; j < n; ++j) a(j) = f.total[static_cast<size_t>(j)] * scale(j);
  const double norm = a.norm();
  if (norm == 0) return out;
  const Eigen::VectorXd c = null_basis.transpose() * a;
  if (c.norm() <= kNullTol * norm) return out;
  // The undetermined parameters this point's price involves.
  for (Eigen::Index j = 0; j < n; ++j)
    if (a(j) != 0 && null_basis.row(j).norm() > kNullTol)
      out.push_back(names[static_cast<size_t>(j)]);
  return out;
}

std::optional<std::vector<std::string>> Fit::tied_to(const std::string& name) const {
  const auto it = std::find(names.begin(), names.end(), name);
  if (it == names.end() ||
      std::find(undetermined.begin(), undetermined.end(), name) == undetermined.end())
    return std::nullopt;
  const auto j = static_cast<Eigen::Index>(it - names.begin());
  std::vector<std::string> out;
  // A direction the data leave free that moves this parameter alone means
  // it was never exercised; others moving with it are its partners.
  for (Eigen::Index k = 0; k < static_cast<Eigen::Index>(names.size()); ++k)
    if (k != j && std::abs(null_basis.row(j).dot(null_basis.row(k))) > kNullTol)
      out.push_back(names[static_cast<size_t>(k)]);
  return out;
}

Features features_for(const Fit& fit, const Point& p) {
  return fit.source == "native" ? native_features(p) : kernel_features(p);
}

namespace detail {

bool of_model(const Point& p, const std::string& source) {
  return source == "native" ? p.native() : !p.native();
}

}  // namespace detail

using detail::of_model;

namespace {

// Rows of the weighted least-squares problem for the training points.
struct Problem {
  Eigen::MatrixXd A;
  Eigen::VectorXd b;
};

// With per-function times, two more columns than parameters: what the
// instrumented run's clock reads cost beyond the overhead measured beside
// it, per call of a function and per call it makes (zero in the totals).
constexpr size_t kNuisance = 2;

Problem build(const std::vector<const Point*>& train, const std::vector<Features>& feats,
              size_t nparams, double split_weight, bool use_split, double slowdown) {
  std::vector<std::vector<double>> rows;
  std::vector<double> rhs;
  const size_t ncols = nparams + (use_split ? kNuisance : 0);
  for (size_t i = 0; i < train.size(); ++i) {
    const Point& p = *train[i];
    const Features& f = feats[i];
    const double w = 1.0 / p.ns_value;
    std::vector<double> row(ncols, 0.0);
    for (size_t j = 0; j < nparams; ++j) row[j] = f.total[j] * w;
    rows.push_back(row);
    rhs.push_back((p.ns_value - f.known) * w);
    if (!use_split || p.split_value.empty()) continue;
    for (const auto& [fn, frow] : f.split) {
      const auto it = p.split_value.find(fn);
      const double measured = it == p.split_value.end() ? 0 : it->second;
      // The instrumented run's clock reads cost time of their own, charged
      // to the function that made them and to its caller.
      const double overhead =
          f.calls.at(fn) * p.overhead_self_ns + f.child_calls.at(fn) * p.overhead_parent_ns;
      const double ws = split_weight * w;
      for (size_t j = 0; j < nparams; ++j) row[j] = frow[j] * ws;
      row[nparams] = f.calls.at(fn) / slowdown * ws;
      row[nparams + 1] = f.child_calls.at(fn) / slowdown * ws;
      rows.push_back(row);
      rhs.push_back((measured - overhead) / slowdown * ws);
    }
  }
  Problem pr;
  pr.A.resize(static_cast<Eigen::Index>(rows.size()), static_cast<Eigen::Index>(ncols));
  pr.b.resize(static_cast<Eigen::Index>(rows.size()));
  for (size_t i = 0; i < rows.size(); ++i) {
    for (size_t j = 0; j < ncols; ++j)
      pr.A(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = rows[i][j];
    pr.b(static_cast<Eigen::Index>(i)) = rhs[i];
  }
  return pr;
}

Eigen::VectorXd solve(const Problem& pr, const Eigen::VectorXd& scale) {
  const Eigen::MatrixXd As = pr.A * scale.asDiagonal();
  return nnls(As, pr.b).cwiseProduct(scale);
}

bool has_split(const std::vector<const Point*>& train) {
  for (const Point* p : train)
    if (!p->split_value.empty()) return true;
  return false;
}

// The instrumented run is slower than the plain one beyond its clock reads
// (the code they displace): its per-function times are taken as
// proportional to the plain run's, the factor chosen with the costs to
// minimise the weighted residual (golden-section search on its logarithm).
double fit_slowdown(const std::vector<const Point*>& train, const std::vector<Features>& feats,
                    size_t n, double w, const Eigen::VectorXd& scale) {
  auto cost = [&](double log_k) {
    const Problem pr = build(train, feats, n, w, true, std::exp(log_k));
    return (pr.A * solve(pr, scale) - pr.b).squaredNorm();
  };
  double a = std::log(0.5), b = std::log(5.0);
  const double g = (std::sqrt(5.0) - 1) / 2;
  double c = b - g * (b - a), d = a + g * (b - a);
  double fc = cost(c), fd = cost(d);
  for (int i = 0; i < 40; ++i) {
    if (fc < fd) {
      b = d, d = c, fd = fc;
      c = b - g * (b - a), fc = cost(c);
    } else {
      a = c, c = d, fc = fd;
      d = a + g * (b - a), fd = cost(d);
    }
  }
  return std::exp((a + b) / 2);
}

}  // namespace

Fit calibrate(std::vector<Point> points, const FitOptions& opt) {
  if (opt.source != "native" && opt.source != "kernel")
    throw InputError("calibrate: unknown source '" + opt.source + "' (native or kernel)");
  Fit fit;
  fit.source = opt.source;
  fit.stat = opt.stat;
  fit.split = opt.split;
  fit.split_weight = opt.source == "native" && opt.use_split ? opt.split_weight : 0;
  fit.names = opt.source == "native" ? native_params() : kernel_params();
  std::vector<const Point*> train;
  for (const auto& p : points) {
    if (!of_model(p, opt.source)) continue;
    (opt.split.trains(p) ? train.push_back(&p) : void(++fit.held_out_points));
  }
  fit.training_points = static_cast<int>(train.size());
  if (train.empty()) {
    // The likeliest cause: a table from another machine read as native rows.
    size_t other = 0;
    for (const auto& p : points) other += of_model(p, opt.source) ? 0 : 1;
    const char* other_model = opt.source == "native" ? "kernel" : "native";
    throw InputError(fmt::format(
        "no {} points in the training set ({}){}", opt.source, fmt::join(opt.split.specs(), "; "),
        other == 0 ? std::string()
                   : fmt::format("; {} point(s) are for the {} model: --source {}", other,
                                 other_model, other_model)));
  }
  if (opt.source == "kernel") {
    const bool nul = train.front()->null_syscall_ns.has_value();
    for (const Point* p : train)
      if (p->null_syscall_ns.has_value() != nul)
        throw InputError(fmt::format(
            "{}: {} has {} null syscall, {} has {}: measure it for "
            "every training point or none",
            p->where, p->label(), nul ? "no" : "a", train.front()->label(), nul ? "one" : "none"));
  }
  // The path the profile's experiment takes: the most common training dest.
  std::map<std::string, int> dests;
  for (const Point* p : train) ++dests[p->key("dest")];
  fit.dest = std::max_element(dests.begin(), dests.end(), [](auto& a, auto& b) {
               return a.second < b.second;
             })->first;

  std::vector<Features> feats;
  for (const Point* p : train) feats.push_back(features_for(fit, *p));
  const size_t n = fit.names.size();
  if (!has_split(train)) fit.split_weight = 0;
  const bool split = fit.split_weight > 0;

  // Columns scaled to unit norm: events per packet and bytes per packet
  // differ by orders of magnitude. A column the training points never
  // exercise keeps scale 1 (it is undetermined either way).
  const auto ncols = static_cast<Eigen::Index>(n + (split ? kNuisance : 0));
  Eigen::VectorXd scale = Eigen::VectorXd::Ones(ncols);
  {
    const Problem pr0 = build(train, feats, n, fit.split_weight, split, 1.0);
    for (Eigen::Index j = 0; j < pr0.A.cols(); ++j) {
      const double nrm = pr0.A.col(j).norm();
      if (nrm > 0) scale(j) = 1.0 / nrm;
    }
  }
  fit.scale = scale.head(static_cast<Eigen::Index>(n));
  fit.slowdown = split ? fit_slowdown(train, feats, n, fit.split_weight, scale) : 1.0;
  const Problem pr = build(train, feats, n, fit.split_weight, split, fit.slowdown);
  const Eigen::VectorXd x = solve(pr, scale);
  fit.values.assign(x.data(), x.data() + n);
  if (split)
    fit.split_overhead = {x(static_cast<Eigen::Index>(n)), x(static_cast<Eigen::Index>(n + 1))};

  // What the data determine: the null space of the scaled design (the
  // instrumentation's columns included; only the costs' rows are kept).
  const Eigen::MatrixXd As = pr.A * scale.asDiagonal();
  Eigen::JacobiSVD<Eigen::MatrixXd> svd(As, Eigen::ComputeFullV);
  const Eigen::VectorXd sv = svd.singularValues();
  const double smax = sv.size() > 0 ? sv(0) : 0;
  int rank = 0;
  for (Eigen::Index k = 0; k < sv.size(); ++k)
    if (sv(k) > smax * 1e-9) ++rank;
  fit.rank = rank;
  fit.condition = rank > 0 ? smax / sv(rank - 1) : std::numeric_limits<double>::infinity();
  const auto nn = static_cast<Eigen::Index>(n);
  fit.null_basis = svd.matrixV().rightCols(ncols - rank).topRows(nn);
  for (Eigen::Index j = 0; j < nn; ++j)
    if (fit.null_basis.cols() > 0 && fit.null_basis.row(j).norm() > kNullTol)
      fit.undetermined.push_back(fit.names[static_cast<size_t>(j)]);

  for (size_t i = 0; i < train.size(); ++i)
    fit.residuals.push_back(
        {train[i]->label(), train[i]->ns_value, predict_ns(feats[i], fit.values)});
  double sum = 0;
  for (const Point* p : train) sum += p->kpps();
  fit.constant_kpps = sum / static_cast<double>(train.size());

  // Intervals: refit on resamples of each training point's repeats.
  if (opt.bootstrap > 0) {
    std::mt19937_64 rng(opt.seed);
    std::vector<Point> copies;
    for (const Point* p : train) copies.push_back(*p);
    std::vector<const Point*> ptrs;
    for (const auto& c : copies) ptrs.push_back(&c);
    for (int b = 0; b < opt.bootstrap; ++b) {
      for (auto& c : copies) {
        std::uniform_int_distribution<size_t> u(0, c.repeats.size() - 1);
        std::vector<size_t> pick(c.repeats.size());
        for (auto& k : pick) k = u(rng);
        c.summarize(fit.stat, pick);
      }
      // Kernel features depend on the null syscall, which was resampled.
      std::vector<Features> fb = feats;
      if (opt.source == "kernel")
        for (size_t i = 0; i < copies.size(); ++i) fb[i] = kernel_features(copies[i]);
      const Eigen::VectorXd xb =
          solve(build(ptrs, fb, n, fit.split_weight, split, fit.slowdown), scale);
      fit.draws.emplace_back(xb.data(), xb.data() + n);
    }
    for (size_t j = 0; j < n; ++j) {
      std::vector<double> d;  // this cost's refits
      for (const auto& draw : fit.draws) d.push_back(draw[j]);
      std::sort(d.begin(), d.end());
      // A resample's minimum is never below the data's, so with the minimum
      // every draw leans one way and a percentile interval can miss the fit
      // itself. The draws are moved so that their median is the fit: the
      // interval is then their spread about it (costs stay non-negative;
      // a shift keeps the order).
      if (fit.stat == Stat::min) {
        const double shift = fit.values[j] - d[d.size() / 2];
        for (double& v : d) v = std::max(0.0, v + shift);
        for (auto& draw : fit.draws) draw[j] = std::max(0.0, draw[j] + shift);
      }
      fit.lo.push_back(d[static_cast<size_t>(0.05 * (d.size() - 1))]);
      fit.hi.push_back(d[static_cast<size_t>(0.95 * (d.size() - 1))]);
    }
  }
  return fit;
}

SplitChoice choose_split(const std::vector<Point>& points, const FitOptions& opt) {
  std::vector<const Point*> train;
  for (const auto& p : points)
    if (of_model(p, opt.source) && opt.split.trains(p)) train.push_back(&p);
  if (!has_split(train))
    throw InputError(
        "--choose-split: no training point has per-function times (measure native --split "
        "writes them)");
  // The folds: one per path and one per payload of the training points.
  auto path_of = [](const Point& p) {
    std::string path;
    for (const auto& [k, v] : p.keys)
      if (k != "payload") path += k + "=" + v + " ";
    return path;
  };
  std::map<std::string, std::vector<const Point*>> folds;
  for (const Point* p : train) {
    folds["path " + path_of(*p)].push_back(p);
    folds["payload " + std::to_string(p->payload())].push_back(p);
  }
  SplitChoice c;
  std::vector<double> errors[2];  // [0]: totals only, [1]: with per-function times
  for (const auto& [name, out] : folds) {
    if (out.size() == train.size()) continue;  // nothing would train
    std::vector<Point> in;
    for (const Point* p : train)
      if (std::find(out.begin(), out.end(), p) == out.end()) in.push_back(*p);
    ++c.folds;
    for (int split = 0; split < 2; ++split) {
      FitOptions o = opt;
      o.use_split = split == 1;
      o.bootstrap = 0;
      const Fit fit = calibrate(in, o);
      for (const Point* p : out) {
        const double ns = predict_ns(features_for(fit, *p), fit.values);
        // kpps predicted over kpps measured, less one.
        errors[split].push_back(ns > 0 ? std::abs(p->ns_value / ns - 1) : 1.0);
      }
    }
  }
  auto median = [](std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  };
  c.totals_error = median(errors[0]);
  c.split_error = median(errors[1]);
  c.predictions = errors[1].size();
  c.split = c.split_error <= c.totals_error;
  return c;
}

}  // namespace simloop::measure
