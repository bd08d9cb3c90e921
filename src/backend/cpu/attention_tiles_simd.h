#pragma once
// The 256-bit attention tile loops, written once and compiled twice: by attention_tiles_avx2.cc
// (AVX2 + FMA + F16C: 16 vector registers) and by attention_tiles_avx512.cc (the same plus
// AVX-512 F/VL: 32 registers and mask registers). Both do the same float operations in the same
// order on the same 8-lane vectors, so their results are identical bit for bit; the AVX-512
// build only holds more queries' accumulators in registers and skips zero weights with masked
// FMAs instead of branches.
//
// Include only from those two files, inside nothing: everything here has internal linkage, so
// the two compilations (with different instruction sets) never get merged by the linker.
//
// f16 rows are widened in registers (vcvtph2ps) right where the f32 form loads its rows, so
// the two forms do the same float operations in the same order. Every loop works on a few
// queries at once, so a key's (or value's) row is loaded and widened once for all of them.
//
// The fixed-count loops over a block's queries and keys carry `#pragma GCC unroll`: GCC turns
// an array of vector accumulators into registers only once its indices are constants, and
// without the pragma it unrolled these loops too late for that, keeping the arrays in memory and
// storing every accumulator back on each key (measured: the score and value loops at 57-62
// GFLOP/s on one Zen 4 core, 88-98 with the pragmas, same bits).
//
// Dims past the last multiple of 8 (no real model has such a head size) are done one at a time
// with an explicit fma: left to the compiler, the contraction (and the vectorisation) of such a
// loop may differ between the f32 and f16 forms, or even between keys of one tile.
#if !defined(__AVX2__) || !defined(__FMA__) || !defined(__F16C__)
#error "attention_tiles_simd.h needs AVX2, FMA and F16C"
#endif

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "backend/cpu/attention_tiles.h"
#include "backend/cpu/exp_avx2.h"
#include "backend/cpu/exp_f64_avx2.h"
#include "tensor/fp16.h"

namespace lumen::backend::cpu {
namespace {

#if defined(__AVX512F__) && defined(__AVX512VL__)
constexpr bool kMaskedFma = true;
constexpr int kMaxQueries = 3;  // 24 accumulators (64 dims each) + 3 weights + a row: fits in 32 registers
#else
constexpr bool kMaskedFma = false;
constexpr int kMaxQueries = 2;  // the value loop's 8 accumulators + 2 weights + a row in 16
#endif
constexpr int kMaxScoreQueries = kMaskedFma ? 6 : 3;  // 4 accumulators per query: 24 of 32, 12 of 16

struct F32Rows {
  const float* base;
  int64_t stride;
  const float* row(int64_t j) const { return base + j * stride; }
  static __m256 load8(const float* row, int64_t d) { return _mm256_loadu_ps(row + d); }
  static float at(const float* row, int64_t d) { return row[d]; }
};

struct F16Rows {
  const uint16_t* const* rows;
  const uint16_t* row(int64_t j) const { return rows[j]; }
  static __m256 load8(const uint16_t* row, int64_t d) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + d)));
  }
  static float at(const uint16_t* row, int64_t d) { return tensor::fp16_to_float(row[d]); }
};

inline float horizontal_sum(__m256 v) {
  const __m128 quad = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 pair = _mm_add_ps(quad, _mm_movehl_ps(quad, quad));
  return _mm_cvtss_f32(_mm_add_ss(pair, _mm_movehdup_ps(pair)));
}

// The four sums of a, b, c, d in one register: two rounds of pairwise adds instead of four
// separate reductions. Each sum is ((x0+x1)+(x2+x3)) + ((x4+x5)+(x6+x7)) whatever the others.
inline __m128 horizontal_sums(__m256 a, __m256 b, __m256 c, __m256 d) {
  const __m256 ab = _mm256_hadd_ps(a, b);  // a01 a23 b01 b23 | a45 a67 b45 b67
  const __m256 cd = _mm256_hadd_ps(c, d);
  const __m256 abcd = _mm256_hadd_ps(ab, cd);  // a0123 b0123 c0123 d0123 | upper halves
  return _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1));
}

