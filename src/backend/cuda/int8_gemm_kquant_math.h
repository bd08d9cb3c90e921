#pragma once
// The per-thread steps of the int8 tensor-core GEMM for K-quant weights (gemm_int8.cu's
// gemm_int8_kquant_kernel), written once for the device and the host (hd_math.h) so
// tests/unit/cuda_host emulates a block of it on a CPU. The tile, its warps and the fragment
// coordinates are the legacy kernel's (int8_gemm_math.h); what differs is the arithmetic.
//
// What it computes: the K-quant GEMV's exact super-block sums (gemv_rows.cuh kquant_row_dot), for
// many tokens at once, over Q2_K .. Q6_K weights and the Q8_K activations the GEMV reads. For one
// (token, weight row) and one 256-value super-block:
//   scaled = sum over the 16 halves h of scale[h] * (codes . x)[h]   (integers, exact)
//   mins   = sum over h of min[h] * bsums[h]                          (integers, exact)
//   term   = hd::ksuper_value(d, dmin, xd, scaled, mins)
// and the terms are added in super-block order. Only that order of f32 sums differs from the
// GEMV's, so a row's result differs from the GEMV's by float rounding alone.
//
// How the integers are formed:
//  - (codes . x) of a 16-value half is mma.m16n8k16 on signed bytes (the codes are unsigned and
//    below 64, so they are their own signed bytes). Q4_K and Q5_K, whose two halves of a unit
//    share a scale, take one mma.m16n8k32 per unit instead. Each product starts from zero and is
//    scaled into the super-block's int32 `scaled` on the CUDA cores.
//  - mins is a 16-deep product of the tile's bsums (tokens x halves) with the rows' mins (halves x
//    rows): one f16 mma.m16n8k16 with f32 accumulators per fragment. It is exact: every operand
//    is an integer f16 holds exactly (|bsum| <= 16 * 128 = 2048, mins below 64 or, for the formats
//    whose min is bias * scale, the scale itself, |scale| <= 128), every product fits in f32's 24
//    bits, and so does every partial sum (at most 16 * 128 * 2048 = 2^22). The f32 result converts
//    to the same integer; the biased formats (Q3_K: 4, Q6_K: 32) multiply it by their bias then,
//    which is the GEMV's sum of (bias * scale) * bsum.
//  - Bounds of `scaled` as the GEMV has them: Q6_K's largest, 16 halves x 128 x 16 x 63 x 128 <
//    2^28.
//
// A step stages one super-block (8 units of 32 values) of the tile's 64 tokens and 64 rows:
//   tokens  [kTokens][kStride]: 16-byte copies of the Q8_K codes; xd [kTokens]; the bsums as f16
//                               [kTokens][kHalfStride];
//   weights [kRows][kStride]:   each (row, unit) decoded by hd::decode_kunit into 8 words of
//                               codes; its 2 scales as int8 in [kRows][16], its 2 mins (or, biased
//                               formats, scales) as f16 in [kRows][kHalfStride]; d and dmin
//                               [kRows].
// kStride = 68 words and kHalfStride = 24 f16 (12 words) put the 8 rows one fragment load touches
// at banks 4 g and 12 g (mod 32); the load's t = lane % 4 adds 0..3: 32 different banks.
//
// m16n8k16 with 8-bit operands (PTX ISA): A register 0 of lane (g, t) is row g, bytes 4 t .. 4 t
// + 3 along k; register 1 the same of row g + 8; B's one register is bytes 4 t .. 4 t + 3 of
// column g. So a unit's m16n8k32 registers are its two halves' m16n8k16 ones: A {0, 1} and B 0
// the first 16 values, A {2, 3} and B 1 the second.
#include <cstdint>
#include <cstring>

#include "backend/cuda/block_decode.h"
#include "backend/cuda/hd_math.h"
#include "backend/cuda/int8_gemm_math.h"
#include "backend/cuda/mma_fragments.h"
#include "tensor/dtype.h"

