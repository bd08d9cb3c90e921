#pragma once
// e^x on eight f32 lanes for the AVX2 kernel units (include only from files compiled with
// -mavx2 -mfma). Range reduction x = n ln2 + r with |r| <= ln2 / 2 (ln2 split in two parts so
// n ln2 is exact enough), then a degree-7 Taylor polynomial of e^r (truncation error
// < 6e-9 relative) and 2^n put into the exponent bits. Results are within ~2 ulp of expf.
// Inputs below -87.3 give 0 and above 88.7 are clamped (the callers never need more: softmax
// exponents are <= 0, and silu only divides by 1 + e^-x).
#include <immintrin.h>

namespace lumen::backend::cpu {
namespace {

inline __m256 exp_avx2(__m256 x) {
  const __m256 too_small = _mm256_cmp_ps(x, _mm256_set1_ps(-87.3f), _CMP_LT_OQ);
  x = _mm256_min_ps(x, _mm256_set1_ps(88.7f));
  x = _mm256_max_ps(x, _mm256_set1_ps(-87.3f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);  // ln2 high part: exact product
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);      // ln2 low part
  __m256 p = _mm256_set1_ps(1.0f / 5040.0f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  // 2^n: n is in [-126, 128]; build it as two factors so n = 128 does not overflow the field.
  const __m256i ni = _mm256_cvtps_epi32(n);
  const __m256i half = _mm256_srai_epi32(ni, 1);
  const __m256 scale_a = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(half, _mm256_set1_epi32(127)), 23));
  const __m256 scale_b = _mm256_castsi256_ps(
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_sub_epi32(ni, half), _mm256_set1_epi32(127)), 23));
  const __m256 result = _mm256_mul_ps(_mm256_mul_ps(p, scale_a), scale_b);
  return _mm256_andnot_ps(too_small, result);
}

}  // namespace
}  // namespace lumen::backend::cpu
