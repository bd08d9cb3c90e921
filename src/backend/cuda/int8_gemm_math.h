#pragma once
// The per-thread steps of the int8 tensor-core GEMM (gemm_int8.cu), written once for the device
// and the host (hd_math.h) so tests/unit/cuda_host emulates a block of it on a CPU.
//
// What it computes: a matmul of more tokens than the GEMV takes (a prompt, a decode step of many
// streams) over a legacy-quantized weight matrix (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0), straight from
// the quantized blocks, where the default way dequantizes every weight to f16 in global memory
// and runs cuBLAS, each step. The arithmetic is the GEMV's (gemv.cu, hd::legacy_dot): each
// 32-value block's integer dot product of the weight codes with the Q8_0 / Q8_1 activation
// codes, exact in int32 (here from the tensor cores' mma.m16n8k32 on signed bytes), scaled as
// sumi * (d_w * d_x) (+ m_w * s_x for the kinds with a min), and the blocks' terms added in
// column order. Only the order of those f32 sums differs from the GEMV's (lane-strided, then a
// butterfly), so a row's result differs from the GEMV's by float rounding alone.
//
// A block: 4 warps in 2 x 2, a tile of kTokens tokens x kRows weight rows, each warp kWarpTokens
// x kWarpRows (kMTiles x kNTiles fragments of 16 x 8). Activations are the product's A (16 x 32
// bytes, a token's codes along k) and weights its B (32 x 8, "col": a weight row's codes along k),
// so both are staged row by row as they sit in memory. Each step stages kStepBlocks blocks (128
// columns) of the tile's tokens and rows into shared memory, as 32-bit words of 4 codes:
//   tokens  [kTokens][kStride]: 16-byte copies of the quantized activations, and each block's
//                               d_x (and s_x) in [kStepBlocks][kTokens];
//   weights [kRows][kStride]:   each (row, block) decoded by hd::decode_legacy into 8 words of
//                               signed codes, its d_w (and m_w) in [kStepBlocks][kRows].
// Rows of kStride = 36 words: the 8 rows a fragment load touches (g = lane / 4) start at banks
// 4 g, and the load's t = lane % 4 adds 0..3, so the 32 lanes read 32 different banks.
//
// The fragment layout of mma.m16n8k32 with 8-bit operands is, counted in 32-bit words of 4
// codes, the layout of mma.m16n8k16 with f16 operands counted in words of 2 values
// (mma_fragments.h): A register r of lane (g, t) is row g + 8 (r & 1), word t + 4 (r >> 1); B
// register r is word t + 4 r of column g; C value i is row g + 8 (i >> 1), column 2 t + (i & 1).
#include <cstdint>
#include <cstring>

#include "backend/cuda/block_decode.h"
#include "backend/cuda/hd_math.h"
#include "backend/cuda/mma_fragments.h"
#include "tensor/dtype.h"

