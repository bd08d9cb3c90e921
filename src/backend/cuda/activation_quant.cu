// Activation quantization before the integer GEMV, with the CPU backend's rounding
// (backend/cpu/activation_quant.cc): inverse scale 127 / amax, round half to even, Q8_K's
// signed scale from the first element of largest magnitude. The codes, sums and scales come out
// bit for bit as the CPU's, so a weight row times an activation gives the same integer sums.
#include "backend/cuda/device_math.cuh"
#include "backend/cuda/dependent_launch.cuh"
#include "backend/cuda/kernels.h"
#include "backend/cuda/q8_block_quantize.cuh"

namespace lumen::backend::cuda {

namespace {

constexpr int kWarpsPerBlock = 4;

size_t align_up(size_t n) { return (n + 255) / 256 * 256; }

// One warp per 32-value block: lane i quantizes value i.
__global__ void quantize_q8_32_kernel(const float* x, int64_t xs, int64_t n_tokens, int64_t cols,
                                      Q8Activations out, bool with_sum) {
  dependents_may_launch();  // a dependent launch (dependent_launch.cuh): x is the kernel's ahead
  wait_for_prerequisites();
  const int lane = threadIdx.x % 32;
  const int64_t blocks = cols / 32;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kWarpsPerBlock;
  // Whole warps iterate together (the shuffles need all 32 lanes).
  for (int64_t warp = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
       warp < n_tokens * blocks; warp += stride) {
    const int64_t t = warp / blocks, b = warp % blocks;
    quantize_q8_32_warp(x[t * xs + b * 32 + lane], lane, t, b, out, with_sum);
  }
}

// One warp per 256-value super-block: lane i holds values 8i .. 8i + 7.
__global__ void quantize_q8_k_kernel(const float* x, int64_t xs, int64_t n_tokens, int64_t cols,
                                     Q8Activations out) {
  dependents_may_launch();
  wait_for_prerequisites();
  const int lane = threadIdx.x % 32;
  const int64_t blocks = cols / 256;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kWarpsPerBlock;
  for (int64_t warp = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
       warp < n_tokens * blocks; warp += stride) {
    const int64_t t = warp / blocks, b = warp % blocks;
    const float* src = x + t * xs + b * 256 + lane * 8;
    float v[8];
    float amax = 0.0f;
    int index = 1 << 30;  // of the first element with |x| == amax (none yet)
    for (int i = 0; i < 8; ++i) {
      v[i] = src[i];
      if (fabsf(v[i]) > amax) {
        amax = fabsf(v[i]);
        index = lane * 8 + i;
      }
    }
    // Largest magnitude, the lowest index among equals: the CPU's sequential scan keeps the first.
    for (int offset = 16; offset > 0; offset >>= 1) {
      const float other = __shfl_xor_sync(0xffffffffu, amax, offset);
      const int other_index = __shfl_xor_sync(0xffffffffu, index, offset);
      if (other > amax || (other == amax && other_index < index)) {
        amax = other;
        index = other_index;
      }
    }
    int8_t* qs = out.qs + t * cols + b * 256 + lane * 8;
    int32_t* bsums = out.bsums + t * (cols / 16) + b * 16;
    if (amax == 0.0f) {
      for (int i = 0; i < 8; ++i) qs[i] = 0;
      if (lane % 2 == 0) bsums[lane / 2] = 0;
      if (lane == 0) out.d[t * blocks + b] = 0.0f;
      continue;
    }
    const float max = x[t * xs + b * 256 + index];
    const float iscale = __fdiv_rn(-127.0f, max);
    int sum = 0;
    for (int i = 0; i < 8; ++i) {
      const int q = min(127, static_cast<int>(rintf(__fmul_rn(iscale, v[i]))));
      qs[i] = static_cast<int8_t>(q);
      sum += q;
    }
    // Values 16g .. 16g + 15 belong to lanes 2g and 2g + 1.
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    if (lane % 2 == 0) bsums[lane / 2] = sum;
    if (lane == 0) out.d[t * blocks + b] = __fdiv_rn(1.0f, iscale);
  }
}

}  // namespace

size_t q8_activation_bytes(int64_t n_tokens, int64_t cols) {
  const auto t = static_cast<size_t>(n_tokens), c = static_cast<size_t>(cols);
  return align_up(t * c) + 2 * align_up(t * (c / 32) * sizeof(float)) +
         align_up(t * (c / 16) * sizeof(int32_t));
}

Q8Activations carve_q8_activations(void* buffer, int64_t n_tokens, int64_t cols) {
  const auto t = static_cast<size_t>(n_tokens), c = static_cast<size_t>(cols);
  auto* p = static_cast<uint8_t*>(buffer);
  Q8Activations a;
  a.cols = cols;
  a.qs = reinterpret_cast<int8_t*>(p);
  p += align_up(t * c);
  a.d = reinterpret_cast<float*>(p);  // cols / 32 scales (Q8_0/1), or cols / 256 (Q8_K)
  p += align_up(t * (c / 32) * sizeof(float));
  a.s = reinterpret_cast<float*>(p);
  p += align_up(t * (c / 32) * sizeof(float));
  a.bsums = reinterpret_cast<int32_t*>(p);
  return a;
}

void launch_quantize_activations(tensor::DType act, const float* x, int64_t x_stride,
                                 int64_t n_tokens, int64_t cols, const Q8Activations& out,
                                 cudaStream_t stream) {
  if (n_tokens == 0) return;
  const int threads = 32 * kWarpsPerBlock;
  if (act == tensor::DType::Q8_K) {
    const int64_t warps = n_tokens * (cols / 256);
    launch_kernel(quantize_q8_k_kernel, grid_for(warps * 32, threads), threads, 0, stream, x, x_stride, n_tokens, cols,
                  out);
    return;
  }
  const int64_t warps = n_tokens * (cols / 32);
  launch_kernel(quantize_q8_32_kernel, grid_for(warps * 32, threads), threads, 0, stream, x, x_stride, n_tokens, cols,
                out, act == tensor::DType::Q8_1);
}

}  // namespace lumen::backend::cuda
