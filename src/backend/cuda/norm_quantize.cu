// Producers that quantize their own output for the matmul after them (fused_input_quantization.h
// says when), and an RMSNorm built for a decode step's few rows.
//
// rms_norm_rows_kernel: a block of 256 threads per row, as elementwise.cu's rms_norm_kernel, with
// the same sum in the same order (thread t adds the squares of elements t, t + 256, ... in
// order, then the warps' sums, then thread 0 the 8 warps' in order), so the same bits. What
// differs is when it loads: a thread issues every load of its elements (and their norm weights)
// before it uses one and keeps the values in registers, so a row costs one memory latency, not
// one per element a thread, then another per element for the second pass (an H200 measured 8.4
// us for the old kernel on a 2048-value row, 2.8 us for a quantization of the same row). Rows of
// up to 4096 values (16 a thread); longer rows keep elementwise.cu's kernel.
//
// swiglu_quantize_kernel: a block of 256 threads per 256 values of a row, SwiGLU's expression
// (elementwise.cu's, operation by operation), the result written and quantized.
//
// Quantization (q8_block_quantize.cuh, the standalone kernel's arithmetic): at element index
// c = 256 k + 32 w + lane, warp w of the block holds one 32-value block in each step k, and the
// block of 256 threads one Q8_K super-block.
#include <cmath>

#include "backend/cuda/dependent_launch.cuh"
#include "backend/cuda/device_math.cuh"
#include "backend/cuda/kernels.h"
#include "backend/cuda/q8_block_quantize.cuh"

