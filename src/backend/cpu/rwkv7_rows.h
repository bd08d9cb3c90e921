#pragma once
// RWKV 7's element-wise row kernels (Backend::rwkv7_norm and the rest), rounded as llama.cpp's
// rwkv7 graph rounds them: each ggml op a separate f32 rounding. The CUDA kernels compute the same
// values (cuda/rwkv7_math.h, checked against these on the host).
#include <cstdint>

#include "backend/backend_types.h"

namespace lumen::backend::cpu {

// llama.cpp's constants: the decay's scale (-e^-0.5, RWKV 7's) and the l2 norm's floor.
inline constexpr float kRwkv7DecayScale = -0.606531f;
inline constexpr float kRwkv7L2Floor = 1e-12f;

// (x - mean) / sqrt(var + eps) * weight + bias over `width` values into y (may be x): the sums in
// double as ggml_norm sums, the scale rounded to f32, x - mean rounded to f32, then f32 products
// and the bias as separate ops.
void rwkv7_normalize(const float* x, int64_t width, double eps, const float* weight, const float* bias, float* y);

float rwkv7_sigmoid(float v);
float rwkv7_activation(float v, Rwkv7Activation f);

// One row of rwkv7_keys (Backend::rwkv7_keys): w, a, k updated, kk and b written.
void rwkv7_keys_row(float* w, float* a, float* k, float* kk, float* b, const Rwkv7KeyWeights& weights, int64_t width,
                    int64_t head_size);

// One row of rwkv7_bonus_gate.
void rwkv7_bonus_gate_row(float* out, const float* r, const float* k, const float* v, const float* g, const float* r_k,
                          int64_t width, int64_t head_size);

}  // namespace lumen::backend::cpu
