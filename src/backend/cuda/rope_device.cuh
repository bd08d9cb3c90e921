#pragma once
// One token's rotary embedding by a block's threads, with the CPU backend's arithmetic
// (backend/cpu/rope.h): shared by rope (rope.cu) and the fused rope + K/V store
// (rope_store_kv.cu), so both rotate to the same bits.
//
// The angle of pair i is position * theta_scale^i built by repeated f32 multiplication (one
// thread walks the recurrence: a closed form would round differently at long positions), then
// freq_factors, linear scaling and YaRN's ramp, each operation rounded as the CPU rounds it.
// cos and sin are taken in double and rounded to f32, which is what glibc's cosf / sinf give
// in all but rare cases.
#include <cstdint>

#include "backend/cuda/kernels.h"

namespace lumen::backend::cuda {

// Shared memory a token's table takes: theta, then cos/sin pairs.
inline size_t rope_table_bytes(const RopeKernelParams& p) {
  return static_cast<size_t>(3 * (p.rope_dims / 2)) * sizeof(float);
}

// The token's cos/sin pairs (2 * rope_dims / 2 floats) in `shared` (rope_table_bytes), written by
// the block's threads; returns where they are. Every thread of the block calls it: it waits for
// the whole block twice.
__device__ __forceinline__ const float* rope_token_table(float* shared, int32_t position, const RopeKernelParams& p) {
  const int64_t half = p.rope_dims / 2;
  float* theta = shared;           // half values
  float* cos_sin = shared + half;  // 2 * half values
  if (threadIdx.x == 0) {
    float t = static_cast<float>(position);
    for (int64_t pair = 0; pair < half; ++pair) {
      theta[pair] = t;
      t = __fmul_rn(t, p.theta_scale);
    }
  }
  __syncthreads();
  for (int64_t pair = threadIdx.x; pair < half; pair += blockDim.x) {
    const float divisor = p.freq_factors != nullptr ? p.freq_factors[pair] : 1.0f;
    const float theta_extrap = __fdiv_rn(theta[pair], divisor);
    const float theta_interp = __fmul_rn(p.freq_scale, theta_extrap);
    float angle = theta_interp;
    if (p.ext_factor != 0.0f) {
      const float y =
          __fdiv_rn(__fsub_rn(static_cast<float>(pair), p.corr_low), fmaxf(0.001f, __fsub_rn(p.corr_high, p.corr_low)));
      const float ramp = __fsub_rn(1.0f, fminf(1.0f, fmaxf(0.0f, y)));
      const float mix = __fmul_rn(ramp, p.ext_factor);
      angle = __fadd_rn(__fmul_rn(theta_interp, __fsub_rn(1.0f, mix)), __fmul_rn(theta_extrap, mix));
    }
    const double a = static_cast<double>(angle);
    cos_sin[2 * pair] = __fmul_rn(static_cast<float>(cos(a)), p.mscale);
    cos_sin[2 * pair + 1] = __fmul_rn(static_cast<float>(sin(a)), p.mscale);
  }
  __syncthreads();
  return cos_sin;
}

// Rotates the token's n_heads heads of x in place (row token * n_heads + head at x + row *
// row_stride), by the block's threads, with the table rope_token_table wrote. Normal mode rotates
// (2i, 2i + 1); NeoX (i, i + half).
template <bool LOADS_FIRST>
__device__ __forceinline__ void rope_token_heads(float* x, int64_t row_stride, int64_t n_heads, int64_t token,
                                                 const float* cos_sin, const RopeKernelParams& p) {
  constexpr int kPairsAtOnce = 8;
  const int64_t half = p.rope_dims / 2;
  const int64_t partner = p.neox ? half : 1;
  const int64_t stride = p.neox ? 1 : 2;
  if constexpr (LOADS_FIRST) {
    // A decode step's token is one block of 128 threads and n_heads * half pairs (1 024 for 32
    // heads of 64): 8 pairs a thread. Loading a pair, rotating it and storing it before the next
    // load costs a memory latency per pair; here a thread loads kPairsAtOnce pairs, then rotates
    // and stores them, with 32-bit index arithmetic. The same operations on each pair.
    const int total = static_cast<int>(n_heads * half), half32 = static_cast<int>(half);
    const int threads = static_cast<int>(blockDim.x);
    for (int first = static_cast<int>(threadIdx.x); first < total; first += threads * kPairsAtOnce) {
      float* v[kPairsAtOnce];
      float x0[kPairsAtOnce], x1[kPairsAtOnce];
      int pair_of[kPairsAtOnce];
#pragma unroll
      for (int u = 0; u < kPairsAtOnce; ++u) {
        const int i = first + u * threads;
        v[u] = nullptr;
        if (i < total) {
          const int head = i / half32, pair = i - head * half32;
          pair_of[u] = pair;
          v[u] = x + (token * n_heads + head) * row_stride + pair * stride;
          x0[u] = v[u][0];
          x1[u] = v[u][partner];
        }
      }
#pragma unroll
      for (int u = 0; u < kPairsAtOnce; ++u) {
        if (v[u] == nullptr) continue;
        const float c = cos_sin[2 * pair_of[u]], s = cos_sin[2 * pair_of[u] + 1];
        v[u][0] = __fsub_rn(__fmul_rn(x0[u], c), __fmul_rn(x1[u], s));
        v[u][partner] = __fadd_rn(__fmul_rn(x0[u], s), __fmul_rn(x1[u], c));
      }
    }
  } else {
    for (int64_t i = threadIdx.x; i < n_heads * half; i += blockDim.x) {
      const int64_t head = i / half, pair = i % half;
      float* v = x + (token * n_heads + head) * row_stride + pair * stride;
      const float c = cos_sin[2 * pair], s = cos_sin[2 * pair + 1];
      const float x0 = v[0], x1 = v[partner];
      v[0] = __fsub_rn(__fmul_rn(x0, c), __fmul_rn(x1, s));
      v[partner] = __fadd_rn(__fmul_rn(x0, s), __fmul_rn(x1, c));
    }
  }
}

}  // namespace lumen::backend::cuda
