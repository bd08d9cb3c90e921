// The int8 tensor-core GEMM for K-quant weights (int8_gemm_kquant_math.h has the scheme and the
// per-thread steps): y[token, row] = the K-quant GEMV's super-block sums for n_tokens tokens at
// once, each weight super-block read once per tile of 64 tokens, none dequantized to memory.
#include <cuda_runtime_api.h>

#include "backend/cuda/int8_gemm_kquant_math.h"
#include "backend/cuda/kernels.h"
#include "backend/cuda/mma_sync.cuh"
#include "backend/cuda/weight_type_dispatch.h"

namespace lumen::backend::cuda {

namespace {

using namespace int8_gemm_kquant;
using int8_gemm::warp_first_row;
using int8_gemm::warp_first_token;

template <DType F>
__global__ void __launch_bounds__(kThreads) gemm_int8_kquant_kernel(const __grid_constant__ Args a) {
  __shared__ __align__(16) Stage s;
  const int t = static_cast<int>(threadIdx.x), warp = t / 32, lane = t % 32;
  const int64_t row0 = static_cast<int64_t>(blockIdx.x) * kRows;
  const int64_t tok0 = static_cast<int64_t>(blockIdx.y) * kTokens;
  const int64_t supers = a.cols / 256;
  float acc[kMTiles][kNTiles][4] = {};
#pragma unroll 1
  for (int64_t sb = 0; sb < supers; ++sb) {
    __syncthreads();  // every warp is done with the last super-block's stage
    stage_weights<F>(a, row0, sb, t, s);
    stage_tokens(a, tok0, sb, t, s);
    __syncthreads();
    int scaled[kMTiles][kNTiles][4] = {};
#pragma unroll
    for (int k = 0; k < kUnits; ++k) {
      uint32_t af[kMTiles][4];
#pragma unroll
      for (int mi = 0; mi < kMTiles; ++mi) load_a(s, warp_first_token(warp, mi), k, lane, af[mi]);
#pragma unroll
      for (int ni = 0; ni < kNTiles; ++ni) {
        uint32_t bf[2];
        load_b(s, warp_first_row(warp, ni), k, lane, bf);
        int sc[2][2];
        load_unit_scales(s, warp_first_row(warp, ni), k, lane, sc);
#pragma unroll
        for (int mi = 0; mi < kMTiles; ++mi) {
          int c0[4] = {0, 0, 0, 0}, c1[4] = {0, 0, 0, 0};
          if constexpr (kScalePer32<F>) {
            mma::mma_s8(c0, af[mi], bf);
          } else {
            mma::mma_s8_k16(c0, af[mi][0], af[mi][1], bf[0]);
            mma::mma_s8_k16(c1, af[mi][2], af[mi][3], bf[1]);
          }
          scale_products<F>(sc, c0, c1, scaled[mi][ni]);
        }
      }
    }
    uint32_t sums[kMTiles][4];
#pragma unroll
    for (int mi = 0; mi < kMTiles; ++mi) load_bsums(s, warp_first_token(warp, mi), lane, sums[mi]);
#pragma unroll
    for (int ni = 0; ni < kNTiles; ++ni) {
      uint32_t mins_b[2];
      load_mins(s, warp_first_row(warp, ni), lane, mins_b);
#pragma unroll
      for (int mi = 0; mi < kMTiles; ++mi) {
        float mins[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        mma::mma_f16(mins, sums[mi], mins_b);
        add_super_terms<F>(s, warp_first_token(warp, mi), warp_first_row(warp, ni), lane, scaled[mi][ni], mins,
                           acc[mi][ni]);
      }
    }
  }
  int8_gemm::store_sums(acc, warp, lane, tok0, row0, a.n_tokens, a.rows, a.y, a.y_stride);
}

}  // namespace

void launch_gemm_int8_kquant(tensor::DType type, const Args& args, uint32_t row_tiles, uint32_t token_tiles,
                             cudaStream_t stream) {
  const dim3 grid(row_tiles, token_tiles);
  dispatch_weight_type(type, [&]<DType F>() {
    if constexpr (takes_type(F)) gemm_int8_kquant_kernel<F><<<grid, kThreads, 0, stream>>>(args);
  });
}

}  // namespace lumen::backend::cuda
