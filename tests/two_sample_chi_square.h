#pragma once
// A two-sample chi-square homogeneity test for the losslessness tests of speculative decoding:
// two histograms over the same cells (tokens, or tuples of tokens), drawn with disjoint seeds, come
// from one distribution unless the statistic passes a threshold whose false-failure probability
// is about 1e-6.
#include <cmath>
#include <cstdint>
#include <vector>

namespace lumen::testing {

// Pearson's statistic for two samples of equal size over the cells, with the cells seen fewer
// than 20 times in both together pooled into one (the approximation needs expected counts of
// about 5 or more); `df` receives the degrees of freedom.
inline double homogeneity_statistic(const std::vector<int64_t>& a, const std::vector<int64_t>& b, int& df) {
  double x2 = 0;
  int64_t pooled_a = 0, pooled_b = 0;
  int cells = 0;
  auto add = [&](int64_t x, int64_t y) {
    x2 += static_cast<double>((x - y) * (x - y)) / static_cast<double>(x + y);
    ++cells;
  };
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] + b[i] >= 20) {
      add(a[i], b[i]);
    } else {
      pooled_a += a[i];
      pooled_b += b[i];
    }
  }
  if (pooled_a + pooled_b > 0) add(pooled_a, pooled_b);
  df = cells - 1;
  return x2;
}

// The chi-square quantile with upper tail 1e-6 (Wilson-Hilferty; z = 4.753).
inline double chi_square_threshold(int df) {
  const double d = df, z = 4.753;
  return d * std::pow(1.0 - 2.0 / (9.0 * d) + z * std::sqrt(2.0 / (9.0 * d)), 3.0);
}

}  // namespace lumen::testing
