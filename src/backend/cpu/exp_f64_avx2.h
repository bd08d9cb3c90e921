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
// Method: x = n ln2 + r with n = round(x / ln2), ln2 split in a high part with a short mantissa
// (n * hi exact) and a low part, |r| <= ln2 / 2; e^r by its Taylor series to degree 12 (the
// truncation error r^13 / 13! < 2e-16 relative at |r| = 0.35); 2^n put into the exponent bits
// (n >= -151 never leaves the double range). Arguments below -104 give 0, as e^-104 is under
// half the smallest f32 subnormal; the callers pass softmax exponents (<= 0, -inf for a masked
// key), never NaN.
#include <immintrin.h>

namespace lumen::backend::cpu {
namespace {

// Four doubles in [-104, 88.7]: e^x in double (relative error about 1e-15).
inline __m256d exp_f64x4(__m256d x) {
  // n = x / ln2 rounded to the nearest integer (ties to even) by adding 1.5 * 2^52, which
  // leaves n + 2^51 in the low mantissa bits, then subtracting it again (exact): the same n as
  // a rounding instruction, and the bits of 2^n follow from t's without integer conversions.
  const __m256d magic = _mm256_set1_pd(6755399441055744.0);  // 1.5 * 2^52
  const __m256d t = _mm256_add_pd(_mm256_mul_pd(x, _mm256_set1_pd(1.4426950408889634)), magic);
  const __m256d n = _mm256_sub_pd(t, magic);
  __m256d r = _mm256_fnmadd_pd(n, _mm256_set1_pd(0.693147180369123816490), x);  // ln2 high part
  r = _mm256_fnmadd_pd(n, _mm256_set1_pd(1.90821492927058770002e-10), r);       // ln2 low part
  __m256d p = _mm256_set1_pd(1.0 / 479001600.0);                                // 1/12!
  p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0 / 39916800.0));
  p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0 / 3628800.0));
  p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0 / 362880.0));
  p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0 / 40320.0));
  p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0 / 5040.0));
  p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0 / 720.0));
  p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0 / 120.0));
  p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0 / 24.0));
  p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0 / 6.0));
  p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(0.5));
  p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0));
  p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0));
  // 2^n as a double: (n + 1023) << 52, n an integer in [-151, 128]; t's low 12 bits are
  // n + 2^51 modulo 2^12 = n modulo 2^12, and the shift drops everything above them.
  const __m256i bits = _mm256_slli_epi64(_mm256_add_epi64(_mm256_castpd_si256(t), _mm256_set1_epi64x(1023)), 52);
  return _mm256_mul_pd(p, _mm256_castsi256_pd(bits));
}

// Eight floats: e^x rounded once to f32; x < -104 (-inf included) gives 0.
inline __m256 exp_f32_via_f64(__m256 x) {
  const __m256 too_small = _mm256_cmp_ps(x, _mm256_set1_ps(-104.0f), _CMP_LT_OQ);
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-104.0f)), _mm256_set1_ps(88.7f));
  const __m128 lo = _mm256_cvtpd_ps(exp_f64x4(_mm256_cvtps_pd(_mm256_castps256_ps128(x))));
  const __m128 hi = _mm256_cvtpd_ps(exp_f64x4(_mm256_cvtps_pd(_mm256_extractf128_ps(x, 1))));
  return _mm256_andnot_ps(too_small, _mm256_set_m128(hi, lo));
}

}  // namespace
}  // namespace lumen::backend::cpu
