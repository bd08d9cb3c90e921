// GEMV that streams the weights from HBM: one weight row per block of 4 warps, read with 16-byte
// loads, every load of a tile issued before the first is used, so each thread keeps several
// 16-byte loads in flight (gemv.cu's kernels give a row one warp and load 2 or 4 bytes at a time,
// which leaves a decode step far below the memory's bandwidth: BENCHMARKS.md, "CUDA").
//
// Quantized rows are staged a tile (8192 values) at a time through shared memory, since their
// blocks (18, 22, 34, 84, 110, 210 bytes) straddle 16-byte vectors; the threads then take the
// tile's blocks (legacy) or 32-value units (K-quants, 8 consecutive threads per super-block) in
// turn, with block_decode.h's arithmetic, as gemv.cu does. Float rows need no staging: each
// thread converts the values of its own vectors.
//
// Each block's term is gemv.cu's, only the order of adding terms differs (thread i adds the
// tile's blocks i, i + 128, ... over the tiles in order, then the warps' sums are added in a fixed
// order): results are deterministic, and a token's does not depend on its batch. gemv.cu's
// kernels remain the reference (tests/unit/backend_cuda/stream_gemv_test.cc) and the fallback
// for rows that are not whole 16-byte vectors.
#include <cstdint>

#include "backend/cuda/block_decode.h"
#include "backend/cuda/dependent_launch.cuh"
#include "backend/cuda/device_math.cuh"
#include "backend/cuda/gemv_common.cuh"
#include "backend/cuda/gemv_tile_dot.cuh"
#include "backend/cuda/kernels.h"