namespace lumen::backend::cuda::int8_gemm_kquant {

using int8_gemm::kMTiles;
using int8_gemm::kNTiles;
using int8_gemm::kRows;
using int8_gemm::kThreads;
using int8_gemm::kTokens;
using tensor::DType;

inline constexpr int kUnits = 8;  // 32-value units of a super-block: one super-block a step
inline constexpr int kHalves = 16;
inline constexpr int kUnitWords = int8_gemm::kBlockWords;
inline constexpr int kStepWords = kUnits * kUnitWords;
inline constexpr int kStride = kStepWords + 4;
inline constexpr int kHalfStride = 24;
inline constexpr int kWeightItems = kRows * kUnits / kThreads;             // (row, unit) per thread
inline constexpr int kTokenVectors = kTokens * kStepWords / 4 / kThreads;  // 16-byte copies per thread
inline constexpr int kTokenSums = kTokens * kHalves / kThreads;            // (token, half) per thread
static_assert(kWeightItems * kThreads == kRows * kUnits && kTokenSums * kThreads == kTokens * kHalves);
static_assert(kTokenVectors * kThreads * 4 == kTokens * kStepWords);
static_assert(kStride % 4 == 0 && kHalfStride % 2 == 0 && kTokens <= kThreads);

// The weight types it takes: the K-quants a model stores (Q8_K is an activation format).
LUMEN_HD constexpr bool takes_type(DType type) {
  return type == DType::Q2_K || type == DType::Q3_K || type == DType::Q4_K || type == DType::Q5_K ||
         type == DType::Q6_K;
}

// Formats whose two 16-value halves of a unit share one scale: one m16n8k32 a unit.
template <DType F>
inline constexpr bool kScalePer32 = F == DType::Q4_K || F == DType::Q5_K;

// Formats whose min is bias * scale (hd::decode_kunit): their staged "min" is the scale, and the
// product's integer is multiplied by the bias.
template <DType F>
inline constexpr int kMinFactor = hd::kKQuantBias<F> != 0 ? hd::kKQuantBias<F> : 1;

// v as f16 bits, exact for |v| <= 2048 (all this GEMM converts: bsums, mins, scales).
LUMEN_HD uint16_t exact_int_to_half(int v) {
  if (v == 0) return 0;
  const uint16_t sign = v < 0 ? 0x8000u : 0u;
  const auto m = static_cast<uint32_t>(v < 0 ? -v : v);
  int e = 0;
  while ((m >> (e + 1)) != 0) ++e;  // m's highest set bit
  const uint32_t mantissa = e <= 10 ? (m << (10 - e)) & 0x3FFu : (m >> (e - 10)) & 0x3FFu;
  return static_cast<uint16_t>(sign | static_cast<uint32_t>((e + 15) << 10) | mantissa);
}

// What a launch reads and writes: the legacy GEMM's arguments, the activations Q8_K (codes
// token * cols + column, d token * supers + super-block, bsums token * cols / 16 + half; xs unread).
using Args = int8_gemm::Int8GemmArgs;

struct Stage {
  uint32_t tokens[kTokens * kStride];
  uint32_t weights[kRows * kStride];
  uint16_t bsums[kTokens * kHalfStride];  // f16
  uint16_t mins[kRows * kHalfStride];     // f16
  int8_t scales[kRows * kHalves];
  float xd[kTokens];
  float d[kRows], dmin[kRows];
};

// Item j of staging super-block sb's weights for the tile whose first row is row0: row j /
// kUnits, unit j % kUnits. Past the matrix's rows the codes, scales and d are zeros: terms of 0.
template <DType F>
LUMEN_HD void stage_weight_item(const Args& a, int64_t row0, int64_t sb, int j, Stage& s) {
  const int r = j / kUnits, k = j % kUnits;
  const int64_t row = row0 + r;
  hd::KUnit u{};
  if (row < a.rows) hd::decode_kunit<F>(a.w + row * static_cast<int64_t>(a.row_bytes) + sb * hd::kBlockBytes<F>, k, u);
  uint32_t* dst = s.weights + r * kStride + k * kUnitWords;
  int8_gemm::store_vector(dst, static_cast<uint32_t>(u.codes[0]), static_cast<uint32_t>(u.codes[1]),
                          static_cast<uint32_t>(u.codes[2]), static_cast<uint32_t>(u.codes[3]));
  int8_gemm::store_vector(dst + 4, static_cast<uint32_t>(u.codes[4]), static_cast<uint32_t>(u.codes[5]),
                          static_cast<uint32_t>(u.codes[6]), static_cast<uint32_t>(u.codes[7]));
  LUMEN_UNROLL
  for (int h = 0; h < 2; ++h) {
    s.scales[r * kHalves + 2 * k + h] = static_cast<int8_t>(u.scale[h]);
    s.mins[r * kHalfStride + 2 * k + h] = exact_int_to_half(hd::kKQuantBias<F> != 0 ? u.scale[h] : u.min[h]);
  }
  if (k == 0) {
    s.d[r] = u.d;
    s.dmin[r] = u.dmin;
  }
}

// Thread t's part of staging super-block sb's weights: items t + kThreads i (consecutive threads
// decode consecutive units of a row).
template <DType F>
LUMEN_HD void stage_weights(const Args& a, int64_t row0, int64_t sb, int t, Stage& s) {
  if constexpr (F == DType::Q3_K) {
    // Four Q3_K decodes at once beside the tile's 64 sums took 255 registers and spilled; one at
    // a time fits. The other formats' decodes overlap.
    LUMEN_NO_UNROLL
    for (int i = 0; i < kWeightItems; ++i) stage_weight_item<F>(a, row0, sb, t + kThreads * i, s);
  } else {
    LUMEN_UNROLL
    for (int i = 0; i < kWeightItems; ++i) stage_weight_item<F>(a, row0, sb, t + kThreads * i, s);
  }
}

// Thread t's part of staging super-block sb's activations (tile's first token tok0): 16-byte
// vector v = t + kThreads i is token v / 16's words 4 (v % 16) .. + 3; bsum item j is token j /
// 16's half j % 16; thread t < kTokens stages token t's scale.
LUMEN_HD void stage_tokens(const Args& a, int64_t tok0, int64_t sb, int t, Stage& s) {
  constexpr int kVectorsPerToken = kStepWords / 4;
  LUMEN_UNROLL
  for (int i = 0; i < kTokenVectors; ++i) {
    const int v = t + kThreads * i;
    const int tok = v / kVectorsPerToken, piece = v % kVectorsPerToken;
    const int64_t token = tok0 + tok;
    uint32_t* dst = s.tokens + tok * kStride + 4 * piece;
    if (token < a.n_tokens) {
      const int8_t* src = a.xq + token * a.cols + sb * 256 + 16 * piece;
#if defined(__CUDA_ARCH__)
      *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
#else
      std::memcpy(dst, src, 16);
#endif
    } else {
      int8_gemm::store_vector(dst, 0, 0, 0, 0);
    }
  }
  LUMEN_UNROLL
  for (int i = 0; i < kTokenSums; ++i) {
    const int j = t + kThreads * i;
    const int tok = j / kHalves, h = j % kHalves;
    const int64_t token = tok0 + tok;
    s.bsums[tok * kHalfStride + h] =
        exact_int_to_half(token < a.n_tokens ? a.bsums[token * (a.cols / 16) + sb * kHalves + h] : 0);
  }
  if (t < kTokens) {
    const int64_t token = tok0 + t;
    s.xd[t] = token < a.n_tokens ? a.xd[token * (a.cols / 256) + sb] : 0.0f;
  }
}

// The lane's m16n8k32 registers of unit k: A for 16 tokens from `first` on, B for 8 weight rows
// (the legacy kernel's loads at this stage's stride).
LUMEN_HD void load_a(const Stage& s, int first, int k, int lane, uint32_t a[4]) {
  int8_gemm::load_a_words<kStride>(s.tokens, first, k, lane, a);
}
LUMEN_HD void load_b(const Stage& s, int first, int k, int lane, uint32_t b[2]) {
  int8_gemm::load_b_words<kStride>(s.weights, first, k, lane, b);
}

// The scales of unit k's two halves for the lane's accumulator rows of n-tile `first` (2 t and 2
// t + 1): sc[row][half].
LUMEN_HD void load_unit_scales(const Stage& s, int first, int k, int lane, int sc[2][2]) {
  const int t = lane & 3;
  LUMEN_UNROLL
  for (int h = 0; h < 2; ++h) {
    const int row = first + 2 * t + h;
    sc[h][0] = s.scales[row * kHalves + 2 * k];
    sc[h][1] = s.scales[row * kHalves + 2 * k + 1];
  }
}

// Unit k's products added into a fragment's `scaled`: accumulator i is row 2 t + (i & 1) of the
// n-tile, so its scales are sc[i & 1]. c: the one m16n8k32 (kScalePer32) or the halves' two
// m16n8k16 products c0 and c1.
template <DType F>
LUMEN_HD void scale_products(const int sc[2][2], const int c0[4], const int c1[4], int scaled[4]) {
  LUMEN_UNROLL
  for (int i = 0; i < 4; ++i) {
    if constexpr (kScalePer32<F>) {
      scaled[i] += sc[i & 1][0] * c0[i];
    } else {
      scaled[i] += sc[i & 1][0] * c0[i] + sc[i & 1][1] * c1[i];
    }
  }
}

// The lane's f16 A registers of the bsums (16 tokens from `first` on, the 16 halves along k) and
// B registers of the mins (8 rows from `first` on).
LUMEN_HD void load_bsums(const Stage& s, int first, int lane, uint32_t a[4]) {
  mma::load_a(s.bsums + first * kHalfStride, kHalfStride, lane, a);
}
LUMEN_HD void load_mins(const Stage& s, int first, int lane, uint32_t b[2]) {
  mma::load_b(s.mins + first * kHalfStride, kHalfStride, lane, b);
}

// The super-block's terms added to a fragment's sums: accumulator i is token g + 8 (i >> 1) of
// the m-tile (first_token) and row 2 t + (i & 1) of the n-tile (first_row); `mins` is the f16
// product, an exact integer.
template <DType F>
LUMEN_HD void add_super_terms(const Stage& s, int first_token, int first_row, int lane, const int scaled[4],
                              const float mins[4], float acc[4]) {
  const int g = lane >> 2, t = lane & 3;
  LUMEN_UNROLL
  for (int i = 0; i < 4; ++i) {
    const int token = first_token + g + 8 * (i >> 1), row = first_row + 2 * t + (i & 1);
    const int m = kMinFactor<F> * static_cast<int>(mins[i]);
    acc[i] = hd::add_rn(acc[i], hd::ksuper_value(s.d[row], s.dmin[row], s.xd[token], scaled[i], m));
  }
}

}  // namespace lumen::backend::cuda::int8_gemm_kquant
