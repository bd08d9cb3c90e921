#pragma once
// e^x for eight f32 arguments, computed in double and rounded once to f32, so each result is
// the correctly rounded e^x except where e^x lies within about 1e-14 of a halfway point between
// two floats: what a correctly rounding libm expf returns, almost always bit for bit. (Include
// only from files compiled with -mavx2 -mfma.)
//
// Why not exp_avx2.h: that one works in f32 and may be 2 ulp off, which is fine for an online
// softmax but not for the exact f16 attention path, whose probabilities reproduce llama.cpp's
// rounding and are compared with it by the logits goldens (a 2-ulp exp moved greedy outputs).
//
// Method: x = k ln2 / 32 + r with k = 32 n + j an integer, 0 <= j < 32, |r| <= ln2 / 64 (k ln2/32
// subtracted in two parts: a high part with a short mantissa, so that k times it is exact, and a
// low part); e^x = 2^n 2^(j/32) e^r, with 2^(j/32) from a table of correctly rounded doubles,
// 2^n added into its exponent bits (n >= -151 never leaves the double range), and e^r - 1 by its
// Taylor series to degree 6 (truncation r^7 / 7! < 4e-18 at |r| = 0.0109), added as
// t + t (e^r - 1): within about 1 ulp of double of e^x. Arguments below -104 give 0, as e^-104 is
// under half the smallest f32 subnormal; the callers pass softmax exponents (<= 0, -inf for a
// masked key), never NaN. On 160 million random arguments in [-110, 0] every result equals
// expl's rounded to f32.
//
// Until 2026-11-26 e^r was a degree-12 Taylor series over |r| <= ln2 / 2 (a chain of 13
// multiply-adds), on four doubles at a time in both builds: as accurate (the same bits on those
// 160 million), but 1.30 ns per exponential on a Zen 4 core against 0.88 now
// (bench/attention_bench, ExpRow): a quarter of a 6-row verification step's attention at
// context 900.
#include <immintrin.h>

