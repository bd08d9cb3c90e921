#pragma once
// The two inner loops over a row of logits, written once with the compiler's generic vector
// types and compiled per instruction set (dense_kernels_portable.cc: 128-bit vectors, the x86-64
// baseline; dense_kernels_avx2.cc: 256-bit). A loop over std::exp or with a scalar
// max / sum accumulator stays scalar without -ffast-math, and -ffast-math would break the -inf
// logits that masks rely on.
//
// Every lane computes exactly fast_exp (fast_exp.h), operation for operation (the library is
// built with -ffp-contract=off), so each ISA gives bit-identical weights, and a seed gives the
// same tokens on every machine. Only the order of the block sums' additions depends on the
// vector width.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

namespace lumen::sampling::kernels {

// The kernels one instruction set provides. n is at most a few blocks; pointers unaligned.
struct DenseKernels {
  const char* name;
  // max over x[0, n) (NaN skipped; -inf when n == 0)
  float (*max)(const float* x, size_t n);
  // sum of exp((x_i - shift) * scale); with out != nullptr also out_i = each term
  float (*exp_sum)(const float* x, size_t n, float shift, float scale, float* out);
  // with w_i = exp(x_i - shift): returns sum w_i and sets *weighted = sum w_i (x_i - shift)
  float (*exp_moments)(const float* x, size_t n, float shift, float* weighted);
};

const DenseKernels& portable_kernels();
// nullptr when this build or this CPU has no AVX2.
const DenseKernels* avx2_kernels();
// The fastest the CPU supports.
const DenseKernels& best_kernels();

// ---- The implementation, instantiated by the per-ISA sources ----

template <typename VecF, typename VecI>
struct VectorKernels {
  static constexpr size_t kWidth = sizeof(VecF) / sizeof(float);

  static VecF splat(float v) { return VecF{} + v; }
  static VecF load(const float* p) {
    VecF v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }

  // fast_exp, lane by lane (same constants, same operation order).
  static VecF exp(VecF x) {
    const VecI vanishes = !(x >= -87.0f);
    VecF c = x < 88.0f ? x : splat(88.0f);
    c = c > -87.0f ? c : splat(-87.0f);
    const VecF n = (c * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    const VecF r = (c - n * 0.693359375f) - n * -2.12194440e-4f;
    VecF p = splat(1.0f / 5040.0f);
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    const VecF scale = std::bit_cast<VecF>((__builtin_convertvector(n, VecI) + 127) << 23);
    return vanishes ? splat(0.0f) : p * scale;
  }

  static float max(const float* x, size_t n) {
    constexpr float kNegInf = -std::numeric_limits<float>::infinity();
    VecF m = splat(kNegInf);
    size_t i = 0;
    for (; i + kWidth <= n; i += kWidth) {
      const VecF v = load(x + i);
      m = v > m ? v : m;  // NaN compares false: skipped
    }
    float best = kNegInf;
    for (size_t j = 0; j < kWidth; ++j) best = m[j] > best ? m[j] : best;
    for (; i < n; ++i) best = x[i] > best ? x[i] : best;
    return best;
  }

  static float exp_sum(const float* x, size_t n, float shift, float scale, float* out) {
    VecF acc{};
    size_t i = 0;
    for (; i + kWidth <= n; i += kWidth) {
      const VecF w = exp((load(x + i) - shift) * scale);
      if (out != nullptr) std::memcpy(out + i, &w, sizeof w);
      acc += w;
    }
    float sum = 0.0f;
    for (size_t j = 0; j < kWidth; ++j) sum += acc[j];
    for (; i < n; ++i) {
      const float w = exp_one((x[i] - shift) * scale);
      if (out != nullptr) out[i] = w;
      sum += w;
    }
    return sum;
  }

  static float exp_moments(const float* x, size_t n, float shift, float* weighted) {
    VecF acc{}, acc_weighted{};
    size_t i = 0;
    for (; i + kWidth <= n; i += kWidth) {
      const VecF d = load(x + i) - shift;
      const VecF w = exp(d);
      acc += w;
      // 0 * -inf would be NaN: a vanished weight contributes nothing
      acc_weighted += w > 0.0f ? w * d : splat(0.0f);
    }
    float sum = 0.0f, sum_weighted = 0.0f;
    for (size_t j = 0; j < kWidth; ++j) {
      sum += acc[j];
      sum_weighted += acc_weighted[j];
    }
    for (; i < n; ++i) {
      const float d = x[i] - shift;
      const float w = exp_one(d);
      sum += w;
      if (w > 0.0f) sum_weighted += w * d;
    }
    *weighted = sum_weighted;
    return sum;
  }

 private:
  static float exp_one(float x) {
    VecF v{};
    v[0] = x;
    return exp(v)[0];
  }
};

}  // namespace lumen::sampling::kernels
