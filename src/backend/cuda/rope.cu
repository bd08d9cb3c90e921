// Rotary embedding, one block per token, with the CPU backend's arithmetic (backend/cpu/rope.h):
// the angle of pair i is position * theta_scale^i built by repeated f32 multiplication (one
// thread walks the recurrence: a closed form would round differently at long positions), then
// freq_factors, linear scaling and YaRN's ramp, each operation rounded as the CPU rounds it.
// cos and sin are taken in double and rounded to f32, which is what glibc's cosf / sinf give
// in all but rare cases.
#include "backend/cuda/device_math.cuh"
#include "backend/cuda/kernels.h"

namespace lumen::backend::cuda {

namespace {

constexpr int kThreads = 128;
constexpr int kPairsAtOnce = 8;

template <bool LOADS_FIRST>
__global__ void __launch_bounds__(kThreads)
    rope_kernel(float* x, int64_t row_stride, int64_t n_heads, const int32_t* positions, RopeKernelParams p) {
  extern __shared__ float shared[];
  const int64_t half = p.rope_dims / 2;
  float* theta = shared;           // half values
  float* cos_sin = shared + half;  // 2 * half values
  const int64_t token = blockIdx.x;

  if (threadIdx.x == 0) {
    float t = static_cast<float>(positions[token]);
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
      const float y = __fdiv_rn(__fsub_rn(static_cast<float>(pair), p.corr_low),
                                fmaxf(0.001f, __fsub_rn(p.corr_high, p.corr_low)));
      const float ramp = __fsub_rn(1.0f, fminf(1.0f, fmaxf(0.0f, y)));
      const float mix = __fmul_rn(ramp, p.ext_factor);
      angle =
          __fadd_rn(__fmul_rn(theta_interp, __fsub_rn(1.0f, mix)), __fmul_rn(theta_extrap, mix));
    }
    const double a = static_cast<double>(angle);
    cos_sin[2 * pair] = __fmul_rn(static_cast<float>(cos(a)), p.mscale);
    cos_sin[2 * pair + 1] = __fmul_rn(static_cast<float>(sin(a)), p.mscale);
  }
  __syncthreads();
  // Normal mode rotates (2i, 2i + 1); NeoX (i, i + half).
  const int64_t partner = p.neox ? half : 1;
  const int64_t stride = p.neox ? 1 : 2;
  if constexpr (LOADS_FIRST) {
    // A decode step's token is one block of 128 threads and n_heads * half pairs (1 024 for 32
    // heads of 64): 8 pairs a thread. Loading a pair, rotating it and storing it before the next
    // load costs a memory latency per pair; here a thread loads kPairsAtOnce pairs, then rotates
    // and stores them, with 32-bit index arithmetic. The same operations on each pair.
    const int total = static_cast<int>(n_heads * half), half32 = static_cast<int>(half);
    for (int first = static_cast<int>(threadIdx.x); first < total; first += kThreads * kPairsAtOnce) {
      float* v[kPairsAtOnce];
      float x0[kPairsAtOnce], x1[kPairsAtOnce];
      int pair_of[kPairsAtOnce];
#pragma unroll
      for (int u = 0; u < kPairsAtOnce; ++u) {
        const int i = first + u * kThreads;
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

}  // namespace

void launch_rope(float* x, int64_t row_stride, int64_t n_heads, int64_t n_tokens,
                 const int32_t* positions, const RopeKernelParams& params, cudaStream_t stream) {
  if (n_tokens == 0 || n_heads == 0) return;
  const size_t shared = static_cast<size_t>(3 * (params.rope_dims / 2)) * sizeof(float);
  if (params.loads_first) {
    rope_kernel<true>
        <<<static_cast<unsigned>(n_tokens), kThreads, shared, stream>>>(x, row_stride, n_heads, positions, params);
  } else {
    rope_kernel<false>
        <<<static_cast<unsigned>(n_tokens), kThreads, shared, stream>>>(x, row_stride, n_heads, positions, params);
  }
}

}  // namespace lumen::backend::cuda
