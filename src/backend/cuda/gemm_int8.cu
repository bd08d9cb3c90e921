// The int8 tensor-core GEMM for legacy-quantized weights (int8_gemm_math.h has the scheme and the
// per-thread steps): y[token, row] = the GEMV's block sums for n_tokens tokens at once, each weight
// block read once per tile of 64 tokens, none dequantized to memory.
#include <cuda_runtime_api.h>

#include "backend/cuda/int8_gemm_kquant_math.h"
#include "backend/cuda/int8_gemm_math.h"
#include "backend/cuda/kernels.h"
#include "backend/cuda/mma_sync.cuh"
#include "backend/cuda/weight_type_dispatch.h"

namespace lumen::backend::cuda {

namespace {

using namespace int8_gemm;

template <DType F>
__global__ void __launch_bounds__(kThreads) gemm_int8_kernel(const __grid_constant__ Int8GemmArgs a) {
  __shared__ __align__(16) Stage s;
  const int t = static_cast<int>(threadIdx.x), warp = t / 32, lane = t % 32;
  const int64_t row0 = static_cast<int64_t>(blockIdx.x) * kRows;
  const int64_t tok0 = static_cast<int64_t>(blockIdx.y) * kTokens;
  const int64_t blocks = a.cols / 32;
  float acc[kMTiles][kNTiles][4] = {};
#pragma unroll 1
  for (int64_t b0 = 0; b0 < blocks; b0 += kStepBlocks) {
    __syncthreads();  // every warp is done with the last step's stage
    stage_weights<F>(a, row0, b0, t, s);
    stage_tokens<F>(a, tok0, b0, t, s);
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kStepBlocks; ++k) {
      LaneScales scales;
      load_lane_scales<F>(s, warp, lane, k, scales);
      uint32_t af[kMTiles][4];
#pragma unroll
      for (int mi = 0; mi < kMTiles; ++mi) load_a(s, warp_first_token(warp, mi), k, lane, af[mi]);
#pragma unroll
      for (int ni = 0; ni < kNTiles; ++ni) {
        uint32_t bf[2];
        load_b(s, warp_first_row(warp, ni), k, lane, bf);
#pragma unroll
        for (int mi = 0; mi < kMTiles; ++mi) {
          int c[4] = {0, 0, 0, 0};
          mma::mma_s8(c, af[mi], bf);
          accumulate<F>(scales, mi, ni, c, acc[mi][ni]);
        }
      }
    }
  }
  store_sums(acc, warp, lane, tok0, row0, a.n_tokens, a.rows, a.y, a.y_stride);
}

}  // namespace

bool int8_gemm_takes(tensor::DType type) { return takes_type(type) || int8_gemm_kquant::takes_type(type); }

bool launch_gemm_int8(tensor::DType type, const void* w, size_t row_bytes, int64_t rows, int64_t cols,
                      const Q8Activations& x, int64_t n_tokens, float* y, int64_t y_stride, cudaStream_t stream) {
  // A K-quant's super-blocks are 256 values, a legacy block 32.
  const bool kquant = int8_gemm_kquant::takes_type(type);
  if (!(kquant || takes_type(type)) || cols % (kquant ? 256 : 32) != 0 || reinterpret_cast<uintptr_t>(x.qs) % 16 != 0) {
    return false;
  }
  if (rows == 0 || n_tokens == 0) return true;
  uint32_t row_tiles = 0, token_tiles = 0;
  if (!tile_grid(rows, n_tokens, row_tiles, token_tiles)) return false;
  Int8GemmArgs args;
  args.w = static_cast<const uint8_t*>(w);
  args.row_bytes = row_bytes;
  args.rows = rows;
  args.cols = cols;
  args.xq = x.qs;
  args.xd = x.d;
  args.xs = x.s;
  args.bsums = x.bsums;
  args.n_tokens = n_tokens;
  args.y = y;
  args.y_stride = y_stride;
  if (kquant) {
    launch_gemm_int8_kquant(type, args, row_tiles, token_tiles, stream);
    return true;
  }
  const dim3 grid(row_tiles, token_tiles);
  return dispatch_weight_type(type, [&]<DType F>() {
    if constexpr (takes_type(F)) gemm_int8_kernel<F><<<grid, kThreads, 0, stream>>>(args);
  });
}

}  // namespace lumen::backend::cuda
