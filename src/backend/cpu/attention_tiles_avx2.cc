// AVX2 + FMA + F16C versions of the attention tile loops. This file is compiled with
// -mavx2 -mfma -mf16c; nothing here may run before cpu_features says the CPU has them.
#include "backend/cpu/attention_tiles.h"

#include <algorithm>

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>

#include "backend/cpu/exp_avx2.h"
#include "tensor/fp16.h"

namespace lumen::backend::cpu {

namespace {

inline float horizontal_sum(__m256 v) {
  const __m128 quad = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 pair = _mm_add_ps(quad, _mm_movehl_ps(quad, quad));
  return _mm_cvtss_f32(_mm_add_ss(pair, _mm_movehdup_ps(pair)));
}

// The four sums of a, b, c, d in one register: two rounds of pairwise adds instead of four
// separate reductions.
inline __m128 horizontal_sums(__m256 a, __m256 b, __m256 c, __m256 d) {
  const __m256 ab = _mm256_hadd_ps(a, b);     // a01 a23 b01 b23 | a45 a67 b45 b67
  const __m256 cd = _mm256_hadd_ps(c, d);
  const __m256 abcd = _mm256_hadd_ps(ab, cd);  // a0123 b0123 c0123 d0123 | upper halves
  return _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1));
}

// One query against four keys at once: the query is loaded once per 8 dims. A last group of
// fewer than four keys repeats its last key rather than taking another code path: a key's score
// must be computed the same way wherever it falls in the tile, because the tile's extent depends
// on the other queries of the batch, and a token's result must not.
void qk_avx2(const float* q, int64_t nq, const float* k, int64_t k_stride, int64_t nk,
             int64_t dim, float* scores, int64_t ld) {
  const int64_t vec_dim = dim - dim % 8;
  for (int64_t i = 0; i < nq; ++i) {
    const float* qi = q + i * dim;
    for (int64_t j = 0; j < nk; j += 4) {
      const int64_t live = std::min<int64_t>(4, nk - j);
      const float* k0 = k + j * k_stride;
      const float* k1 = k + (j + std::min<int64_t>(1, live - 1)) * k_stride;
      const float* k2 = k + (j + std::min<int64_t>(2, live - 1)) * k_stride;
      const float* k3 = k + (j + std::min<int64_t>(3, live - 1)) * k_stride;
      __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
      __m256 s2 = _mm256_setzero_ps(), s3 = _mm256_setzero_ps();
      for (int64_t d = 0; d < vec_dim; d += 8) {
        const __m256 qv = _mm256_loadu_ps(qi + d);
        s0 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k0 + d), s0);
        s1 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k1 + d), s1);
        s2 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k2 + d), s2);
        s3 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k3 + d), s3);
      }
      alignas(16) float out[4];
      _mm_store_ps(out, horizontal_sums(s0, s1, s2, s3));
      for (int64_t d = vec_dim; d < dim; ++d) {
        out[0] += qi[d] * k0[d];
        out[1] += qi[d] * k1[d];
        out[2] += qi[d] * k2[d];
        out[3] += qi[d] * k3[d];
      }
      std::copy_n(out, live, scores + i * ld + j);
    }
  }
}

// For each query, 32 dims of its accumulator stay in four registers while every key of the
// tile is added in, then move on to the next 32 dims.
void pv_avx2(const float* p, int64_t nq, int64_t ld, const float* v, int64_t v_stride,
             int64_t nk, int64_t dim, float* acc) {
  for (int64_t i = 0; i < nq; ++i) {
    const float* weights = p + i * ld;
    float* out = acc + i * dim;
    int64_t d = 0;
    for (; d + 32 <= dim; d += 32) {
      __m256 a0 = _mm256_loadu_ps(out + d), a1 = _mm256_loadu_ps(out + d + 8);
      __m256 a2 = _mm256_loadu_ps(out + d + 16), a3 = _mm256_loadu_ps(out + d + 24);
      for (int64_t j = 0; j < nk; ++j) {
        if (weights[j] == 0.0f) continue;  // masked key
        const __m256 w = _mm256_set1_ps(weights[j]);
        const float* row = v + j * v_stride + d;
        a0 = _mm256_fmadd_ps(w, _mm256_loadu_ps(row), a0);
        a1 = _mm256_fmadd_ps(w, _mm256_loadu_ps(row + 8), a1);
        a2 = _mm256_fmadd_ps(w, _mm256_loadu_ps(row + 16), a2);
        a3 = _mm256_fmadd_ps(w, _mm256_loadu_ps(row + 24), a3);
      }
      _mm256_storeu_ps(out + d, a0);
      _mm256_storeu_ps(out + d + 8, a1);
      _mm256_storeu_ps(out + d + 16, a2);
      _mm256_storeu_ps(out + d + 24, a3);
    }
    for (; d + 8 <= dim; d += 8) {
      __m256 a = _mm256_loadu_ps(out + d);
      for (int64_t j = 0; j < nk; ++j) {
        if (weights[j] == 0.0f) continue;
        a = _mm256_fmadd_ps(_mm256_set1_ps(weights[j]), _mm256_loadu_ps(v + j * v_stride + d), a);
      }
      _mm256_storeu_ps(out + d, a);
    }
    for (; d < dim; ++d) {
      float a = out[d];
      for (int64_t j = 0; j < nk; ++j) a += weights[j] * v[j * v_stride + d];
      out[d] = a;
    }
  }
}

void widen_f16_avx2(const uint16_t* src, int64_t n, float* dst) {
  int64_t d = 0;
  for (; d + 8 <= n; d += 8) {
    const __m128i half = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + d));
    _mm256_storeu_ps(dst + d, _mm256_cvtph_ps(half));
  }
  for (; d < n; ++d) dst[d] = tensor::fp16_to_float(src[d]);
}

float exp_shifted_avx2(float* s, int64_t n, float shift) {
  const __m256 shift_v = _mm256_set1_ps(shift);
  __m256 sum_v = _mm256_setzero_ps();
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256 e = exp_avx2(_mm256_sub_ps(_mm256_loadu_ps(s + j), shift_v));
    _mm256_storeu_ps(s + j, e);
    sum_v = _mm256_add_ps(sum_v, e);
  }
  float sum = horizontal_sum(sum_v);
  if (j < n) {  // the tail through a padded register, so every lane uses the same exp
    alignas(32) float tail[8] = {};
    for (int64_t t = 0; t < n - j; ++t) tail[t] = s[j + t] - shift;
    const __m256 e = exp_avx2(_mm256_load_ps(tail));
    _mm256_store_ps(tail, e);
    for (int64_t t = 0; t < n - j; ++t) sum += (s[j + t] = tail[t]);
  }
  return sum;
}

constexpr AttentionTileKernels kAvx2 = {qk_avx2, pv_avx2, widen_f16_avx2, exp_shifted_avx2};

}  // namespace

const AttentionTileKernels* avx2_attention_tiles() { return &kAvx2; }

}  // namespace lumen::backend::cpu

#else

namespace lumen::backend::cpu {
const AttentionTileKernels* avx2_attention_tiles() { return nullptr; }
}  // namespace lumen::backend::cpu

#endif