namespace lumen::backend::cuda::int8_gemm {

using tensor::DType;

inline constexpr int kTokens = 64, kRows = 64, kWarps = 4, kThreads = 32 * kWarps;
inline constexpr int kWarpTokens = 32, kWarpRows = 32;
inline constexpr int kMTiles = kWarpTokens / mma::kM, kNTiles = kWarpRows / mma::kN;
inline constexpr int kStepBlocks = 4;  // 32-value blocks staged per step
inline constexpr int kBlockWords = 8;  // a block's 32 codes
inline constexpr int kStepWords = kStepBlocks * kBlockWords;
inline constexpr int kStride = kStepWords + 4;                             // words from one staged row to the next
inline constexpr int kWeightItems = kRows * kStepBlocks / kThreads;        // (row, block) per thread
inline constexpr int kTokenVectors = kTokens * kStepWords / 4 / kThreads;  // 16-byte copies per thread
inline constexpr int kTokenScales = kTokens * kStepBlocks / kThreads;      // (token, block) per thread
static_assert(kWeightItems * kThreads == kRows * kStepBlocks && kTokenScales * kThreads == kTokens * kStepBlocks);
static_assert(kTokenVectors * kThreads * 4 == kTokens * kStepWords);
static_assert(kStride % 4 == 0, "16-byte aligned staged rows");

// The weight types it takes: the legacy 32-value blocks. Each reads the activations
// gemv_activation_type names (Q8_1 for the kinds with a min, whose s_x the dot product needs).
LUMEN_HD constexpr bool takes_type(DType type) {
  return type == DType::Q4_0 || type == DType::Q4_1 || type == DType::Q5_0 || type == DType::Q5_1 ||
         type == DType::Q8_0;
}

// What a launch reads and writes, spelled for both compilers: the quantized activations are
// carve_q8_activations' arrays (codes token * cols + column, scales token * blocks + block).
struct Int8GemmArgs {
  const uint8_t* w = nullptr;
  size_t row_bytes = 0;
  int64_t rows = 0, cols = 0;
  const int8_t* xq = nullptr;
  const float* xd = nullptr;
  const float* xs = nullptr;  // Q8_1's d_x * sum(codes); unread for the kinds without a min
  const int32_t* bsums = nullptr;  // Q8_K's 16-value sums (token * cols / 16 + half): K-quants only
  int64_t n_tokens = 0;
  float* y = nullptr;  // y[token * y_stride + row]
  int64_t y_stride = 0;
};

// The shared memory of a block, in words and floats.
struct Stage {
  uint32_t tokens[kTokens * kStride];
  uint32_t weights[kRows * kStride];
  float xd[kStepBlocks * kTokens];
  float xs[kStepBlocks * kTokens];
  float wd[kStepBlocks * kRows];
  float wm[kStepBlocks * kRows];
};

LUMEN_HD void store_vector(uint32_t* dst, uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
#if defined(__CUDA_ARCH__)
  *reinterpret_cast<uint4*>(dst) = make_uint4(a, b, c, d);
#else
  dst[0] = a;
  dst[1] = b;
  dst[2] = c;
  dst[3] = d;
#endif
}

// Thread t's part of staging the weights of the step whose first block is b0, for the tile whose
// first row is row0: item j = t + kThreads i is row j / kStepBlocks, block b0 + j % kStepBlocks
// (consecutive threads read consecutive blocks of a row). Past the matrix's rows or columns the
// codes and scales are zeros, whose terms add nothing.
template <DType F>
LUMEN_HD void stage_weights(const Int8GemmArgs& a, int64_t row0, int64_t b0, int t, Stage& s) {
  const int64_t blocks = a.cols / 32;
  LUMEN_UNROLL
  for (int i = 0; i < kWeightItems; ++i) {
    const int j = t + kThreads * i;
    const int r = j / kStepBlocks, k = j % kStepBlocks;
    const int64_t row = row0 + r, b = b0 + k;
    hd::LegacyBlock w{};
    if (row < a.rows && b < blocks) {
      hd::decode_legacy<F>(a.w + row * static_cast<int64_t>(a.row_bytes) + b * hd::kBlockBytes<F>, w);
    }
    uint32_t* dst = s.weights + r * kStride + k * kBlockWords;
    store_vector(dst, static_cast<uint32_t>(w.w[0]), static_cast<uint32_t>(w.w[1]), static_cast<uint32_t>(w.w[2]),
                 static_cast<uint32_t>(w.w[3]));
    store_vector(dst + 4, static_cast<uint32_t>(w.w[4]), static_cast<uint32_t>(w.w[5]), static_cast<uint32_t>(w.w[6]),
                 static_cast<uint32_t>(w.w[7]));
    s.wd[k * kRows + r] = w.d;
    s.wm[k * kRows + r] = w.m;
  }
}

// Thread t's part of staging the activations of the step (tile's first token tok0): 16-byte
// vector v = t + kThreads i is token v / 8's words 4 (v % 8) .. + 3; scale item j = t + kThreads
// i is token j / kStepBlocks's block b0 + j % kStepBlocks.
template <DType F>
LUMEN_HD void stage_tokens(const Int8GemmArgs& a, int64_t tok0, int64_t b0, int t, Stage& s) {
  const int64_t blocks = a.cols / 32;
  constexpr int kVectorsPerToken = kStepWords / 4;
  LUMEN_UNROLL
  for (int i = 0; i < kTokenVectors; ++i) {
    const int v = t + kThreads * i;
    const int tok = v / kVectorsPerToken, piece = v % kVectorsPerToken;
    const int64_t token = tok0 + tok, b = b0 + piece / 2;  // two vectors a block
    uint32_t* dst = s.tokens + tok * kStride + 4 * piece;
    if (token < a.n_tokens && b < blocks) {
      const int8_t* src = a.xq + token * a.cols + b0 * 32 + 16 * piece;
#if defined(__CUDA_ARCH__)
      *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
#else
      std::memcpy(dst, src, 16);
#endif
    } else {
      store_vector(dst, 0, 0, 0, 0);
    }
  }
  LUMEN_UNROLL
  for (int i = 0; i < kTokenScales; ++i) {
    const int j = t + kThreads * i;
    const int tok = j / kStepBlocks, k = j % kStepBlocks;
    const int64_t token = tok0 + tok, b = b0 + k;
    const bool in = token < a.n_tokens && b < blocks;
    s.xd[k * kTokens + tok] = in ? a.xd[token * blocks + b] : 0.0f;
    s.xs[k * kTokens + tok] = in && hd::kHasMin<F> ? a.xs[token * blocks + b] : 0.0f;
  }
}

// The lane's A registers (16 tokens from `first` on, 32-value block k of the step) and B
// registers (8 weight rows from `first` on, block k) from staged rows Stride words apart: this
// kernel's stage and the K-quant kernel's (int8_gemm_kquant_math.h), whose rows are longer.
template <int Stride>
LUMEN_HD void load_a_words(const uint32_t* tokens, int first, int k, int lane, uint32_t a[4]) {
  const int g = lane >> 2, t = lane & 3;
  LUMEN_UNROLL
  for (int r = 0; r < 4; ++r) a[r] = tokens[(first + g + 8 * (r & 1)) * Stride + k * kBlockWords + t + 4 * (r >> 1)];
}
template <int Stride>
LUMEN_HD void load_b_words(const uint32_t* weights, int first, int k, int lane, uint32_t b[2]) {
  const int g = lane >> 2, t = lane & 3;
  LUMEN_UNROLL
  for (int r = 0; r < 2; ++r) b[r] = weights[(first + g) * Stride + k * kBlockWords + t + 4 * r];
}
LUMEN_HD void load_a(const Stage& s, int first, int k, int lane, uint32_t a[4]) {
  load_a_words<kStride>(s.tokens, first, k, lane, a);
}
LUMEN_HD void load_b(const Stage& s, int first, int k, int lane, uint32_t b[2]) {
  load_b_words<kStride>(s.weights, first, k, lane, b);
}

// Where accumulator i of fragment (mi, ni) of a lane of warp w lands in the block's tile: (token,
// weight row), both from the tile's first.
struct TileCoord {
  int token, row;
};
LUMEN_HD TileCoord accumulator_coord(int warp, int lane, int mi, int ni, int i) {
  const mma::Coord c = mma::c_coord(lane, i);
  return {(warp / 2) * kWarpTokens + mi * mma::kM + c.row, (warp % 2) * kWarpRows + ni * mma::kN + c.col};
}
LUMEN_HD int warp_first_token(int warp, int mi) { return (warp / 2) * kWarpTokens + mi * mma::kM; }
LUMEN_HD int warp_first_row(int warp, int ni) { return (warp % 2) * kWarpRows + ni * mma::kN; }

// The launch grid (row tiles, token tiles) of both kernels; false where it passes CUDA's limits.
inline bool tile_grid(int64_t rows, int64_t n_tokens, uint32_t& row_tiles, uint32_t& token_tiles) {
  const int64_t r = (rows + kRows - 1) / kRows, t = (n_tokens + kTokens - 1) / kTokens;
  if (r > 0x7FFFFFFF || t > 65535) return false;
  row_tiles = static_cast<uint32_t>(r);
  token_tiles = static_cast<uint32_t>(t);
  return true;
}

// A lane's finished sums written to y[token * y_stride + row], those inside the matrix: the tile
// starts at token tok0 and row row0 (both kernels).
LUMEN_HD void store_sums(const float (&acc)[kMTiles][kNTiles][4], int warp, int lane, int64_t tok0, int64_t row0,
                         int64_t n_tokens, int64_t rows, float* y, int64_t y_stride) {
  LUMEN_UNROLL
  for (int mi = 0; mi < kMTiles; ++mi) {
    LUMEN_UNROLL
    for (int ni = 0; ni < kNTiles; ++ni) {
      LUMEN_UNROLL
      for (int i = 0; i < 4; ++i) {
        const TileCoord c = accumulator_coord(warp, lane, mi, ni, i);
        const int64_t token = tok0 + c.token, row = row0 + c.row;
        if (token < n_tokens && row < rows) y[token * y_stride + row] = acc[mi][ni][i];
      }
    }
  }
}

// Block k's term for one (token, row): hd::legacy_dot's float steps on the block's exact integer
// sum, added to the row's sum as the GEMV adds it.
template <DType F>
LUMEN_HD float add_block_term(float acc, int sumi, float wd, float xd, float wm, float xs) {
  float v = hd::mul_rn(static_cast<float>(sumi), hd::mul_rn(wd, xd));
  if constexpr (hd::kHasMin<F>) v = hd::add_rn(v, hd::mul_rn(wm, xs));
  return hd::add_rn(acc, v);
}

// The scales of block k of the step that a lane's accumulators need: its fragments' 2 tokens per
// m-tile (g and g + 8) and 2 rows per n-tile (2 t and 2 t + 1), read once a block rather than
// once an accumulator.
struct LaneScales {
  float xd[kMTiles][2], xs[kMTiles][2];
  float wd[kNTiles][2], wm[kNTiles][2];
};
template <DType F>
LUMEN_HD void load_lane_scales(const Stage& s, int warp, int lane, int k, LaneScales& out) {
  const int g = lane >> 2, t = lane & 3;
  LUMEN_UNROLL
  for (int mi = 0; mi < kMTiles; ++mi) {
    LUMEN_UNROLL
    for (int h = 0; h < 2; ++h) {
      const int token = warp_first_token(warp, mi) + g + 8 * h;
      out.xd[mi][h] = s.xd[k * kTokens + token];
      out.xs[mi][h] = hd::kHasMin<F> ? s.xs[k * kTokens + token] : 0.0f;
    }
  }
  LUMEN_UNROLL
  for (int ni = 0; ni < kNTiles; ++ni) {
    LUMEN_UNROLL
    for (int h = 0; h < 2; ++h) {
      const int row = warp_first_row(warp, ni) + 2 * t + h;
      out.wd[ni][h] = s.wd[k * kRows + row];
      out.wm[ni][h] = hd::kHasMin<F> ? s.wm[k * kRows + row] : 0.0f;
    }
  }
}

// The lane's 4 integer sums of fragment (mi, ni) for one block, added into acc: accumulator i is
// token g + 8 (i >> 1) of the m-tile and row 2 t + (i & 1) of the n-tile (accumulator_coord).
template <DType F>
LUMEN_HD void accumulate(const LaneScales& sc, int mi, int ni, const int c[4], float acc[4]) {
  LUMEN_UNROLL
  for (int i = 0; i < 4; ++i) {
    acc[i] = add_block_term<F>(acc[i], c[i], sc.wd[ni][i & 1], sc.xd[mi][i >> 1], sc.wm[ni][i & 1], sc.xs[mi][i >> 1]);
  }
}

}  // namespace lumen::backend::cuda::int8_gemm
