// The routed experts of a prompt on the tensor cores (expert_gemm_math.h has the tiles and the
// arithmetic, shared with its CPU emulation in tests/unit/cuda_host). Like the expert GEMV
// (gemv_experts.cu) it reads the pairs' grouping from the device, so no id comes to the host and
// the launch's arguments do not depend on the routing: the grid is sized for the most groups and
// pairs a batch can have, and blocks past what this batch has return at once or loop no further.
#include <algorithm>

#include "backend/cuda/expert_gemm_math.h"
#include "backend/cuda/mma_sync.cuh"
#include "backend/cuda/routed_moe_kernels.h"
#include "backend/cuda/weight_type_dispatch.h"

namespace lumen::backend::cuda {

namespace {

using tensor::DType;
using namespace expert_gemm;

// Block (x: matrix x row tile, y: first pair tile, z: group). Three blocks per SM: up to 168
// registers a thread, which the 64 accumulators and the fragments need (168 on sm_90, no spills).
template <DType F>
__global__ void __launch_bounds__(kThreads, 3) gemm_experts_kernel(const __grid_constant__ ExpertGemmArgs a) {
  __shared__ __align__(16) uint16_t weights_s[kRows * kStride];
  __shared__ __align__(16) uint16_t pairs_s[kPairs * kStride];
  __shared__ int32_t pair_ids[kPairs];
  const int g = static_cast<int>(blockIdx.z);
  if (g >= *a.groups.n_groups) return;  // the whole block
  const int64_t row_tiles = (a.rows + kRows - 1) / kRows;
  const int m = static_cast<int>(blockIdx.x / row_tiles);
  const int64_t row0 = static_cast<int64_t>(blockIdx.x % row_tiles) * kRows;
  const int t = static_cast<int>(threadIdx.x), warp = t / 32, lane = t % 32;
  const int32_t begin = a.groups.begin[g], count = a.groups.begin[g + 1] - begin;
  const bool in_rows = row0 + t < a.rows;
  const uint8_t* wrow = a.weights[m] + static_cast<size_t>(a.groups.expert[g]) * a.expert_bytes +
                        static_cast<size_t>(in_rows ? row0 + t : 0) * a.row_bytes;
  float* const y = a.y[m];
  const float inverse_scale = a.scale_state[2];
  const PairPiece piece = pair_piece(t);
  const int64_t steps = a.cols / kK;
#pragma unroll 1
  for (int64_t tile = blockIdx.y; tile * kPairs < count; tile += gridDim.y) {
    const int64_t left = count - tile * kPairs;
    const int n_pairs = left < kPairs ? static_cast<int>(left) : kPairs;
    __syncthreads();  // the last tile's results have been written (they read pair_ids)
    if (t < kPairs) pair_ids[t] = t < n_pairs ? a.groups.pairs[begin + tile * kPairs + t] : -1;
    __syncthreads();
    const int32_t pair = pair_ids[piece.pair];
    const uint16_t* xrow =
        pair >= 0 ? a.x16 + static_cast<int64_t>(pair / a.pairs_per_x_row) * a.cols + piece.first : nullptr;
    uint4* const xdst = reinterpret_cast<uint4*>(pairs_s + piece.pair * kStride + piece.first);

    float acc[kMTiles][kNTiles][4] = {};
#pragma unroll 1
    for (int64_t step = 0; step < steps; ++step) {
      __syncthreads();  // every warp is done with the last step's values
      stage_weight_unit<F>(wrow, step, in_rows, weights_s, t);
      if (xrow != nullptr) {
        const uint4* src = reinterpret_cast<const uint4*>(xrow + step * kK);
        xdst[0] = src[0];
        xdst[1] = src[1];
      } else {
        xdst[0] = make_uint4(0, 0, 0, 0);
        xdst[1] = make_uint4(0, 0, 0, 0);
      }
      __syncthreads();
#pragma unroll
      for (int kk = 0; kk < kK / mma::kK; ++kk) {
        uint32_t af[kMTiles][4];
#pragma unroll
        for (int mi = 0; mi < kMTiles; ++mi) mma::load_a(a_block(pairs_s, warp, mi, kk), kStride, lane, af[mi]);
#pragma unroll
        for (int ni = 0; ni < kNTiles; ++ni) {
          uint32_t bf[2];
          mma::load_b(b_block(weights_s, warp, ni, kk), kStride, lane, bf);
#pragma unroll
          for (int mi = 0; mi < kMTiles; ++mi) mma::mma_f16(acc[mi][ni], af[mi], bf);
        }
      }
    }
#pragma unroll
    for (int mi = 0; mi < kMTiles; ++mi) {
#pragma unroll
      for (int ni = 0; ni < kNTiles; ++ni) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const TileCoord c = accumulator_coord(warp, lane, mi, ni, i);
          if (c.pair < n_pairs && row0 + c.row < a.rows) {
            y[static_cast<int64_t>(pair_ids[c.pair]) * a.y_stride + row0 + c.row] =
                __fmul_rn(acc[mi][ni][i], inverse_scale);
          }
        }
      }
    }
  }
}

}  // namespace

bool launch_gemm_experts(DType type, const ExpertGemmArgs& args, cudaStream_t stream) {
  if (!stages_type(type) || args.cols % kK != 0) return false;
  if (args.rows == 0 || args.max_groups == 0 || args.max_group_pairs == 0) return true;
  const int64_t row_tiles = (args.rows + kRows - 1) / kRows;
  const int64_t pair_tiles = std::min<int64_t>((args.max_group_pairs + kPairs - 1) / kPairs, 65535);
  const dim3 grid(static_cast<unsigned>(row_tiles * args.n_matrices), static_cast<unsigned>(pair_tiles),
                  static_cast<unsigned>(args.max_groups));
  return dispatch_weight_type(type, [&]<DType F>() {
    if constexpr (F != DType::F32) gemm_experts_kernel<F><<<grid, kThreads, 0, stream>>>(args);
  });
}

}  // namespace lumen::backend::cuda
