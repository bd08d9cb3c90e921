#pragma once
// RMSNorm of one row, rounded the way ggml's CPU backend rounds it, so that a forward pass
// built on it tracks llama.cpp's logits closely.
#include <cstdint>

namespace lumen::backend::cpu {

// y[i] = (x[i] * s) * weight[i] with s = 1 / sqrt(mean(x^2) + eps).
// As in ggml: each square is formed in f32, the squares are summed in f64, the mean is rounded
// to f32 before eps is added, and the scale is applied before the weight. The only difference
// from ggml is the order of the f64 additions (we keep several partial sums), which changes the
// f64 sum by far less than one f32 ulp of the mean. y may alias x.
void rms_norm_row(const float* x, const float* weight, float eps, int64_t n, float* y);

}  // namespace lumen::backend::cpu
