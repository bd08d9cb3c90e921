#pragma once
// The arithmetic of the GEMVs that stage a weight row through shared memory (gemv_tiled.cu,
// gemv_pipelined.cu: a warp's tile of up to 4096 values, 128 legacy blocks or 16 K-quant
// super-blocks; gemv_stream.cu: a block's tile of 8192) on one staged tile. Of the THREADS threads
// that share the tile, thread i takes its blocks i, i + THREADS, ... (K-quants: units, 8 threads per
// super-block); with THREADS = 32 that is, over a row's tiles, the order gemv.cu's lane i adds them
// in, so a warp kernel that calls these for every tile of a row, in order, and then sums its lanes
// with store_warp_results writes gemv.cu's results bit for bit. How the tile got into shared memory
// (plain loads, cp.async, one stage or two) is the calling kernel's business.
#include <cstdint>

#include "backend/cuda/block_decode.h"
#include "backend/cuda/device_math.cuh"
#include "backend/cuda/gemv_common.cuh"
#include "backend/cuda/kernels.h"

namespace lumen::backend::cuda {

inline constexpr int kGemvTileValues = 4096;

template <tensor::DType F>
inline constexpr int kGemvValuesPerBlock = hd::kIsKQuant<F> ? 256 : 32;
// Blocks (legacy) or super-blocks (K-quants) of one tile.
template <tensor::DType F>
inline constexpr int kGemvTileBlocks = kGemvTileValues / kGemvValuesPerBlock<F>;
// A tile's bytes in 16-byte vectors: whole vectors for every block size (128 legacy blocks or 16
// super-blocks), so a row that is whole vectors splits into tiles that are, its last one included.
template <tensor::DType F>
inline constexpr int kGemvTileVectors = kGemvTileBlocks<F>* hd::kBlockBytes<F> / 16;
static_assert(kGemvTileBlocks<tensor::DType::Q4_0> * hd::kBlockBytes<tensor::DType::Q4_0> % 16 == 0 &&
              kGemvTileBlocks<tensor::DType::Q5_0> * hd::kBlockBytes<tensor::DType::Q5_0> % 16 == 0 &&
              kGemvTileBlocks<tensor::DType::Q8_0> * hd::kBlockBytes<tensor::DType::Q8_0> % 16 == 0 &&
              kGemvTileBlocks<tensor::DType::Q2_K> * hd::kBlockBytes<tensor::DType::Q2_K> % 16 == 0 &&
              kGemvTileBlocks<tensor::DType::Q3_K> * hd::kBlockBytes<tensor::DType::Q3_K> % 16 == 0 &&
              kGemvTileBlocks<tensor::DType::Q6_K> * hd::kBlockBytes<tensor::DType::Q6_K> % 16 == 0 &&
              kGemvTileBlocks<tensor::DType::MXFP4> * hd::kBlockBytes<tensor::DType::MXFP4> % 16 == 0);

// Adds the products of legacy blocks [b0, b0 + n_blocks) of a row (staged: the tile's bytes) with
// tokens [t0, t0 + nt) of x to acc[0 .. nt): thread `lane` of the THREADS sharing the tile.
template <tensor::DType F, int NT, int THREADS = 32>
__device__ __forceinline__ void legacy_tile_dot(const uint8_t* staged, int n_blocks, int64_t b0, int64_t cols,
                                                const Q8Activations& x, int64_t t0, int nt, int lane, float* acc) {
  const int64_t blocks = cols / 32;
  for (int i = lane; i < n_blocks; i += THREADS) {
    hd::LegacyBlock w;
    hd::decode_legacy<F>(staged + i * hd::kBlockBytes<F>, w);
    const int64_t b = b0 + i;
#pragma unroll
    for (int t = 0; t < NT; ++t) {
      if (t < nt) {
        const int64_t token = t0 + t;
        int xq[8];
        load_activation_codes(x.qs + token * cols + b * 32, xq);
        const float xs = hd::kHasMin<F> ? x.s[token * blocks + b] : 0.0f;
        acc[t] = __fadd_rn(acc[t], hd::legacy_dot<F>(w, xq, x.d[token * blocks + b], xs));
      }
    }
  }
}

// The same for K-quant units [0, n_units) of a tile whose first super-block is s0 of the row:
// thread `lane` = unit j = lane % 8 of the tile's super-block (u0 + lane) / 8, the tile's units
// taken THREADS at a time (with 32, as gemv.cu takes the row's). Every thread must call it
// (group8_sum's shuffles need whole warps); the 8 threads of a super-block are valid or not
// together, since 32 is a multiple of 8.
template <tensor::DType F, int NT, int THREADS = 32>
__device__ __forceinline__ void kquant_tile_dot(const uint8_t* staged, int n_units, int64_t s0, int64_t cols,
                                                const Q8Activations& x, int64_t t0, int nt, int lane, float* acc) {
  const int64_t supers = cols / 256;
  const int j = lane % 8;
  for (int u0 = 0; u0 < n_units; u0 += THREADS) {
    const int unit = u0 + lane;
    const bool valid = unit < n_units;
    const int64_t sb = s0 + unit / 8;
    hd::KUnit w{};
    if (valid) hd::decode_kunit<F>(staged + (unit / 8) * hd::kBlockBytes<F>, j, w);
#pragma unroll
    for (int t = 0; t < NT; ++t) {
      if (t < nt) {
        const int64_t token = t0 + t;
        int scaled = 0, mins = 0;
        if (valid) {
          int xq[8];
          load_activation_codes(x.qs + token * cols + sb * 256 + 32 * j, xq);
          hd::kunit_dot(w, xq, x.bsums + token * (cols / 16) + sb * 16 + 2 * j, scaled, mins);
        }
        scaled = group8_sum(scaled);
        mins = group8_sum(mins);
        if (valid && j == 0) {
          acc[t] = __fadd_rn(acc[t], hd::ksuper_value(w.d, w.dmin, x.d[token * supers + sb], scaled, mins));
        }
      }
    }
  }
}

// Adds a tile's products: tile `tile` of a row of `cols` values, staged, `n` of its blocks (legacy)
// or super-blocks (K-quants) present.
template <tensor::DType F, int NT>
__device__ __forceinline__ void tile_dot(const uint8_t* staged, int64_t tile, int n, int64_t cols,
                                         const Q8Activations& x, int64_t t0, int nt, int lane, float* acc) {
  if constexpr (hd::kIsKQuant<F>) {
    kquant_tile_dot<F, NT>(staged, 8 * n, tile * kGemvTileBlocks<F>, cols, x, t0, nt, lane, acc);
  } else {
    legacy_tile_dot<F, NT>(staged, n, tile * kGemvTileBlocks<F>, cols, x, t0, nt, lane, acc);
  }
}

}  // namespace lumen::backend::cuda
