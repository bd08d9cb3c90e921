#pragma once
// Device helpers shared by the kernels: exact 16-bit float conversions, warp reductions with a
// fixed order (so a result never depends on timing), loads from the 2-byte aligned blocks of
// the quantized formats, and launch geometry.
//
// Where a kernel must round like the CPU backend it spells each operation with a _rn
// intrinsic: nvcc contracts a * b + c into one FMA by default, which rounds once instead of
// twice; the intrinsics are never contracted.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace lumen::backend::cuda {

__device__ __forceinline__ float half_bits_to_float(uint16_t bits) {
  return __half2float(__ushort_as_half(bits));
}

// Round to nearest even, overflow to infinity: what tensor::float_to_fp16 does.
__device__ __forceinline__ uint16_t float_to_half_bits(float x) {
  return __half_as_ushort(__float2half_rn(x));
}

__device__ __forceinline__ float round_to_half(float x) { return __half2float(__float2half_rn(x)); }

__device__ __forceinline__ float bf16_bits_to_float(uint16_t bits) {
  return __uint_as_float(static_cast<uint32_t>(bits) << 16);
}

// SwiGLU of one gate value g and its up value u, silu(g) * u, one spelling for every kernel that
// computes it (the plain and quantizing SwiGLU launches, the gate/up GEMV's epilogue), so all give
// the same bits.
__device__ __forceinline__ float swiglu_value(float g, float u) {
  const float silu = __fdiv_rn(g, __fadd_rn(1.0f, expf(-g)));
  return __fmul_rn(silu, u);
}

// gpt-oss's clamped SwiGLU (Glu::SwigluOai): g = min(gate, 7), u = clamp(up, -7, 7), then
// g * sigmoid(1.702 g) * (u + 1), the CPU's expression (backend/cpu/activation.cc) operation by
// operation; the comparisons are std::min's and std::clamp's, so a NaN passes through as there.
__device__ __forceinline__ float swiglu_oai_value(float gate, float up) {
  constexpr float kAlpha = 1.702f, kLimit = 7.0f;
  const float g = kLimit < gate ? kLimit : gate;
  const float u = up < -kLimit ? -kLimit : (kLimit < up ? kLimit : up);
  const float sigmoid_denominator = __fadd_rn(1.0f, expf(__fmul_rn(kAlpha, -g)));
  return __fmul_rn(__fdiv_rn(g, sigmoid_denominator), __fadd_rn(u, 1.0f));
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ __forceinline__ double warp_sum(double v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ __forceinline__ int warp_sum(int v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
  for (int offset = 16; offset > 0; offset >>= 1)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// The sum of every thread's v over the block (whole warps, at most 32 of them), returned to all
// of them: warp sums, then the warps' in order. `partial` holds a double per warp in shared
// memory; the last barrier lets the next call reuse it.
__device__ __forceinline__ double block_sum(double v, double* partial) {
  v = warp_sum(v);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  double total = 0.0;
  for (unsigned w = 0; w < blockDim.x / 32; ++w) total = __dadd_rn(total, partial[w]);
  __syncthreads();
  return total;
}

// RMSNorm's scale 1 / sqrt(mean of squares + eps) from each thread's sum of its squares (in
// double), for every thread of the block: the warps' sums, then thread 0 adds them in warp order.
// One spelling for elementwise.cu's row kernel and norm_quantize.cu's, so both give the same bits.
// `partial` holds a double per warp in shared memory; `scale` is one float of it.
__device__ __forceinline__ float rms_norm_scale(double sum, int64_t cols, float eps, double* partial, float* scale) {
  sum = warp_sum(sum);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = sum;
  __syncthreads();
  if (threadIdx.x == 0) {
    double total = 0.0;
    for (unsigned w = 0; w < blockDim.x / 32; ++w) total += partial[w];
    const auto mean = static_cast<float>(total / static_cast<double>(cols));
    *scale = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(mean, eps)));
  }
  __syncthreads();
  return *scale;
}

// A block's row of n values: their mean and the sum of their squared deviations from it, both in
// double (each thread sums a strided part, then block_sum): the LayerNorms' two passes
// (encoder_ops.cu, rwkv7.cu; tests/unit/cuda_host replays the order).
__device__ __forceinline__ void block_row_moments(const float* x, int64_t n, double* partial, double& mean,
                                                  double& squares) {
  double sum = 0.0;
  for (int64_t c = threadIdx.x; c < n; c += blockDim.x) sum = __dadd_rn(sum, static_cast<double>(x[c]));
  mean = __ddiv_rn(block_sum(sum, partial), static_cast<double>(n));
  double deviations = 0.0;
  for (int64_t c = threadIdx.x; c < n; c += blockDim.x) {
    const double d = __dsub_rn(static_cast<double>(x[c]), mean);
    deviations = __dadd_rn(deviations, __dmul_rn(d, d));
  }
  squares = block_sum(deviations, partial);
}

// Sum over the 8 lanes of an aligned group of 8 (lanes 8k .. 8k + 7); every lane gets it.
__device__ __forceinline__ int group8_sum(int v) {
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  v += __shfl_xor_sync(0xffffffffu, v, 2);
  v += __shfl_xor_sync(0xffffffffu, v, 4);
  return v;
}

// Four bytes from an address that is only 2-byte aligned (blocks of 18, 34 or 210 bytes).
__device__ __forceinline__ uint32_t load_u32_align2(const uint8_t* p) {
  const auto* h = reinterpret_cast<const uint16_t*>(p);
  return static_cast<uint32_t>(h[0]) | (static_cast<uint32_t>(h[1]) << 16);
}

__device__ __forceinline__ uint16_t load_u16(const uint8_t* p) {
  return *reinterpret_cast<const uint16_t*>(p);
}

// Blocks for a grid-stride loop over n items with `threads` per block.
inline unsigned grid_for(int64_t n, int threads) {
  const int64_t blocks = (n + threads - 1) / threads;
  constexpr int64_t kMaxBlocks = int64_t{1} << 20;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > kMaxBlocks ? kMaxBlocks : blocks));
}

}  // namespace lumen::backend::cuda