// NQ queries (rows i0 .. i0 + NQ of q) against NK keys (a multiple of 4): NQ NK accumulators,
// each key row loaded (and widened) once per 8 dims for all NQ queries, each query's 8 dims
// once for all NK keys. The sums leave the registers four keys at a time, straight into the
// scores (the accumulators spilled to the stack and reloaded for the reduction took about as
// long as the multiply-adds).
template <int NQ, int NK, typename Rows, typename Row>
inline void qk_block(const float* q, int64_t i0, const Row (&keys)[NK], int64_t live, int64_t dim, float* scores,
                     int64_t ld, int64_t j) {
  const int64_t vec_dim = dim - dim % 8;
  __m256 s[NQ][NK];
#pragma GCC unroll 64
  for (int i = 0; i < NQ; ++i) {
#pragma GCC unroll 64
    for (int c = 0; c < NK; ++c) s[i][c] = _mm256_setzero_ps();
  }
  for (int64_t d = 0; d < vec_dim; d += 8) {
#pragma GCC unroll 64
    for (int c = 0; c < NK; ++c) {
      const __m256 kv = Rows::load8(keys[c], d);
#pragma GCC unroll 64
      for (int i = 0; i < NQ; ++i) {
        s[i][c] = _mm256_fmadd_ps(_mm256_loadu_ps(q + (i0 + i) * dim + d), kv, s[i][c]);
      }
    }
  }
#pragma GCC unroll 64
  for (int i = 0; i < NQ; ++i) {
    float* dst = scores + (i0 + i) * ld + j;
#pragma GCC unroll 64
    for (int c0 = 0; c0 < NK; c0 += 4) {
      const __m128 sums = horizontal_sums(s[i][c0], s[i][c0 + 1], s[i][c0 + 2], s[i][c0 + 3]);
      if (vec_dim == dim && live >= c0 + 4) {
        _mm_storeu_ps(dst + c0, sums);  // the common case
        continue;
      }
      // A head size past a multiple of 8, or the tile's last keys.
      const float* qi = q + (i0 + i) * dim;
      alignas(16) float out[4];
      _mm_store_ps(out, sums);
      for (int64_t d = vec_dim; d < dim; ++d) {
#pragma GCC unroll 64
        for (int c = 0; c < 4; ++c) out[c] = std::fma(qi[d], Rows::at(keys[c0 + c], d), out[c]);
      }
      std::copy_n(out, std::clamp<int64_t>(live - c0, 0, 4), dst + c0);
    }
  }
}

template <int NQ, int NK, typename Rows, typename Row>
inline void qk_queries(const float* q, int64_t i0, int64_t n, const Row (&keys)[NK], int64_t live, int64_t dim,
                       float* scores, int64_t ld, int64_t j) {
  if constexpr (NQ > 0) {
    if (n == NQ) {
      qk_block<NQ, NK, Rows>(q, i0, keys, live, dim, scores, ld, j);
    } else {
      qk_queries<NQ - 1, NK, Rows>(q, i0, n, keys, live, dim, scores, ld, j);
    }
  }
}

// NK keys at a time for up to MaxQ queries at a time. A last group of fewer than NK keys
// repeats its last key rather than taking another code path: a key's score must be computed
// the same way wherever it falls in the tile, because the tile's extent depends on the other
// queries of the batch, and a token's result must not. (Each score's arithmetic is the same
// whichever keys and queries share its block.)
template <int MaxQ, int NK, typename Rows>
void qk_rows_by(const float* q, int64_t nq, Rows k, int64_t nk, int64_t dim, float* scores, int64_t ld) {
  using Row = decltype(k.row(0));
  for (int64_t j = 0; j < nk; j += NK) {
    const int64_t live = std::min<int64_t>(NK, nk - j);
    Row keys[NK];
    for (int c = 0; c < NK; ++c) keys[c] = k.row(j + std::min<int64_t>(c, live - 1));
    for (int64_t i = 0; i < nq; i += MaxQ) {
      qk_queries<MaxQ, NK, Rows>(q, i, std::min<int64_t>(MaxQ, nq - i), keys, live, dim, scores, ld, j);
    }
  }
}

// A few queries (one token's group of heads sharing a KV head) take eight keys per pass where
// the registers allow, so the multiply-adds still outnumber the loads.
template <typename Rows>
void qk_rows(const float* q, int64_t nq, Rows k, int64_t nk, int64_t dim, float* scores, int64_t ld) {
  if (kMaskedFma && nq <= 3) {
    qk_rows_by<3, 8>(q, nq, k, nk, dim, scores, ld);
  } else {
    qk_rows_by<kMaxScoreQueries, 4>(q, nq, k, nk, dim, scores, ld);
  }
}

