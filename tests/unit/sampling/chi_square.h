#pragma once
// Pearson's chi-square goodness-of-fit test, for checking that a sampler's draws follow a
// distribution. The seeds are fixed, so each test's statistic is deterministic; the threshold
// is the chi-square critical value at p = 1e-4 (Wilson-Hilferty's approximation, accurate to
// well under 1% at these degrees of freedom), so a correct sampler fails with probability
// 1e-4 over the choice of seed and a wrong one (off by a few percent on any cell) fails for sure.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

namespace lumen::sampling::testing {

// z with P(N(0,1) > z) = alpha, by bisection on erfc.
inline double normal_upper_quantile(double alpha) {
  double lo = 0.0, hi = 40.0;
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    if (0.5 * std::erfc(mid / std::sqrt(2.0)) > alpha)
      lo = mid;
    else
      hi = mid;
  }
  return 0.5 * (lo + hi);
}

// Wilson-Hilferty: (X / k)^(1/3) is close to normal with mean 1 - 2/(9k), variance 2/(9k).
inline double chi_square_critical(int dof, double alpha) {
  const double k = dof;
  const double z = normal_upper_quantile(alpha);
  const double c = 1.0 - 2.0 / (9.0 * k) + z * std::sqrt(2.0 / (9.0 * k));
  return k * c * c * c;
}

struct FitResult {
  double statistic = 0.0;
  int dof = 0;
  double critical = 0.0;
  bool passes() const { return dof > 0 && statistic < critical; }
  std::string describe() const {
    return "chi2 = " + std::to_string(statistic) + " with " + std::to_string(dof) +
           " degrees of freedom; critical value at p = 1e-4: " + std::to_string(critical);
  }
};

// counts[i] draws of outcome i out of n, against probabilities probs[i]. Outcomes of
// probability 0 are left out (a test asserts separately that they were never drawn); cells
// expected fewer than 5 times are pooled, in order of expectation, until they reach 5.
inline FitResult chi_square_fit(const std::vector<int64_t>& counts,
                                const std::vector<double>& probs) {
  const auto n = static_cast<double>(std::accumulate(counts.begin(), counts.end(), int64_t{0}));
  std::vector<size_t> order;
  for (size_t i = 0; i < probs.size(); ++i) {
    if (probs[i] > 0.0) order.push_back(i);
  }
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return probs[a] < probs[b]; });
  std::vector<std::pair<double, double>> cells;  // (observed, expected)
  double pooled_observed = 0.0, pooled_expected = 0.0;
  for (size_t i : order) {
    const double expected = n * probs[i];
    if (expected >= 5.0 && pooled_expected == 0.0) {
      cells.push_back({static_cast<double>(counts[i]), expected});
      continue;
    }
    pooled_observed += static_cast<double>(counts[i]);
    pooled_expected += expected;
    if (pooled_expected >= 5.0) {
      cells.push_back({pooled_observed, pooled_expected});
      pooled_observed = pooled_expected = 0.0;
    }
  }
  if (pooled_expected > 0.0) {
    if (cells.empty()) {
      cells.push_back({pooled_observed, pooled_expected});
    } else {  // a last small pool joins the previous cell
      cells.back().first += pooled_observed;
      cells.back().second += pooled_expected;
    }
  }
  FitResult result;
  for (const auto& [observed, expected] : cells) {
    result.statistic += (observed - expected) * (observed - expected) / expected;
  }
  result.dof = static_cast<int>(cells.size()) - 1;
  if (result.dof > 0) result.critical = chi_square_critical(result.dof, 1e-4);
  return result;
}

}  // namespace lumen::sampling::testing
