// Activations to f16 for the cuBLAS path. f16 keeps 11 bits of each value (bf16 keeps 8), but
// overflows above 65504: activations are first scaled by a power of two (exact) that brings
// max |x| under 2^14, and cuBLAS multiplies the product back by its inverse (alpha).
#include <algorithm>

#include "backend/cuda/device_math.cuh"
#include "backend/cuda/kernels.h"

namespace lumen::backend::cuda {

namespace {

constexpr int kThreads = 256;

// Blocks of the two kernels: x covers a row's columns (a block's 256 threads, up to 8 blocks), y
// the rows (a block-row per row, up to 65535, then rows again). Each thread walks its row and
// column with additions only: the flat index's 64-bit division per element cost more than the
// element's load and store.
dim3 grid_over(int64_t rows, int64_t cols) {
  const int64_t across = std::min<int64_t>((cols + kThreads - 1) / kThreads, 8);
  return dim3(static_cast<unsigned>(std::max<int64_t>(across, 1)),
              static_cast<unsigned>(std::clamp<int64_t>(rows, 1, 65535)));
}

// Non-negative floats order as their bit patterns: atomicMax on the bits is a float max. The
// block's max first, then one atomic a block (one a warp serialised thousands on one address).
__global__ void __launch_bounds__(kThreads)
    abs_max_kernel(const float* x, int64_t xs, int64_t n, int64_t cols, unsigned int* amax_bits) {
  __shared__ float warps[kThreads / 32];
  float local = 0.0f;
  for (int64_t r = blockIdx.y; r < n; r += gridDim.y) {
    for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < cols;
         c += static_cast<int64_t>(gridDim.x) * blockDim.x) {
      local = fmaxf(local, fabsf(x[r * xs + c]));
    }
  }
  local = warp_max(local);
  if (threadIdx.x % 32 == 0) warps[threadIdx.x / 32] = local;
  __syncthreads();
  if (threadIdx.x == 0) {
    float block = warps[0];
    for (int w = 1; w < kThreads / 32; ++w) block = fmaxf(block, warps[w]);
    atomicMax(amax_bits, __float_as_uint(block));
  }
}

// 2^-k with k >= 0 the smallest that makes amax * 2^-k < 2^14.
__device__ __forceinline__ float scale_for(float amax) {
  if (!(amax >= 16384.0f) || isinf(amax)) return 1.0f;  // NaN / inf: nothing helps
  const int k = ilogbf(amax) - 13;
  return ldexpf(1.0f, -k);
}

__global__ void __launch_bounds__(kThreads)
    to_f16_kernel(const float* x, int64_t xs, int64_t n, int64_t cols, float* state, uint16_t* out) {
  const float scale = scale_for(state[0]);  // state[0] holds max |x| (as float bits)
  if (blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0) {
    state[1] = scale;
    state[2] = 1.0f / scale;  // exact: a power of two
    state[3] = 0.0f;
  }
  for (int64_t r = blockIdx.y; r < n; r += gridDim.y) {
    for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < cols;
         c += static_cast<int64_t>(gridDim.x) * blockDim.x) {
      out[r * cols + c] = float_to_half_bits(x[r * xs + c] * scale);
    }
  }
}

}  // namespace

void launch_convert_activations_f16(const float* x, int64_t x_stride, int64_t n_tokens,
                                    int64_t cols, float* scale_state, uint16_t* out,
                                    cudaStream_t stream) {
  if (n_tokens * cols == 0) return;
  cudaMemsetAsync(scale_state, 0, sizeof(float), stream);
  const dim3 grid = grid_over(n_tokens, cols);
  abs_max_kernel<<<grid, kThreads, 0, stream>>>(x, x_stride, n_tokens, cols,
                                                reinterpret_cast<unsigned int*>(scale_state));
  to_f16_kernel<<<grid, kThreads, 0, stream>>>(x, x_stride, n_tokens, cols, scale_state, out);
}

}  // namespace lumen::backend::cuda