namespace lumen::backend::cpu {
namespace {

// 2^(j / 32), j = 0 .. 31, each the double nearest to it.
alignas(64) constexpr double kExp2Fractions[32] = {
    0x1.0000000000000p+0, 0x1.059b0d3158574p+0, 0x1.0b5586cf9890fp+0, 0x1.11301d0125b51p+0, 0x1.172b83c7d517bp+0,
    0x1.1d4873168b9aap+0, 0x1.2387a6e756238p+0, 0x1.29e9df51fdee1p+0, 0x1.306fe0a31b715p+0, 0x1.371a7373aa9cbp+0,
    0x1.3dea64c123422p+0, 0x1.44e086061892dp+0, 0x1.4bfdad5362a27p+0, 0x1.5342b569d4f82p+0, 0x1.5ab07dd485429p+0,
    0x1.6247eb03a5585p+0, 0x1.6a09e667f3bcdp+0, 0x1.71f75e8ec5f74p+0, 0x1.7a11473eb0187p+0, 0x1.82589994cce13p+0,
    0x1.8ace5422aa0dbp+0, 0x1.93737b0cdc5e5p+0, 0x1.9c49182a3f090p+0, 0x1.a5503b23e255dp+0, 0x1.ae89f995ad3adp+0,
    0x1.b7f76f2fb5e47p+0, 0x1.c199bdd85529cp+0, 0x1.cb720dcef9069p+0, 0x1.d5818dcfba487p+0, 0x1.dfc97337b9b5fp+0,
    0x1.ea4afa2a490dap+0, 0x1.f50765b6e4540p+0};

// The constants of the method, shared by the two widths below.
constexpr double kRoundingMagic = 0x1.8p52;  // 1.5 * 2^52
constexpr double kThirtyTwoOverLn2 = 0x1.71547652b82fep+5;
constexpr double kLn2Over32High = 0x1.62e42fee00000p-6;  // 31 significant bits: k times it is exact
constexpr double kLn2Over32Low = 0x1.a39ef35793c76p-38;

// Both widths do, per lane:
//  t = x 32/ln2 + 1.5 * 2^52 (one rounding: k + 2^51 lands in t's low mantissa bits), k = t - that;
//  r = (x - k high) - k low;
//  h = ((((r/720 + 1/120) r + 1/24) r + 1/6) r + 1/2) r + 1, so e^r - 1 = r h;
//  s = 2^(j/32) with (t's bits >> 5) << 52 added: t's low 5 bits are j (2^51 is a multiple of
//      32) and the bits above hold n + 2^46, whose low 12 bits (all that survive the shift) are
//      n's: s = 2^n 2^(j/32) exactly;
//  e^x = s + s (r h).
// Four doubles in [-104, 88.7]: e^x in double (relative error about 2e-16).
inline __m256d exp_f64x4(__m256d x) {
  const __m256d magic = _mm256_set1_pd(kRoundingMagic);
  const __m256d t = _mm256_fmadd_pd(x, _mm256_set1_pd(kThirtyTwoOverLn2), magic);
  const __m256d k = _mm256_sub_pd(t, magic);
  __m256d r = _mm256_fnmadd_pd(k, _mm256_set1_pd(kLn2Over32High), x);
  r = _mm256_fnmadd_pd(k, _mm256_set1_pd(kLn2Over32Low), r);
  __m256d h = _mm256_fmadd_pd(r, _mm256_set1_pd(1.0 / 720), _mm256_set1_pd(1.0 / 120));
  h = _mm256_fmadd_pd(h, r, _mm256_set1_pd(1.0 / 24));
  h = _mm256_fmadd_pd(h, r, _mm256_set1_pd(1.0 / 6));
  h = _mm256_fmadd_pd(h, r, _mm256_set1_pd(1.0 / 2));
  h = _mm256_fmadd_pd(h, r, _mm256_set1_pd(1.0));
  const __m256i bits = _mm256_castpd_si256(t);
  const __m256d fraction = _mm256_i64gather_pd(kExp2Fractions, _mm256_and_si256(bits, _mm256_set1_epi64x(31)), 8);
  const __m256d s = _mm256_castsi256_pd(
      _mm256_add_epi64(_mm256_castpd_si256(fraction), _mm256_slli_epi64(_mm256_srli_epi64(bits, 5), 52)));
  return _mm256_fmadd_pd(s, _mm256_mul_pd(r, h), s);
}

#if defined(__AVX512F__)
// The same on eight doubles at once: one conversion each way instead of two and no moves
// between a register's halves, and 2^(j/32) picked from the table held in four registers (two
// two-register permutes and a blend) instead of gathered from memory. Each lane gets exactly
// exp_f64x4's operations, so the two give the same bits.
inline __m512d exp_f64x8(__m512d x) {
  const __m512d magic = _mm512_set1_pd(kRoundingMagic);
  const __m512d t = _mm512_fmadd_pd(x, _mm512_set1_pd(kThirtyTwoOverLn2), magic);
  const __m512d k = _mm512_sub_pd(t, magic);
  __m512d r = _mm512_fnmadd_pd(k, _mm512_set1_pd(kLn2Over32High), x);
  r = _mm512_fnmadd_pd(k, _mm512_set1_pd(kLn2Over32Low), r);
  __m512d h = _mm512_fmadd_pd(r, _mm512_set1_pd(1.0 / 720), _mm512_set1_pd(1.0 / 120));
  h = _mm512_fmadd_pd(h, r, _mm512_set1_pd(1.0 / 24));
  h = _mm512_fmadd_pd(h, r, _mm512_set1_pd(1.0 / 6));
  h = _mm512_fmadd_pd(h, r, _mm512_set1_pd(1.0 / 2));
  h = _mm512_fmadd_pd(h, r, _mm512_set1_pd(1.0));
  const __m512i bits = _mm512_castpd_si512(t);
  // vpermt2pd reads an index's low 4 bits (entries 0..15 of a register pair); bit 4 picks the pair.
  const __m512d low = _mm512_permutex2var_pd(_mm512_load_pd(kExp2Fractions), bits, _mm512_load_pd(kExp2Fractions + 8));
  const __m512d high =
      _mm512_permutex2var_pd(_mm512_load_pd(kExp2Fractions + 16), bits, _mm512_load_pd(kExp2Fractions + 24));
  const __m512d fraction = _mm512_mask_blend_pd(_mm512_test_epi64_mask(bits, _mm512_set1_epi64(16)), low, high);
  const __m512d s = _mm512_castsi512_pd(
      _mm512_add_epi64(_mm512_castpd_si512(fraction), _mm512_slli_epi64(_mm512_srli_epi64(bits, 5), 52)));
  return _mm512_fmadd_pd(s, _mm512_mul_pd(r, h), s);
}
#endif

// Eight floats: e^x rounded once to f32; x < -104 (-inf included) gives 0. Only the upper end is
// clamped: the lanes below -104 compute garbage (NaN for -inf) that the mask then clears.
inline __m256 exp_f32_via_f64(__m256 x) {
  const __m256 too_small = _mm256_cmp_ps(x, _mm256_set1_ps(-104.0f), _CMP_NGE_UQ);
  x = _mm256_min_ps(x, _mm256_set1_ps(88.7f));
#if defined(__AVX512F__)
  const __m256 e = _mm512_cvtpd_ps(exp_f64x8(_mm512_cvtps_pd(x)));
#else
  const __m128 lo = _mm256_cvtpd_ps(exp_f64x4(_mm256_cvtps_pd(_mm256_castps256_ps128(x))));
  const __m128 hi = _mm256_cvtpd_ps(exp_f64x4(_mm256_cvtps_pd(_mm256_extractf128_ps(x, 1))));
  const __m256 e = _mm256_set_m128(hi, lo);
#endif
  return _mm256_andnot_ps(too_small, e);
}

}  // namespace
}  // namespace lumen::backend::cpu
