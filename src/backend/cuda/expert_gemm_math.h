#pragma once
// The per-thread steps of the expert GEMM (gemm_experts.cu), written once for the device and the
// host (hd_math.h) so tests/unit/cuda_host emulates a block of it on a CPU.
//
// The expert GEMM is the tensor-core counterpart of the expert GEMV (gemv_experts.cu) for a
// prompt's routed experts: each group of (token, slot) pairs that chose one expert, grouped on
// the device (launch_group_pairs), is multiplied by that expert's matrix in tiles of
// kPairs pairs x kRows weight rows, with no id ever copied to the host. Its arithmetic is the
// host way's (dequantize + cuBLAS, cuda_matmul.cc): every weight value dequantized bit-exactly
// (block_decode.h) and rounded to f16, activations scaled into f16's range by a power of two
// (launch_convert_activations_f16), products summed in f32 and the scale undone at the end. Only
// the order of the f32 sums differs.
//
// A block: 4 warps in 2 x 2, each warp 32 pairs x 64 rows (2 x 8 mma.m16n8k16 tiles). Each step
// along the columns stages kK values of the tile's rows and pairs into shared memory, f16 rows
// padded by 8 values (the 8 rows a fragment load touches then start in 8 different bank
// quadruples: a row is 20 words, and 20 g mod 32 differs for g = 0..7 in steps of 4):
//   weights [kRows][kStride]: thread t dequantizes the step's unit (32 values) of row t;
//   pairs   [kPairs][kStride]: thread t copies 16 values of pair t / 2's activation row.
#include <cstdint>

#include "backend/cuda/block_decode.h"
#include "backend/cuda/hd_math.h"
#include "backend/cuda/kv_codec.h"
#include "backend/cuda/mma_fragments.h"
#include "tensor/dtype.h"

namespace lumen::backend::cuda::expert_gemm {

using tensor::DType;

inline constexpr int kPairs = 64, kRows = 128, kK = 32, kWarps = 4, kThreads = 32 * kWarps;
inline constexpr int kStride = kK + 8;  // f16 values from one staged row to the next
inline constexpr int kWarpPairs = 32, kWarpRows = 64;
inline constexpr int kMTiles = kWarpPairs / mma::kM, kNTiles = kWarpRows / mma::kN;

// The types whose values the GEMM stages: the weight types with reference kernels but F32, which
// the host way multiplies in f32, and FP8 (a KV cache type only): what the host way's f16
// conversion reads (launch_dequantize_to_f16, weight_type_dispatch.h).
inline bool stages_type(DType type) {
  return tensor::has_reference_kernels(type) && type != DType::F32 && type != DType::FP8_E4M3;
}

// Thread t's part of staging the weights of step `step` (columns 32 step .. 32 step + 31): unit
// `step` of the tile's row t, or zeros past the matrix's rows. `row` points at that row's bytes
// (unused when !in_rows).
template <DType F>
LUMEN_HD void stage_weight_unit(const uint8_t* row, int64_t step, bool in_rows, uint16_t* weights_s, int t) {
  float values[kK];
  if (!in_rows) {
    LUMEN_UNROLL
    for (int j = 0; j < kK; ++j) values[j] = 0.0f;
  } else if constexpr (F == DType::F16 || F == DType::BF16) {
    LUMEN_UNROLL
    for (int j = 0; j < kK; ++j) values[j] = hd::float_element<F>(row, step * kK + j);
  } else {
    hd::dequantize_unit<F>(row, step, values);
  }
  uint32_t words[kK / 2];
  LUMEN_UNROLL
  for (int j = 0; j < kK / 2; ++j)
    words[j] = mma::pack(hd::float_to_half(values[2 * j]), hd::float_to_half(values[2 * j + 1]));
  // 16-byte stores: a row starts 80 bytes after the last, so the 8 lanes of each store phase hit
  // 8 different 16-byte bank groups (4-byte stores would meet 4 to a bank).
  uint16_t* dst = weights_s + t * kStride;
#if defined(__CUDA_ARCH__)
  LUMEN_UNROLL
  for (int q = 0; q < kK / 8; ++q) {
    reinterpret_cast<uint4*>(dst)[q] = make_uint4(words[4 * q], words[4 * q + 1], words[4 * q + 2], words[4 * q + 3]);
  }
#else
  std::memcpy(dst, words, sizeof words);
#endif
}

// Which 16 values of which staged pair thread t copies: pair t / 2, values 16 (t % 2) on.
struct PairPiece {
  int pair, first;
};
LUMEN_HD PairPiece pair_piece(int t) { return {t / 2, 16 * (t % 2)}; }

// Where accumulator i of m-tile mi and n-tile ni of a lane of warp w lands in the block's tile:
// (pair, weight row), both from the tile's first.
struct TileCoord {
  int pair, row;
};
LUMEN_HD TileCoord accumulator_coord(int warp, int lane, int mi, int ni, int i) {
  const mma::Coord c = mma::c_coord(lane, i);
  return {(warp / 2) * kWarpPairs + mi * mma::kM + c.row, (warp % 2) * kWarpRows + ni * mma::kN + c.col};
}

// The staged blocks a warp's fragments read at k16 step kk (0 or 1) of a column step.
LUMEN_HD const uint16_t* a_block(const uint16_t* pairs_s, int warp, int mi, int kk) {
  return pairs_s + ((warp / 2) * kWarpPairs + mi * mma::kM) * kStride + kk * mma::kK;
}
LUMEN_HD const uint16_t* b_block(const uint16_t* weights_s, int warp, int ni, int kk) {
  return weights_s + ((warp % 2) * kWarpRows + ni * mma::kN) * kStride + kk * mma::kK;
}

}  // namespace lumen::backend::cuda::expert_gemm