namespace lumen::backend::cuda {

namespace {

using tensor::DType;

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
// At least this many blocks per SM (16 warps): caps registers at 128 per thread, leaving room
// for the loads in flight while keeping enough rows in flight per SM.
constexpr int kMinBlocksPerSm = 4;
constexpr int kTileValues = 8192;

template <DType F>
constexpr int kValuesPerBlock = hd::kIsKQuant<F> ? 256 : 32;
template <DType F>
constexpr int kTileBlocks = kTileValues / kValuesPerBlock<F>;
template <DType F>
constexpr int kTileVectors = kTileBlocks<F>* hd::kBlockBytes<F> / 16;
// A tile (256 legacy blocks or 32 super-blocks) is whole 16-byte vectors for every block size, so
// a row that is whole vectors splits into tiles that are.
static_assert(kTileBlocks<DType::Q4_0> * hd::kBlockBytes<DType::Q4_0> % 16 == 0 &&
              kTileBlocks<DType::Q5_0> * hd::kBlockBytes<DType::Q5_0> % 16 == 0 &&
              kTileBlocks<DType::Q8_0> * hd::kBlockBytes<DType::Q8_0> % 16 == 0 &&
              kTileBlocks<DType::Q2_K> * hd::kBlockBytes<DType::Q2_K> % 16 == 0 &&
              kTileBlocks<DType::Q3_K> * hd::kBlockBytes<DType::Q3_K> % 16 == 0 &&
              kTileBlocks<DType::Q6_K> * hd::kBlockBytes<DType::Q6_K> % 16 == 0 &&
              kTileBlocks<DType::MXFP4> * hd::kBlockBytes<DType::MXFP4> % 16 == 0);
template <DType F>
constexpr int kLoadsPerThread = (kTileVectors<F> + kThreads - 1) / kThreads;

// Copies vectors [0, n) of src to dst: all of a thread's loads, then its stores.
template <DType F>
__device__ __forceinline__ void stage_tile(const uint4* __restrict__ src, uint4* __restrict__ dst, int n) {
  uint4 v[kLoadsPerThread<F>];
#pragma unroll
  for (int k = 0; k < kLoadsPerThread<F>; ++k) {
    const int i = static_cast<int>(threadIdx.x) + k * kThreads;
    if (i < n) v[k] = __ldg(src + i);
  }
#pragma unroll
  for (int k = 0; k < kLoadsPerThread<F>; ++k) {
    const int i = static_cast<int>(threadIdx.x) + k * kThreads;
    if (i < n) dst[i] = v[k];
  }
}

// Adds acc[t] over the block's threads (each warp's butterfly, then the warps in order) and
// writes token t's sum to y[t * ys + row], for t < nt <= NT.
template <int NT>
__device__ __forceinline__ void store_block_results(const float* acc, int nt, float* y, int64_t ys, int64_t row) {
  __shared__ float partial[kWarps][NT];
  const int warp = static_cast<int>(threadIdx.x) / 32;
#pragma unroll
  for (int t = 0; t < NT; ++t) {
    if (t < nt) {
      const float sum = warp_sum(acc[t]);
      if (threadIdx.x % 32 == 0) partial[warp][t] = sum;
    }
  }
  __syncthreads();
  if (static_cast<int>(threadIdx.x) < nt) {
    float total = partial[0][threadIdx.x];
#pragma unroll
    for (int w = 1; w < kWarps; ++w) total = __fadd_rn(total, partial[w][threadIdx.x]);
    y[static_cast<int64_t>(threadIdx.x) * ys + row] = total;
  }
}

template <DType F, int NT>
__global__ void __launch_bounds__(kThreads, kMinBlocksPerSm)
    gemv_stream_legacy_kernel(const uint8_t* __restrict__ weights, size_t row_bytes, int64_t cols, Q8Activations x,
                              int64_t t0, int nt, float* __restrict__ y, int64_t ys) {
  __shared__ uint4 tile[kTileVectors<F>];
  const int64_t row = blockIdx.x;
  const auto* wrow = reinterpret_cast<const uint4*>(weights + row * static_cast<int64_t>(row_bytes));
  const auto* staged = reinterpret_cast<const uint8_t*>(tile);
  const int64_t blocks = cols / 32;
  const int64_t vectors = static_cast<int64_t>(row_bytes) / 16;
  float acc[NT] = {};
  for (int64_t b0 = 0, v0 = 0; b0 < blocks; b0 += kTileBlocks<F>, v0 += kTileVectors<F>) {
    const int n_blocks = static_cast<int>(min(static_cast<int64_t>(kTileBlocks<F>), blocks - b0));
    stage_tile<F>(wrow + v0, tile, static_cast<int>(min(static_cast<int64_t>(kTileVectors<F>), vectors - v0)));
    __syncthreads();
    legacy_tile_dot<F, NT, kThreads>(staged, n_blocks, b0, cols, x, t0, nt, static_cast<int>(threadIdx.x), acc);
    __syncthreads();  // the tile is read before the next one overwrites it
  }
  store_block_results<NT>(acc, nt, y, ys, row);
}

template <DType F, int NT>
__global__ void __launch_bounds__(kThreads, kMinBlocksPerSm)
    gemv_stream_kquant_kernel(const uint8_t* __restrict__ weights, size_t row_bytes, int64_t cols, Q8Activations x,
                              int64_t t0, int nt, float* __restrict__ y, int64_t ys) {
  __shared__ uint4 tile[kTileVectors<F>];
  const int64_t row = blockIdx.x;
  const auto* wrow = reinterpret_cast<const uint4*>(weights + row * static_cast<int64_t>(row_bytes));
  const auto* staged = reinterpret_cast<const uint8_t*>(tile);
  const int64_t supers = cols / 256;
  const int64_t vectors = static_cast<int64_t>(row_bytes) / 16;
  float acc[NT] = {};
  for (int64_t s0 = 0, v0 = 0; s0 < supers; s0 += kTileBlocks<F>, v0 += kTileVectors<F>) {
    const int n_units = 8 * static_cast<int>(min(static_cast<int64_t>(kTileBlocks<F>), supers - s0));
    stage_tile<F>(wrow + v0, tile, static_cast<int>(min(static_cast<int64_t>(kTileVectors<F>), vectors - v0)));
    __syncthreads();
    kquant_tile_dot<F, NT, kThreads>(staged, n_units, s0, cols, x, t0, nt, static_cast<int>(threadIdx.x), acc);
    __syncthreads();
  }
  store_block_results<NT>(acc, nt, y, ys, row);
}

// Float rows: thread i takes vectors i, i + 128, ..., kVectorsInFlight of them per step, loaded
// before any is used.
constexpr int kVectorsInFlight = 4;

template <DType F, int NT>
__global__ void __launch_bounds__(kThreads, kMinBlocksPerSm)
    gemv_stream_float_kernel(const uint8_t* __restrict__ weights, size_t row_bytes, int64_t cols,
                             const float* __restrict__ x, int64_t xs, int nt, float* __restrict__ y, int64_t ys,
                             bool prefetch) {
  constexpr int kValues = kVectorValues<F>;
  dependents_may_launch();
  const int64_t row = blockIdx.x;
  const auto* wrow = reinterpret_cast<const uint4*>(weights + row * static_cast<int64_t>(row_bytes));
  const int64_t vectors = cols / kValues;
  // A dependent launch (dependent_launch.cuh): the row is brought into L2 while the kernel ahead
  // may still run; x is that kernel's.
  if (prefetch) prefetch_to_l2(wrow, static_cast<int64_t>(row_bytes), static_cast<int>(threadIdx.x), kThreads);
  wait_for_prerequisites();
  float acc[NT] = {};
  for (int64_t v0 = threadIdx.x; v0 < vectors; v0 += static_cast<int64_t>(kThreads) * kVectorsInFlight) {
    uint4 v[kVectorsInFlight];
#pragma unroll
    for (int k = 0; k < kVectorsInFlight; ++k) {
      const int64_t i = v0 + static_cast<int64_t>(k) * kThreads;
      if (i < vectors) v[k] = __ldg(wrow + i);
    }
#pragma unroll
    for (int k = 0; k < kVectorsInFlight; ++k) {
      const int64_t i = v0 + static_cast<int64_t>(k) * kThreads;
      if (i >= vectors) break;
      float w[kValues];
      widen_vector<F>(v[k], w);
#pragma unroll
      for (int t = 0; t < NT; ++t) {
        if (t < nt) {
          const float* xt = x + t * xs + i * kValues;
#pragma unroll
          for (int e = 0; e < kValues; ++e) acc[t] = fmaf(w[e], xt[e], acc[t]);
        }
      }
    }
  }
  store_block_results<NT>(acc, nt, y, ys, row);
}

// Rows that are whole 16-byte vectors starting at 16-byte boundaries, and a grid of one block
// per row.
bool streamable(const void* w, size_t row_bytes, int64_t rows) {
  return reinterpret_cast<uintptr_t>(w) % 16 == 0 && row_bytes % 16 == 0 && rows <= 0x7FFFFFFF;
}

}  // namespace

// Launches kernel<F, 1> for one token (decode at batch 1: a token's accumulators alone, so
// fewer registers and more rows in flight per SM) or kernel<F, kGemvMaxTokens>; the two add in
// the same order, so a token's result does not depend on which ran it.
bool launch_gemv_quantized_stream(tensor::DType type, const void* w, size_t row_bytes, int64_t rows, int64_t cols,
                                  const Q8Activations& x, int64_t token_offset, int64_t n_tokens, float* y,
                                  int64_t y_stride, cudaStream_t stream) {
  if (!streamable(w, row_bytes, rows)) return false;
  if (rows == 0 || n_tokens == 0) return true;
  const auto* p = static_cast<const uint8_t*>(w);
  const int nt = static_cast<int>(n_tokens);
  const auto grid = static_cast<unsigned>(rows);
  const auto launch = [&]<DType F>() {
    if constexpr (hd::kIsKQuant<F>) {
      auto* kernel = nt == 1 ? gemv_stream_kquant_kernel<F, 1> : gemv_stream_kquant_kernel<F, kGemvMaxTokens>;
      kernel<<<grid, kThreads, 0, stream>>>(p, row_bytes, cols, x, token_offset, nt, y, y_stride);
    } else {
      auto* kernel = nt == 1 ? gemv_stream_legacy_kernel<F, 1> : gemv_stream_legacy_kernel<F, kGemvMaxTokens>;
      kernel<<<grid, kThreads, 0, stream>>>(p, row_bytes, cols, x, token_offset, nt, y, y_stride);
    }
  };
  return dispatch_quantized_gemv(type, launch);
}

bool launch_gemv_float_stream(tensor::DType type, const void* w, size_t row_bytes, int64_t rows, int64_t cols,
                              const float* x, int64_t x_stride, int64_t n_tokens, float* y, int64_t y_stride,
                              cudaStream_t stream) {
  if (!streamable(w, row_bytes, rows)) return false;
  if (rows == 0 || n_tokens == 0) return true;
  const auto* p = static_cast<const uint8_t*>(w);
  const int nt = static_cast<int>(n_tokens);
  const auto grid = static_cast<unsigned>(rows);
  const auto launch = [&]<DType F>() {
    auto* kernel = nt == 1 ? gemv_stream_float_kernel<F, 1> : gemv_stream_float_kernel<F, kGemvMaxTokens>;
    launch_kernel(kernel, grid, kThreads, 0, stream, p, row_bytes, cols, x, x_stride, nt, y, y_stride,
                  dependent_launch(stream));
    return true;
  };
  switch (type) {
    case DType::F32: return launch.template operator()<DType::F32>();
    case DType::F16: return launch.template operator()<DType::F16>();
    case DType::BF16: return launch.template operator()<DType::BF16>();
    default: return false;
  }
}

}  // namespace lumen::backend::cuda
