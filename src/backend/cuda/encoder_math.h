#pragma once
// The arithmetic of the CUDA kernels of the LayerNorm blocks and an encoder's attention
// (encoder_ops.cu), as functions that compile for the device and for the host, so that
// tests/unit/cuda_host checks them against the CPU backend's kernels (backend/cpu/layer_norm.h,
// bidirectional_attention.h) without a GPU. Every step is in double and rounded once, as the CPU
// computes them (hd_math.h's double helpers, each rounding once on both sides).
#include <cmath>
#include <cstdint>

#include "backend/cuda/hd_math.h"

namespace lumen::backend::cuda::hd {

// --- LayerNorm: mean = sum / n; inverse = 1 / sqrt(sum of squared deviations / n + eps).
LUMEN_HD double layer_norm_inverse(double deviation_squares, int64_t n, float eps) {
  return div_rn(1.0, sqrt_rn(add_rn(div_rn(deviation_squares, static_cast<double>(n)), static_cast<double>(eps))));
}

// ((x - mean) * inverse) * weight + bias, rounded to f32 once.
LUMEN_HD float layer_norm_value(float x, double mean, double inverse, float weight, float bias) {
  const double normed = mul_rn(sub_rn(static_cast<double>(x), mean), inverse);
  return static_cast<float>(add_rn(mul_rn(normed, static_cast<double>(weight)), static_cast<double>(bias)));
}

// --- GELU with erf: 0.5 x (1 + erf(x / sqrt 2)) = 0.5 x erfc(-x / sqrt 2), rounded to f32 once
// (cpu::gelu_erf_value). erfc keeps the tail below x = -5 that 1 + erf cancels away in double,
// where two libraries' erf a few ulps apart gave results 10% apart (an H200 against glibc).
LUMEN_HD float gelu_erf_value(float x) {
  const double v = x;
  const double sqrt2 = 1.4142135623730951;  // std::sqrt(2.0), correctly rounded
  return static_cast<float>(mul_rn(mul_rn(0.5, v), erfc_f64(div_rn(-v, sqrt2))));
}

// --- Backend::activation, by backend::Activation's number: each formula in double, rounded once,
// as cpu::activation_value computes it.
inline constexpr int kQuickGelu = 0, kGeluTanh = 1, kGeluErf = 2, kSilu = 3, kTanh = 4;
LUMEN_HD float activation_value(int kind, float x) {
  const double v = x;
  switch (kind) {
    case kQuickGelu: return static_cast<float>(div_rn(v, add_rn(1.0, exp_f64(mul_rn(-1.702, v)))));
    case kGeluTanh: {
      const double cube = mul_rn(mul_rn(mul_rn(0.044715, v), v), v);
      const double inner = mul_rn(0.7978845608028654, add_rn(v, cube));
      return static_cast<float>(mul_rn(mul_rn(0.5, v), add_rn(1.0, tanh_f64(inner))));
    }
    case kGeluErf: return gelu_erf_value(x);
    case kSilu: return static_cast<float>(div_rn(v, add_rn(1.0, exp_f64(-v))));
    case kTanh: return static_cast<float>(tanh_f64(v));
    default: return x;
  }
}

// --- Bidirectional attention: one key's score, q.k summed in order, times the scale.
LUMEN_HD double scaled_dot(const float* q, const float* k, int64_t dim, float scale) {
  double dot = 0.0;
  for (int64_t d = 0; d < dim; ++d) dot = add_rn(dot, mul_rn(static_cast<double>(q[d]), static_cast<double>(k[d])));
  return mul_rn(dot, static_cast<double>(scale));
}

}  // namespace lumen::backend::cuda::hd
