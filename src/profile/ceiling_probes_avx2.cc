// Compiled with AVX2 + FMA (src/profile/CMakeLists.txt); called only when the CPU has them.
#include <immintrin.h>

#include "profile/ceiling_probes.h"

namespace lumen::profile::probes {

namespace {
// Wrapping (unsigned) sum of the lanes: the probes' values are only there to be kept.
int32_t horizontal_sum(__m256i v) {
  alignas(32) uint32_t lanes[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), v);
  uint32_t total = 0;
  for (uint32_t lane : lanes) total += lane;
  return static_cast<int32_t>(total);
}
}  // namespace

uint64_t read_sum_avx2(const void* p, size_t bytes) {
  const auto* v = static_cast<const __m256i*>(p);
  __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
  for (size_t i = 0; i < bytes / 32; i += 8) {
    a = _mm256_add_epi64(a, _mm256_add_epi64(_mm256_load_si256(v + i), _mm256_load_si256(v + i + 4)));
    b = _mm256_add_epi64(b, _mm256_add_epi64(_mm256_load_si256(v + i + 1), _mm256_load_si256(v + i + 5)));
    c = _mm256_add_epi64(c, _mm256_add_epi64(_mm256_load_si256(v + i + 2), _mm256_load_si256(v + i + 6)));
    d = _mm256_add_epi64(d, _mm256_add_epi64(_mm256_load_si256(v + i + 3), _mm256_load_si256(v + i + 7)));
  }
  alignas(32) uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), _mm256_add_epi64(_mm256_add_epi64(a, b), _mm256_add_epi64(c, d)));
  return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}

float fma_avx2(int64_t iterations) {
  __m256 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm256_set1_ps(static_cast<float>(i) * 1e-3f);
  const __m256 x = _mm256_set1_ps(0.999999f), y = _mm256_set1_ps(1e-7f);
  for (int64_t it = 0; it < iterations; ++it) {
    for (int i = 0; i < kChains; ++i) acc[i] = _mm256_fmadd_ps(acc[i], x, y);
  }
  __m256 sum = acc[0];
  for (int i = 1; i < kChains; ++i) sum = _mm256_add_ps(sum, acc[i]);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, sum);
  float total = 0;
  for (float lane : lanes) total += lane;
  return total;
}

int32_t dot_i8_avx2(int64_t iterations) {
  __m256i acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm256_set1_epi32(i);
  const __m256i a = _mm256_set1_epi8(3), b = _mm256_set1_epi8(-2), ones = _mm256_set1_epi16(1);
  for (int64_t it = 0; it < iterations; ++it) {
    for (int i = 0; i < kChains; ++i) {
      // The empty asm makes `a` look new each time, so the product is not hoisted out of the loop.
      __m256i fresh = a;
      asm volatile("" : "+x"(fresh));
      acc[i] = _mm256_add_epi32(acc[i], _mm256_madd_epi16(_mm256_maddubs_epi16(fresh, b), ones));
    }
  }
  __m256i sum = acc[0];
  for (int i = 1; i < kChains; ++i) sum = _mm256_add_epi32(sum, acc[i]);
  return horizontal_sum(sum);
}

}  // namespace lumen::profile::probes
