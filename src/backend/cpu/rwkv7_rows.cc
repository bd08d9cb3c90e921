#include "backend/cpu/rwkv7_rows.h"

#include <algorithm>
#include <cmath>

namespace lumen::backend::cpu {

void rwkv7_normalize(const float* x, int64_t width, double eps, const float* weight, const float* bias, float* y) {
  double mean = 0.0;
  for (int64_t c = 0; c < width; ++c) mean += x[c];
  mean /= static_cast<double>(width);
  double var = 0.0;
  for (int64_t c = 0; c < width; ++c) var += (x[c] - mean) * (x[c] - mean);
  const auto inv = static_cast<float>(1.0 / std::sqrt(var / static_cast<double>(width) + eps));
  for (int64_t c = 0; c < width; ++c) y[c] = static_cast<float>(x[c] - mean) * inv * weight[c] + bias[c];
}

float rwkv7_sigmoid(float v) { return 1.0f / (1.0f + std::exp(-v)); }

float rwkv7_activation(float v, Rwkv7Activation f) {
  switch (f) {
    case Rwkv7Activation::Tanh: return std::tanh(v);
    case Rwkv7Activation::Sigmoid: return rwkv7_sigmoid(v);
    case Rwkv7Activation::ReluSquared: {
      const float u = std::max(v, 0.0f);
      return u * u;
    }
  }
  return v;
}

void rwkv7_keys_row(float* w, float* a, float* k, float* kk, float* b, const Rwkv7KeyWeights& weights, int64_t width,
                    int64_t head_size) {
  const auto* w0 = static_cast<const float*>(weights.w0.data);
  const auto* a0 = static_cast<const float*>(weights.a0.data);
  const auto* k_k = static_cast<const float*>(weights.k_k.data);
  const auto* k_a = static_cast<const float*>(weights.k_a.data);
  for (int64_t c = 0; c < width; ++c) {
    w[c] = std::exp(kRwkv7DecayScale * rwkv7_sigmoid(w[c] + w0[c]));
    a[c] = rwkv7_sigmoid(a[c] + a0[c]);
    kk[c] = k[c] * k_k[c];
  }
  for (int64_t h = 0; h < width / head_size; ++h) {  // kk: unit length per head
    float* head = kk + h * head_size;
    float sum = 0.0f;
    for (int64_t c = 0; c < head_size; ++c) sum += head[c] * head[c];
    const float scale = 1.0f / std::max(std::sqrt(sum), kRwkv7L2Floor);
    for (int64_t c = 0; c < head_size; ++c) head[c] *= scale;
  }
  for (int64_t c = 0; c < width; ++c) {
    const float ka = k[c] * k_a[c];
    k[c] += a[c] * ka - ka;
    b[c] = kk[c] * a[c];  // the wkv's b; its a is -kk
    kk[c] = -kk[c];
  }
}

void rwkv7_bonus_gate_row(float* out, const float* r, const float* k, const float* v, const float* g, const float* r_k,
                          int64_t width, int64_t head_size) {
  for (int64_t at = 0; at < width; at += head_size) {
    float bonus = 0.0f;
    for (int64_t c = at; c < at + head_size; ++c) bonus += r[c] * k[c] * r_k[c];
    for (int64_t c = at; c < at + head_size; ++c) out[c] = (out[c] + v[c] * bonus) * g[c];
  }
}

}  // namespace lumen::backend::cpu