// NQ queries' accumulators for W vectors of 8 dims (dims d .. d + 8W) stay in registers while
// every key of the tile is added in. A zero weight (a masked key, or a probability that
// rounded to zero) is skipped, leaving that query's accumulator untouched.
template <int NQ, int W, typename Rows>
inline void pv_block(const float* p, int64_t i0, int64_t ld, Rows v, int64_t nk, int64_t dim, int64_t d, float* acc) {
  __m256 a[NQ][W];
#pragma GCC unroll 64
  for (int i = 0; i < NQ; ++i) {
#pragma GCC unroll 64
    for (int c = 0; c < W; ++c) a[i][c] = _mm256_loadu_ps(acc + (i0 + i) * dim + d + 8 * c);
  }
  for (int64_t j = 0; j < nk; ++j) {
    const auto row = v.row(j);
    __m256 w[NQ];
    if constexpr (kMaskedFma) {
#if defined(__AVX512F__) && defined(__AVX512VL__)
      // The weight broadcast straight from memory and its test on the vector (NaN counts as
      // live, as weight != 0 does): two instructions, not a scalar compare and a mask move.
      __mmask8 live[NQ];
#pragma GCC unroll 64
      for (int i = 0; i < NQ; ++i) {
        w[i] = _mm256_broadcast_ss(p + (i0 + i) * ld + j);
        live[i] = _mm256_cmp_ps_mask(w[i], _mm256_setzero_ps(), _CMP_NEQ_UQ);
      }
#pragma GCC unroll 64
      for (int c = 0; c < W; ++c) {
        const __m256 vv = Rows::load8(row, d + 8 * c);
#pragma GCC unroll 64
        for (int i = 0; i < NQ; ++i) a[i][c] = _mm256_mask3_fmadd_ps(w[i], vv, a[i][c], live[i]);
      }
#endif
    } else {
      bool all_live = true, any_live = false;
#pragma GCC unroll 64
      for (int i = 0; i < NQ; ++i) {
        const float weight = p[(i0 + i) * ld + j];
        all_live = all_live && weight != 0.0f;
        any_live = any_live || weight != 0.0f;
        w[i] = _mm256_set1_ps(weight);
      }
      if (!any_live) continue;
#pragma GCC unroll 64
      for (int c = 0; c < W; ++c) {
        const __m256 vv = Rows::load8(row, d + 8 * c);
#pragma GCC unroll 64
        for (int i = 0; i < NQ; ++i) {
          if (all_live || p[(i0 + i) * ld + j] != 0.0f) a[i][c] = _mm256_fmadd_ps(w[i], vv, a[i][c]);
        }
      }
    }
  }
#pragma GCC unroll 64
  for (int i = 0; i < NQ; ++i) {
#pragma GCC unroll 64
    for (int c = 0; c < W; ++c) _mm256_storeu_ps(acc + (i0 + i) * dim + d + 8 * c, a[i][c]);
  }
}

template <int NQ, typename Rows>
void pv_block_of(const float* p, int64_t i0, int64_t ld, Rows v, int64_t nk, int64_t dim, float* acc) {
  int64_t d = 0;
  if constexpr (kMaskedFma) {
    for (; d + 64 <= dim; d += 64) pv_block<NQ, 8>(p, i0, ld, v, nk, dim, d, acc);
  }
  for (; d + 32 <= dim; d += 32) pv_block<NQ, 4>(p, i0, ld, v, nk, dim, d, acc);
  for (; d + 8 <= dim; d += 8) pv_block<NQ, 1>(p, i0, ld, v, nk, dim, d, acc);
  for (int i = 0; i < NQ; ++i) {
    const float* weights = p + (i0 + i) * ld;
    float* out = acc + (i0 + i) * dim;
    for (int64_t e = d; e < dim; ++e) {
      float a = out[e];
      for (int64_t j = 0; j < nk; ++j) a = std::fma(weights[j], Rows::at(v.row(j), e), a);
      out[e] = a;
    }
  }
}

template <int NQ, typename Rows>
inline void pv_queries(const float* p, int64_t i0, int64_t n, int64_t ld, Rows v, int64_t nk, int64_t dim, float* acc) {
  if constexpr (NQ > 0) {
    if (n == NQ) {
      pv_block_of<NQ>(p, i0, ld, v, nk, dim, acc);
    } else {
      pv_queries<NQ - 1>(p, i0, n, ld, v, nk, dim, acc);
    }
  }
}

template <typename Rows>
void pv_rows(const float* p, int64_t nq, int64_t ld, Rows v, int64_t nk, int64_t dim, float* acc) {
  for (int64_t i = 0; i < nq; i += kMaxQueries) {
    pv_queries<kMaxQueries>(p, i, std::min<int64_t>(kMaxQueries, nq - i), ld, v, nk, dim, acc);
  }
}

void qk_simd(const float* q, int64_t nq, const float* k, int64_t k_stride, int64_t nk, int64_t dim, float* scores,
             int64_t ld) {
  qk_rows(q, nq, F32Rows{k, k_stride}, nk, dim, scores, ld);
}

