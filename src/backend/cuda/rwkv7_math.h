#pragma once
// The arithmetic of RWKV 7's CUDA kernels (rwkv7.cu), as functions that compile for the device
// and for the host, so that tests/unit/cuda_host checks them against the CPU backend's kernels
// (backend/cpu/rwkv7_rows.h, rwkv_wkv7.h's portable loop) without a GPU. Each f32 operation
// rounds once on both sides (hd_math.h: the _rn intrinsics on the device, plain operators on a
// host built with -ffp-contract=off), in the CPU's order; only expf and tanhf (the device's)
// may differ from the C library's by an ulp.
#include <cstdint>

#include "backend/cuda/hd_math.h"

namespace lumen::backend::cuda::hd {

inline constexpr float kRwkv7DecayScale = -0.606531f;  // cpu::kRwkv7DecayScale
inline constexpr float kRwkv7L2Floor = 1e-12f;
inline constexpr int kWkvLanes = 8;  // the CPU's partial sums (cpu/rwkv_wkv7_kernel.h)

// The norm's scale from the sum of squared deviations (double), rounded to f32 as the CPU does.
LUMEN_HD float rwkv7_norm_inverse(double deviation_squares, int64_t width, double eps) {
  return static_cast<float>(div_rn(1.0, sqrt_rn(add_rn(div_rn(deviation_squares, static_cast<double>(width)), eps))));
}

// f32(x - mean) * inv * weight + bias, each product and the sum rounded in f32.
LUMEN_HD float rwkv7_norm_value(float x, double mean, float inv, float weight, float bias) {
  const auto centred = static_cast<float>(sub_rn(static_cast<double>(x), mean));
  return add_rn(mul_rn(mul_rn(centred, inv), weight), bias);
}

LUMEN_HD float rwkv7_sigmoid(float v) { return div_rn(1.0f, add_rn(1.0f, exp_f32(-v))); }

// x_t + (x_prev - x_t) * mix.
LUMEN_HD float token_shift_value(float cur, float before, float mix) {
  return add_rn(cur, mul_rn(sub_rn(before, cur), mix));
}

// Rwkv7Activation: 0 tanh, 1 sigmoid, 2 max(x, 0)^2.
LUMEN_HD float rwkv7_activation(float v, int f) {
  if (f == 0) return tanh_f32(v);
  if (f == 1) return rwkv7_sigmoid(v);
  const float u = v > 0.0f ? v : 0.0f;
  return mul_rn(u, u);
}

// v + (first - v) * sigmoid(mix + v0).
LUMEN_HD float value_residual(float v, float first, float mix, float v0) {
  return add_rn(v, mul_rn(sub_rn(first, v), rwkv7_sigmoid(add_rn(mix, v0))));
}

// One head of one row of Backend::rwkv7_keys, in cpu::rwkv7_keys_row's order: w, a, k updated,
// kk and b written (all pointing at the head's first channel).
LUMEN_HD void rwkv7_keys_head(float* w, float* a, float* k, float* kk, float* b, const float* w0, const float* a0,
                              const float* k_k, const float* k_a, int64_t head_size) {
  float sum = 0.0f;
  for (int64_t c = 0; c < head_size; ++c) {
    w[c] = exp_f32(mul_rn(kRwkv7DecayScale, rwkv7_sigmoid(add_rn(w[c], w0[c]))));
    a[c] = rwkv7_sigmoid(add_rn(a[c], a0[c]));
    kk[c] = mul_rn(k[c], k_k[c]);
  }
  for (int64_t c = 0; c < head_size; ++c) sum = add_rn(sum, mul_rn(kk[c], kk[c]));
  const float length = sqrt_f32(sum);
  const float scale = div_rn(1.0f, length < kRwkv7L2Floor ? kRwkv7L2Floor : length);  // std::max's choice
  for (int64_t c = 0; c < head_size; ++c) {
    kk[c] = mul_rn(kk[c], scale);
    const float ka = mul_rn(k[c], k_a[c]);
    k[c] = add_rn(k[c], sub_rn(mul_rn(a[c], ka), ka));
    b[c] = mul_rn(kk[c], a[c]);
    kk[c] = -kk[c];
  }
}

// One head of one row of Backend::rwkv7_bonus_gate (pointers at the head's first channel).
LUMEN_HD void rwkv7_bonus_gate_head(float* out, const float* r, const float* k, const float* v, const float* g,
                                    const float* r_k, int64_t head_size) {
  float bonus = 0.0f;
  for (int64_t c = 0; c < head_size; ++c) bonus = add_rn(bonus, mul_rn(mul_rn(r[c], k[c]), r_k[c]));
  for (int64_t c = 0; c < head_size; ++c) out[c] = mul_rn(add_rn(out[c], mul_rn(v[c], bonus)), g[c]);
}

// One token's update of state row i (value channel i) of a head of `size` <= MAX channels, the
// CPU's portable loop (cpu/rwkv_wkv7_kernel.h): sa = a.s in kWkvLanes partial sums over whole
// lanes, the tail's products added first; then s_j = s_j w_j + k_j v_i + b_j sa and out_i = s.r
// the same way. s is the row (its first `size` values in registers: every index is a constant
// once the loops over MAX unroll), the others the head's slices.
template <int MAX>
LUMEN_HD float wkv7_row(float* s, const float* r, const float* w, const float* k, const float* a, const float* b,
                        float vi, int size) {
  static_assert(MAX % kWkvLanes == 0, "whole lanes");
  const int lanes_end = size - size % kWkvLanes;
  float partial[kWkvLanes] = {};
  LUMEN_UNROLL
  for (int j = 0; j < MAX; j += kWkvLanes) {
    if (j < lanes_end) {
      LUMEN_UNROLL
      for (int l = 0; l < kWkvLanes; ++l) partial[l] = add_rn(partial[l], mul_rn(a[j + l], s[j + l]));
    }
  }
  float sa = 0.0f;
  LUMEN_UNROLL
  for (int j = 0; j < MAX; ++j) {
    if (j >= lanes_end && j < size) sa = add_rn(sa, mul_rn(a[j], s[j]));
  }
  LUMEN_UNROLL
  for (int l = 0; l < kWkvLanes; ++l) sa = add_rn(sa, partial[l]);
  LUMEN_UNROLL
  for (int l = 0; l < kWkvLanes; ++l) partial[l] = 0.0f;
  float sum = 0.0f;
  LUMEN_UNROLL
  for (int j = 0; j < MAX; ++j) {
    if (j < size) {
      const float h = add_rn(add_rn(mul_rn(s[j], w[j]), mul_rn(k[j], vi)), mul_rn(b[j], sa));
      s[j] = h;
      if (j < lanes_end) {
        partial[j % kWkvLanes] = add_rn(partial[j % kWkvLanes], mul_rn(h, r[j]));
      } else {
        sum = add_rn(sum, mul_rn(h, r[j]));
      }
    }
  }
  LUMEN_UNROLL
  for (int l = 0; l < kWkvLanes; ++l) sum = add_rn(sum, partial[l]);
  return sum;
}

}  // namespace lumen::backend::cuda::hd