namespace lumen::backend::cuda {

namespace {

constexpr int kRowThreads = kQ8kThreads;  // 256: rms_norm_kernel's block, one Q8_K super-block
constexpr int kMaxPerThread = 16;

enum Quant : int { kNoQuant = 0, kQ8_0 = 1, kQ8_1 = 2, kQ8K = 3 };

template <int QUANT>
__device__ __forceinline__ void quantize_step(float v, int64_t row, int64_t base, int64_t cols, const Q8Activations& q,
                                              Q8kLead* shared) {
  if constexpr (QUANT == kQ8_0 || QUANT == kQ8_1) {
    const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
    const int64_t first = base + 32 * warp;
    if (first < cols) quantize_q8_32_warp(v, lane, row, first / 32, q, QUANT == kQ8_1);  // warp-uniform
  } else if constexpr (QUANT == kQ8K) {
    // cols % 256 == 0: a step is a whole super-block or past the row (block-uniform)
    if (base < cols) quantize_q8_k_block(v, row, base / 256, q, shared);
  }
}

template <bool ADD, int PER, int QUANT>
__global__ void __launch_bounds__(kRowThreads)
    rms_norm_rows_kernel(const float* x, int64_t xs, const float* b, int64_t bs, float* added, int64_t adds,
                         const float* weight, float eps, float* y, int64_t ys, int64_t cols, Q8Activations q) {
  __shared__ double partial[kRowThreads / 32];
  __shared__ float shared_scale;
  __shared__ Q8kLead leads[kRowThreads / 32];
  // A dependent launch (dependent_launch.cuh): everything it reads may be the kernels' ahead.
  dependents_may_launch();
  wait_for_prerequisites();
  const int64_t row = blockIdx.x;
  const int t = static_cast<int>(threadIdx.x);
  float v[PER], w[PER];
#pragma unroll
  for (int k = 0; k < PER; ++k) {
    const int64_t c = t + int64_t{kRowThreads} * k;
    v[k] = c < cols ? x[row * xs + c] : 0.0f;
  }
  if constexpr (ADD) {
    float other[PER];
#pragma unroll
    for (int k = 0; k < PER; ++k) {
      const int64_t c = t + int64_t{kRowThreads} * k;
      other[k] = c < cols ? b[row * bs + c] : 0.0f;
    }
    // Every load of a and b is done before the first store: added may alias either.
#pragma unroll
    for (int k = 0; k < PER; ++k) {
      const int64_t c = t + int64_t{kRowThreads} * k;
      v[k] = __fadd_rn(v[k], other[k]);
      if (c < cols) added[row * adds + c] = v[k];
    }
  }
#pragma unroll
  for (int k = 0; k < PER; ++k) {
    const int64_t c = t + int64_t{kRowThreads} * k;
    w[k] = c < cols ? weight[c] : 0.0f;
  }
  double sum = 0.0;
#pragma unroll
  for (int k = 0; k < PER; ++k) {
    if (t + int64_t{kRowThreads} * k < cols) sum += static_cast<double>(__fmul_rn(v[k], v[k]));
  }
  const float scale = rms_norm_scale(sum, cols, eps, partial, &shared_scale);
#pragma unroll
  for (int k = 0; k < PER; ++k) {
    const int64_t c = t + int64_t{kRowThreads} * k;
    const float out = __fmul_rn(__fmul_rn(v[k], scale), w[k]);
    if (c < cols) y[row * ys + c] = out;
    if constexpr (QUANT != kNoQuant) quantize_step<QUANT>(out, row, int64_t{kRowThreads} * k, cols, q, leads);
  }
}

template <int QUANT>
__global__ void __launch_bounds__(kRowThreads)
    swiglu_quantize_kernel(const float* gate, int64_t gs, const float* up, int64_t us, float* out, int64_t os,
                           int64_t cols, int64_t chunks, Q8Activations q) {
  __shared__ Q8kLead leads[kRowThreads / 32];
  dependents_may_launch();
  wait_for_prerequisites();
  const int64_t row = blockIdx.x / chunks, base = (blockIdx.x % chunks) * int64_t{kRowThreads};
  const int64_t c = base + threadIdx.x;
  float v = 0.0f;
  if (c < cols) {
    v = swiglu_value(gate[row * gs + c], up[row * us + c]);
    out[row * os + c] = v;
  }
  quantize_step<QUANT>(v, row, base, cols, q, leads);
}

template <bool ADD, int PER>
void launch_norm_for(const float* x, int64_t xs, const float* b, int64_t bs, float* added, int64_t adds,
                     const float* weight, float eps, float* y, int64_t ys, int64_t rows, int64_t cols, int quant,
                     const Q8Activations& q, cudaStream_t stream) {
  const auto grid = static_cast<unsigned>(rows);
  switch (quant) {
    case kQ8_0:
      launch_kernel(rms_norm_rows_kernel<ADD, PER, kQ8_0>, grid, kRowThreads, 0, stream, x, xs, b, bs, added, adds,
                    weight, eps, y, ys, cols, q);
      return;
    case kQ8_1:
      launch_kernel(rms_norm_rows_kernel<ADD, PER, kQ8_1>, grid, kRowThreads, 0, stream, x, xs, b, bs, added, adds,
                    weight, eps, y, ys, cols, q);
      return;
    case kQ8K:
      launch_kernel(rms_norm_rows_kernel<ADD, PER, kQ8K>, grid, kRowThreads, 0, stream, x, xs, b, bs, added, adds,
                    weight, eps, y, ys, cols, q);
      return;
    default:
      launch_kernel(rms_norm_rows_kernel<ADD, PER, kNoQuant>, grid, kRowThreads, 0, stream, x, xs, b, bs, added, adds,
                    weight, eps, y, ys, cols, q);
  }
}

template <bool ADD>
bool launch_norm(const float* x, int64_t xs, const float* b, int64_t bs, float* added, int64_t adds,
                 const float* weight, float eps, float* y, int64_t ys, int64_t rows, int64_t cols, int quant,
                 const Q8Activations& q, cudaStream_t stream) {
  const int64_t per = (cols + kRowThreads - 1) / kRowThreads;
  if (per <= 1) {
    launch_norm_for<ADD, 1>(x, xs, b, bs, added, adds, weight, eps, y, ys, rows, cols, quant, q, stream);
  } else if (per <= 2) {
    launch_norm_for<ADD, 2>(x, xs, b, bs, added, adds, weight, eps, y, ys, rows, cols, quant, q, stream);
  } else if (per <= 4) {
    launch_norm_for<ADD, 4>(x, xs, b, bs, added, adds, weight, eps, y, ys, rows, cols, quant, q, stream);
  } else if (per <= 8) {
    launch_norm_for<ADD, 8>(x, xs, b, bs, added, adds, weight, eps, y, ys, rows, cols, quant, q, stream);
  } else if (per <= kMaxPerThread) {
    launch_norm_for<ADD, kMaxPerThread>(x, xs, b, bs, added, adds, weight, eps, y, ys, rows, cols, quant, q, stream);
  } else {
    return false;
  }
  return true;
}

// Whole blocks of the quantized type only.
bool quantizable(int quant, int64_t cols) { return quant == kNoQuant || cols % (quant == kQ8K ? 256 : 32) == 0; }

int quant_of(const tensor::DType* act) {
  if (act == nullptr) return kNoQuant;
  switch (*act) {
    case tensor::DType::Q8_0: return kQ8_0;
    case tensor::DType::Q8_1: return kQ8_1;
    case tensor::DType::Q8_K: return kQ8K;
    default: return -1;
  }
}

}  // namespace

bool rms_norm_rows_supported(int64_t cols) { return cols > 0 && cols <= int64_t{kRowThreads} * kMaxPerThread; }

bool launch_rms_norm_rows(const float* x, int64_t x_stride, const float* weight, float eps, float* y, int64_t y_stride,
                          int64_t rows, int64_t cols, const tensor::DType* act, const Q8Activations& q,
                          cudaStream_t stream) {
  const int quant = quant_of(act);
  if (quant < 0 || !quantizable(quant, cols) || !rms_norm_rows_supported(cols)) return false;
  if (rows == 0) return true;
  return launch_norm<false>(x, x_stride, nullptr, 0, nullptr, 0, weight, eps, y, y_stride, rows, cols, quant, q,
                            stream);
}

bool launch_add_rms_norm_rows(const float* a, int64_t a_stride, const float* b, int64_t b_stride, float* sum,
                              int64_t sum_stride, const float* weight, float eps, float* y, int64_t y_stride,
                              int64_t rows, int64_t cols, const tensor::DType* act, const Q8Activations& q,
                              cudaStream_t stream) {
  const int quant = quant_of(act);
  if (quant < 0 || !quantizable(quant, cols) || !rms_norm_rows_supported(cols)) return false;
  if (rows == 0) return true;
  return launch_norm<true>(a, a_stride, b, b_stride, sum, sum_stride, weight, eps, y, y_stride, rows, cols, quant, q,
                           stream);
}

bool launch_swiglu_quantized(const float* gate, int64_t gate_stride, const float* up, int64_t up_stride, float* out,
                             int64_t out_stride, int64_t rows, int64_t cols, tensor::DType act, const Q8Activations& q,
                             cudaStream_t stream) {
  const int quant = quant_of(&act);
  if (quant <= 0 || !quantizable(quant, cols)) return false;
  if (rows == 0 || cols == 0) return true;
  const int64_t chunks = (cols + kRowThreads - 1) / kRowThreads;
  const auto grid = static_cast<unsigned>(rows * chunks);
  switch (quant) {
    case kQ8_0:
      launch_kernel(swiglu_quantize_kernel<kQ8_0>, grid, kRowThreads, 0, stream, gate, gate_stride, up, up_stride, out,
                    out_stride, cols, chunks, q);
      break;
    case kQ8_1:
      launch_kernel(swiglu_quantize_kernel<kQ8_1>, grid, kRowThreads, 0, stream, gate, gate_stride, up, up_stride, out,
                    out_stride, cols, chunks, q);
      break;
    default:
      launch_kernel(swiglu_quantize_kernel<kQ8K>, grid, kRowThreads, 0, stream, gate, gate_stride, up, up_stride, out,
                    out_stride, cols, chunks, q);
  }
  return true;
}

}  // namespace lumen::backend::cuda