void pv_simd(const float* p, int64_t nq, int64_t ld, const float* v, int64_t v_stride, int64_t nk, int64_t dim,
             float* acc) {
  pv_rows(p, nq, ld, F32Rows{v, v_stride}, nk, dim, acc);
}

void qk_f16_simd(const float* q, int64_t nq, const uint16_t* const* k, int64_t nk, int64_t dim, float* scores,
                 int64_t ld) {
  qk_rows(q, nq, F16Rows{k}, nk, dim, scores, ld);
}

void pv_f16_simd(const float* p, int64_t nq, int64_t ld, const uint16_t* const* v, int64_t nk, int64_t dim,
                 float* acc) {
  pv_rows(p, nq, ld, F16Rows{v}, nk, dim, acc);
}

// vcvtps2ph with round-to-nearest-even is IEEE narrowing, as tensor::float_to_fp16 (both keep
// a quiet NaN's sign and top payload bits).
void round_f16_simd(const float* src, int64_t n, float scale, float* dst) {
  const __m256 scale_v = _mm256_set1_ps(scale);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m128i half = _mm256_cvtps_ph(_mm256_mul_ps(_mm256_loadu_ps(src + j), scale_v),
                                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_storeu_ps(dst + j, _mm256_cvtph_ps(half));
  }
  for (; j < n; ++j) dst[j] = tensor::fp16_to_float(tensor::float_to_fp16(src[j] * scale));
}

// The last n < 8 values of an exp_shifted run through a padded register, so every lane gets
// the same exp as the vector loop's; each result is added to `sum` (float or double) in order.
template <typename Exp8, typename Sum>
void exp_shifted_tail(float* s, int64_t n, float shift, Exp8 exp8, Sum& sum) {
  if (n <= 0) return;
  alignas(32) float tail[8] = {};
  for (int64_t t = 0; t < n; ++t) tail[t] = s[t] - shift;
  _mm256_store_ps(tail, exp8(_mm256_load_ps(tail)));
  for (int64_t t = 0; t < n; ++t) sum += (s[t] = tail[t]);
}

float exp_shifted_simd(float* s, int64_t n, float shift) {
  const __m256 shift_v = _mm256_set1_ps(shift);
  __m256 sum_v = _mm256_setzero_ps();
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256 e = exp_avx2(_mm256_sub_ps(_mm256_loadu_ps(s + j), shift_v));
    _mm256_storeu_ps(s + j, e);
    sum_v = _mm256_add_ps(sum_v, e);
  }
  float sum = horizontal_sum(sum_v);
  exp_shifted_tail(s + j, n - j, shift, [](__m256 x) { return exp_avx2(x); }, sum);
  return sum;
}

// exp_shifted with the sum in double, for the exact f16 path: each exp rounded once from
// double (exp_f64_avx2.h: the correctly rounded value, as libm's expf, not exp_avx2's 2 ulp),
// summed in four f64 lanes per half of the vector, added at the end (an order of additions of
// its own, but in double: the sum's float inverse is the portable loop's).
double exp_shifted_f64_simd(float* s, int64_t n, float shift) {
  const __m256 shift_v = _mm256_set1_ps(shift);
#if defined(__AVX512F__)
  // The same eight lanes' sums in one register.
  __m512d sums = _mm512_setzero_pd();
  auto add = [&](__m256 e) { sums = _mm512_add_pd(sums, _mm512_cvtps_pd(e)); };
#else
  __m256d sum_lo = _mm256_setzero_pd(), sum_hi = _mm256_setzero_pd();
  auto add = [&](__m256 e) {
    sum_lo = _mm256_add_pd(sum_lo, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
    sum_hi = _mm256_add_pd(sum_hi, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
  };
#endif
  int64_t j = 0;
  // Four vectors' exponentials side by side (each a chain of dependent multiply-adds) give
  // the out-of-order core more independent work: 1.23 -> 1.16 ns per exponential on one Zen 4
  // core, a small gain, as the loop is mostly throughput-bound. The sums are added in order.
  for (; j + 32 <= n; j += 32) {
    const __m256 e0 = exp_f32_via_f64(_mm256_sub_ps(_mm256_loadu_ps(s + j), shift_v));
    const __m256 e1 = exp_f32_via_f64(_mm256_sub_ps(_mm256_loadu_ps(s + j + 8), shift_v));
    const __m256 e2 = exp_f32_via_f64(_mm256_sub_ps(_mm256_loadu_ps(s + j + 16), shift_v));
    const __m256 e3 = exp_f32_via_f64(_mm256_sub_ps(_mm256_loadu_ps(s + j + 24), shift_v));
    _mm256_storeu_ps(s + j, e0);
    _mm256_storeu_ps(s + j + 8, e1);
    _mm256_storeu_ps(s + j + 16, e2);
    _mm256_storeu_ps(s + j + 24, e3);
    add(e0);
    add(e1);
    add(e2);
    add(e3);
  }
  for (; j + 8 <= n; j += 8) {
    const __m256 e = exp_f32_via_f64(_mm256_sub_ps(_mm256_loadu_ps(s + j), shift_v));
    _mm256_storeu_ps(s + j, e);
    add(e);
  }
#if defined(__AVX512F__)
  alignas(64) double eight[8];
  _mm512_store_pd(eight, sums);
  const double lanes[4] = {eight[0] + eight[4], eight[1] + eight[5], eight[2] + eight[6], eight[3] + eight[7]};
#else
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, _mm256_add_pd(sum_lo, sum_hi));
#endif
  double sum = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
  exp_shifted_tail(s + j, n - j, shift, [](__m256 x) { return exp_f32_via_f64(x); }, sum);
  return sum;
}

void scale_simd(const float* src, int64_t n, float scale, float* dst) {
  const __m256 scale_v = _mm256_set1_ps(scale);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) _mm256_storeu_ps(dst + j, _mm256_mul_ps(_mm256_loadu_ps(src + j), scale_v));
  for (; j < n; ++j) dst[j] = src[j] * scale;
}

