// Activations to f16 for the cuBLAS path. f16 keeps 11 bits of each value (bf16 keeps 8), but
// overflows above 65504: activations are first scaled by a power of two (exact) that brings
// max |x| under 2^14, and cuBLAS multiplies the product back by its inverse (alpha).
#include "backend/cuda/device_math.cuh"
#include "backend/cuda/kernels.h"

namespace lumen::backend::cuda {

namespace {

constexpr int kThreads = 256;

// Non-negative floats order as their bit patterns: atomicMax on the bits is a float max.
__global__ void abs_max_kernel(const float* x, int64_t xs, int64_t n, int64_t cols,
                               unsigned int* amax_bits) {
  const int64_t total = n * cols;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  float local = 0.0f;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += step) {
    local = fmaxf(local, fabsf(x[(i / cols) * xs + i % cols]));
  }
  local = warp_max(local);
  if (threadIdx.x % 32 == 0) atomicMax(amax_bits, __float_as_uint(local));
}

// 2^-k with k >= 0 the smallest that makes amax * 2^-k < 2^14.
__device__ __forceinline__ float scale_for(float amax) {
  if (!(amax >= 16384.0f) || isinf(amax)) return 1.0f;  // NaN / inf: nothing helps
  const int k = ilogbf(amax) - 13;
  return ldexpf(1.0f, -k);
}

__global__ void to_f16_kernel(const float* x, int64_t xs, int64_t n, int64_t cols, float* state,
                              uint16_t* out) {
  const float scale = scale_for(state[0]);  // state[0] holds max |x| (as float bits)
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    state[1] = scale;
    state[2] = 1.0f / scale;  // exact: a power of two
    state[3] = 0.0f;
  }
  const int64_t total = n * cols;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += step) {
    out[i] = float_to_half_bits(x[(i / cols) * xs + i % cols] * scale);
  }
}

}  // namespace

void launch_convert_activations_f16(const float* x, int64_t x_stride, int64_t n_tokens,
                                    int64_t cols, float* scale_state, uint16_t* out,
                                    cudaStream_t stream) {
  if (n_tokens * cols == 0) return;
  cudaMemsetAsync(scale_state, 0, sizeof(float), stream);
  const unsigned grid = grid_for(n_tokens * cols, kThreads);
  abs_max_kernel<<<grid, kThreads, 0, stream>>>(x, x_stride, n_tokens, cols,
                                                reinterpret_cast<unsigned int*>(scale_state));
  to_f16_kernel<<<grid, kThreads, 0, stream>>>(x, x_stride, n_tokens, cols, scale_state, out);
}

}  // namespace lumen::backend::cuda
