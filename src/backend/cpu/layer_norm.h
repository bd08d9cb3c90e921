#pragma once
// The row kernels of the LayerNorm blocks (Backend::layer_norm, gelu_erf, activation; BERT
// encoders, BLOOM, vision towers), in double and rounded once, so that a post-norm model's rows
// (which grow with depth) keep their small values. The CUDA kernels compute the same values (cuda/layer_norm_math.h).
#include <cstdint>

#include "backend/backend_types.h"

namespace lumen::backend::cpu {

// y = (x - mean) / sqrt(variance + eps) * weight + bias over one row of n values; y may be x.
void layer_norm_row(const float* x, const float* weight, const float* bias, float eps, int64_t n, float* y);

// x * Phi(x) with erf, in double, rounded once.
float gelu_erf_value(float x);
// Backend::activation's formula for one value, in double, rounded once.
float activation_value(Activation kind, float x);

}  // namespace lumen::backend::cpu