// vmaxps returns its second operand when the first is NaN, so a NaN never becomes the max.
float max_simd(const float* x, int64_t n) {
  __m256 max_v = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) max_v = _mm256_max_ps(_mm256_loadu_ps(x + j), max_v);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, max_v);
  float max = lanes[0];
  for (int l = 1; l < 8; ++l) max = lanes[l] > max ? lanes[l] : max;
  for (; j < n; ++j) max = x[j] > max ? x[j] : max;
  return max;
}

// q8_0: 2-byte f16 scale, 32 int8 codes; value j = code j * scale. Converting an int8 to f32
// is exact and the product is one rounding, as in the scalar reference.
void dequantize_q8_0_simd(const void* src, float* dst, int64_t blocks) {
  const auto* block = static_cast<const uint8_t*>(src);
  for (int64_t b = 0; b < blocks; ++b, block += 34, dst += 32) {
    uint16_t scale_bits;
    std::memcpy(&scale_bits, block, 2);
    const __m256 d = _mm256_set1_ps(tensor::fp16_to_float(scale_bits));
    for (int j = 0; j < 32; j += 8) {
      const __m128i codes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(block + 2 + j));
      _mm256_storeu_ps(dst + j, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(codes)), d));
    }
  }
}

// q4_0: 2-byte f16 scale, 16 bytes of nibbles; value j < 16 is the low nibble of byte j minus
// 8, value j + 16 the high nibble, both times the scale.
void dequantize_q4_0_simd(const void* src, float* dst, int64_t blocks) {
  const auto* block = static_cast<const uint8_t*>(src);
  const __m256i eight = _mm256_set1_epi32(8), low4 = _mm256_set1_epi32(0xf);
  for (int64_t b = 0; b < blocks; ++b, block += 18, dst += 32) {
    uint16_t scale_bits;
    std::memcpy(&scale_bits, block, 2);
    const __m256 d = _mm256_set1_ps(tensor::fp16_to_float(scale_bits));
    for (int j = 0; j < 16; j += 8) {
      const __m256i bytes = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(block + 2 + j)));
      const __m256i lo = _mm256_sub_epi32(_mm256_and_si256(bytes, low4), eight);
      const __m256i hi = _mm256_sub_epi32(_mm256_srli_epi32(bytes, 4), eight);
      _mm256_storeu_ps(dst + j, _mm256_mul_ps(_mm256_cvtepi32_ps(lo), d));
      _mm256_storeu_ps(dst + 16 + j, _mm256_mul_ps(_mm256_cvtepi32_ps(hi), d));
    }
  }
}

constexpr AttentionTileKernels kSimdTiles = {qk_simd,
                                             pv_simd,
                                             qk_f16_simd,
                                             pv_f16_simd,
                                             round_f16_simd,
                                             exp_shifted_simd,
                                             exp_shifted_f64_simd,
                                             scale_simd,
                                             max_simd,
                                             dequantize_q8_0_simd,
                                             dequantize_q4_0_simd};

}  // namespace
}  // namespace lumen::backend::cpu
