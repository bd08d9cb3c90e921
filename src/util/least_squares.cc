#include "util/least_squares.h"

#include <cmath>

#include "util/error.h"

namespace lumen::util {

NormalEquations::NormalEquations(size_t n_features) : k_(n_features), xtx_(k_ * k_, 0.0), xty_(k_, 0.0) {
  if (k_ == 0) fail("least squares needs at least one feature");
}

void NormalEquations::add(std::span<const double> x, double y, double weight) {
  if (x.size() != k_) fail("least squares: a sample of {} features, expected {}", x.size(), k_);
  if (!(weight > 0) || !std::isfinite(y)) return;
  for (size_t i = 0; i < k_; ++i) {
    xty_[i] += weight * x[i] * y;
    for (size_t j = 0; j < k_; ++j) xtx_[i * k_ + j] += weight * x[i] * x[j];
  }
  w_ += weight;
}

void NormalEquations::scale(double factor) {
  for (double& v : xtx_) v *= factor;
  for (double& v : xty_) v *= factor;
  w_ *= factor;
}

std::optional<std::vector<double>> NormalEquations::solve(double ridge, size_t first_penalized) const {
  if (!(w_ > 0)) return std::nullopt;
  // Scale column i by 1 / rms_i (a column of zeros stays as it is), solve for the scaled
  // coefficients, scale back.
  std::vector<double> d(k_);
  for (size_t i = 0; i < k_; ++i) {
    const double rms = std::sqrt(xtx_[i * k_ + i] / w_);
    d[i] = rms > 0 ? 1.0 / rms : 1.0;
  }
  std::vector<double> a(k_ * k_);
  std::vector<double> b(k_);
  for (size_t i = 0; i < k_; ++i) {
    b[i] = d[i] * xty_[i];
    for (size_t j = 0; j < k_; ++j) a[i * k_ + j] = d[i] * xtx_[i * k_ + j] * d[j];
    if (i >= first_penalized) a[i * k_ + i] += ridge * w_;
  }
  // Gaussian elimination with partial pivoting: the matrix is symmetric positive semi-definite
  // plus the ridge, and tiny.
  for (size_t col = 0; col < k_; ++col) {
    size_t pivot = col;
    for (size_t r = col + 1; r < k_; ++r) {
      if (std::abs(a[r * k_ + col]) > std::abs(a[pivot * k_ + col])) pivot = r;
    }
    if (std::abs(a[pivot * k_ + col]) <= 1e-12 * w_) return std::nullopt;
    if (pivot != col) {
      for (size_t j = 0; j < k_; ++j) std::swap(a[col * k_ + j], a[pivot * k_ + j]);
      std::swap(b[col], b[pivot]);
    }
    for (size_t r = col + 1; r < k_; ++r) {
      const double f = a[r * k_ + col] / a[col * k_ + col];
      for (size_t j = col; j < k_; ++j) a[r * k_ + j] -= f * a[col * k_ + j];
      b[r] -= f * b[col];
    }
  }
  std::vector<double> beta(k_);
  for (size_t i = k_; i-- > 0;) {
    double s = b[i];
    for (size_t j = i + 1; j < k_; ++j) s -= a[i * k_ + j] * beta[j];
    beta[i] = s / a[i * k_ + i];
  }
  for (size_t i = 0; i < k_; ++i) beta[i] *= d[i];
  return beta;
}

}  // namespace lumen::util
