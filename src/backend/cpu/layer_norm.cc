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

// 1 + erf(z) as erfc(-z): accurate in the tail where 1 + erf cancels in double (x < -5).
float gelu_erf_value(float x) {
  const double v = x;
  return static_cast<float>(0.5 * v * std::erfc(-v / std::sqrt(2.0)));
}

float activation_value(Activation kind, float x) {
  const double v = x;
  switch (kind) {
    case Activation::QuickGelu: return static_cast<float>(v / (1.0 + std::exp(-1.702 * v)));
    case Activation::GeluTanh:
      return static_cast<float>(0.5 * v * (1.0 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))));
    case Activation::GeluErf: return gelu_erf_value(x);
    case Activation::Silu: return static_cast<float>(v / (1.0 + std::exp(-v)));
    case Activation::Tanh: return static_cast<float>(std::tanh(v));
  }
  return x;  // unreachable: Backend::activation checks the kind
}

}  // namespace lumen::backend::cpu
