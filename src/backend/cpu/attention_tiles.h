#pragma once
// The inner loops of attention on one tile of keys, as a table of functions with one
// implementation per instruction set: portable C++ (attention_tiles.cc) and AVX2 + FMA + F16C
// (attention_tiles_avx2.cc, compiled with those flags and only called when the CPU has them).
#include <cstdint>

namespace lumen::backend::cpu {

struct AttentionTileKernels {
  // scores[i * ld + j] = sum_d q[i * dim + d] * k[j * k_stride + d], i < nq, j < nk.
  void (*qk)(const float* q, int64_t nq, const float* k, int64_t k_stride, int64_t nk,
             int64_t dim, float* scores, int64_t ld);
  // acc[i * dim + d] += sum_j p[i * ld + j] * v[j * v_stride + d], i < nq, d < dim.
  void (*pv)(const float* p, int64_t nq, int64_t ld, const float* v, int64_t v_stride,
             int64_t nk, int64_t dim, float* acc);
  // dst[d] = f32(src[d]) for IEEE half src.
  void (*widen_f16)(const uint16_t* src, int64_t n, float* dst);
  // s[j] = exp(s[j] - shift) for j < n (every argument <= 0); returns the sum of the results.
  float (*exp_shifted)(float* s, int64_t n, float shift);
};

const AttentionTileKernels& portable_attention_tiles();
// Null when this build has no AVX2 kernels.
const AttentionTileKernels* avx2_attention_tiles();

// The best table for the CPU this runs on (chosen once).
const AttentionTileKernels& best_attention_tiles();

}  // namespace lumen::backend::cpu
