// GEMV for decode and small batches: one warp per weight row, up to kGemvMaxTokens tokens per
// pass, so each weight byte is read from memory once per pass for all of them (decode is a
// stream over the weights; the activations, a few KB per token, stay in L1/L2).
//
// Quantized weights meet activations quantized the CPU's way (activation_quant.cu) and are
// multiplied with __dp4a (4 int8 products per instruction). The integer sum of each block is
// exact, and each block's float value is formed as the CPU forms it (backend/cpu/
// matmul_scalar.cc), so a row's result differs from the CPU's only in the order in which block
// values are added: lane i adds blocks i, i + 32, ... in order, then the warp adds its lanes
// in a fixed butterfly. That order does not depend on how many tokens share the pass, so a
// token's result does not depend on its batch.
//
// Legacy formats: lane = one 32-value block. K-quants: lane = one 32-value part of a 256-value
// super-block; the 8 lanes of a super-block add their integer sums by shuffles and one of them
// forms the super-block's value: d * xd * sum(scale * dot) - dmin * xd * sum(min * bsum). The
// row loops are gemv_rows.cuh's, which the experts' GEMV (gemv_experts.cu) shares.
#include "backend/cuda/block_decode.h"
#include "backend/cuda/dependent_launch.cuh"
#include "backend/cuda/device_math.cuh"
#include "backend/cuda/gemv_common.cuh"
#include "backend/cuda/gemv_rows.cuh"
#include "backend/cuda/kernels.h"

namespace lumen::backend::cuda {

namespace {

using tensor::DType;

constexpr int kRowsPerBlock = 4;  // one warp per row
constexpr int kThreads = 32 * kRowsPerBlock;

template <DType F>
__global__ void gemv_legacy_kernel(const uint8_t* weights, size_t row_bytes, int64_t rows, int64_t cols,
                                   Q8Activations x, int64_t t0, int nt, float* y, int64_t ys) {
  dependents_may_launch();  // a dependent launch (dependent_launch.cuh): x is the kernel's ahead
  wait_for_prerequisites();
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
  if (row >= rows) return;  // the whole warp
  float acc[kGemvMaxTokens] = {};
  legacy_row_dot<F>(
      weights + row * row_bytes, cols, x, [t0](int t) { return t0 + t; }, nt, acc, static_cast<int>(threadIdx.x % 32));
  store_warp_results<kGemvMaxTokens>(acc, nt, y, ys, row);
}

// K-quants: lane = unit j = lane % 8 of super-block (u0 + lane) / 8.
template <DType F>
__global__ void gemv_kquant_kernel(const uint8_t* weights, size_t row_bytes, int64_t rows, int64_t cols,
                                   Q8Activations x, int64_t t0, int nt, float* y, int64_t ys) {
  dependents_may_launch();  // a dependent launch (dependent_launch.cuh): x is the kernel's ahead
  wait_for_prerequisites();
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
  if (row >= rows) return;
  float acc[kGemvMaxTokens] = {};
  kquant_row_dot<F>(
      weights + row * row_bytes, cols, x, [t0](int t) { return t0 + t; }, nt, acc, static_cast<int>(threadIdx.x % 32));
  store_warp_results<kGemvMaxTokens>(acc, nt, y, ys, row);
}

template <DType F>
__global__ void gemv_float_kernel(const uint8_t* weights, size_t row_bytes, int64_t rows, int64_t cols, const float* x,
                                  int64_t xs, int nt, float* y, int64_t ys) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
  if (row >= rows) return;
  const uint8_t* wrow = weights + row * row_bytes;
  float acc[kGemvMaxTokens] = {};
  for (int64_t c = threadIdx.x % 32; c < cols; c += 32) {
    const float w = hd::float_element<F>(wrow, c);
#pragma unroll
    for (int t = 0; t < kGemvMaxTokens; ++t) {
      if (t < nt) acc[t] = fmaf(w, x[t * xs + c], acc[t]);
    }
  }
  store_warp_results<kGemvMaxTokens>(acc, nt, y, ys, row);
}

unsigned row_blocks(int64_t rows) {
  return static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock);
}

}  // namespace

tensor::DType gemv_activation_type(tensor::DType weight_type) {
  switch (weight_type) {
    case DType::Q4_0:
    case DType::Q5_0:
    case DType::Q8_0:
    case DType::IQ4_NL:
    case DType::MXFP4: return DType::Q8_0;
    case DType::Q4_1:
    case DType::Q5_1: return DType::Q8_1;
    case DType::Q2_K:
    case DType::Q3_K:
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K:
    case DType::IQ4_XS: return DType::Q8_K;
    case DType::F32:
    case DType::F16:
    case DType::BF16:
      return DType::F32;
    default:
      return DType::I8;  // no GEMV kernel
  }
}

void launch_gemv_quantized(tensor::DType type, const void* w, size_t row_bytes, int64_t rows,
                           int64_t cols, const Q8Activations& x, int64_t token_offset,
                           int64_t n_tokens, float* y, int64_t y_stride, cudaStream_t stream) {
  if (rows == 0 || n_tokens == 0) return;
  const auto* p = static_cast<const uint8_t*>(w);
  const int nt = static_cast<int>(n_tokens);
  const unsigned grid = row_blocks(rows);
  const auto launch = [&]<DType F>() {
    if constexpr (hd::kIsKQuant<F>) {
      launch_kernel(gemv_kquant_kernel<F>, grid, kThreads, 0, stream, p, row_bytes, rows, cols, x, token_offset, nt, y,
                    y_stride);
    } else {
      launch_kernel(gemv_legacy_kernel<F>, grid, kThreads, 0, stream, p, row_bytes, rows, cols, x, token_offset, nt, y,
                    y_stride);
    }
  };
  dispatch_quantized_gemv(type, launch);  // the backend refuses other types before launching
}

void launch_gemv_float(tensor::DType type, const void* w, size_t row_bytes, int64_t rows,
                       int64_t cols, const float* x, int64_t x_stride, int64_t n_tokens, float* y,
                       int64_t y_stride, cudaStream_t stream) {
  if (rows == 0 || n_tokens == 0) return;
  const auto* p = static_cast<const uint8_t*>(w);
  const int nt = static_cast<int>(n_tokens);
  const unsigned grid = row_blocks(rows);
  switch (type) {
    case DType::F32:
      gemv_float_kernel<DType::F32>
          <<<grid, kThreads, 0, stream>>>(p, row_bytes, rows, cols, x, x_stride, nt, y, y_stride);
      break;
    case DType::F16:
      gemv_float_kernel<DType::F16>
          <<<grid, kThreads, 0, stream>>>(p, row_bytes, rows, cols, x, x_stride, nt, y, y_stride);
      break;
    case DType::BF16:
      gemv_float_kernel<DType::BF16>
          <<<grid, kThreads, 0, stream>>>(p, row_bytes, rows, cols, x, x_stride, nt, y, y_stride);
      break;
    default:
      break;
  }
}

}  // namespace lumen::backend::cuda
