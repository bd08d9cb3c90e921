#include "backend/cpu/layer_norm.h"

#include <cmath>

namespace lumen::backend::cpu {

void layer_norm_row(const float* x, const float* weight, const float* bias, float eps, int64_t n, float* y) {
  double mean = 0.0;
  for (int64_t c = 0; c < n; ++c) mean += x[c];
  mean /= static_cast<double>(n);
  double variance = 0.0;
  for (int64_t c = 0; c < n; ++c) variance += (x[c] - mean) * (x[c] - mean);
  const double inv = 1.0 / std::sqrt(variance / static_cast<double>(n) + static_cast<double>(eps));
  for (int64_t c = 0; c < n; ++c) y[c] = static_cast<float>((x[c] - mean) * inv * weight[c] + bias[c]);
}

float gelu_erf_value(float x) {
  const double v = x;
  return static_cast<float>(0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))));
}

}  // namespace lumen::backend::cpu
