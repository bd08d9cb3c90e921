#pragma once
// Small dense least squares through the normal equations: the engine fits cost models of a
// handful of features online from its own measurements (engine/step_time_model.h), so the
// systems are tiny (k <= 8) and solved afresh whenever asked.
//
// A ridge term keeps a direction the samples never moved in (a feature that stayed constant, or
// two that always moved together) from taking an arbitrary, noise-driven coefficient: the
// penalized coefficients shrink towards 0 in such a direction instead, and the unpenalized ones
// (the intercept) absorb the constant part. Columns are scaled to unit root-mean-square before
// the ridge is applied, so one ridge strength suits features in any unit.
#include <cstddef>
#include <optional>
#include <span>
#include <vector>

namespace lumen::util {

class NormalEquations {
 public:
  explicit NormalEquations(size_t n_features);

  size_t n_features() const { return k_; }
  // Adds the sample y ~ x . beta with weight w (> 0); x has n_features() entries.
  void add(std::span<const double> x, double y, double weight = 1.0);
  // Multiplies every sample's weight so far by `factor` (exponential forgetting).
  void scale(double factor);
  double total_weight() const { return w_; }

  // The coefficients minimizing sum w (y - x.beta)^2 + ridge * total_weight * |D beta|^2 over
  // the columns from `first_penalized` on (D: the columns' root-mean-square); nullopt when no
  // sample was added or the system is singular even so (a column of zeros left unpenalized).
  std::optional<std::vector<double>> solve(double ridge, size_t first_penalized) const;

 private:
  size_t k_;
  std::vector<double> xtx_;  // k x k, row-major
  std::vector<double> xty_;
  double w_ = 0;
};

}  // namespace lumen::util
