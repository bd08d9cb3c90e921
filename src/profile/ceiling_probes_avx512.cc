// Compiled with AVX-512 F/BW/VL/VNNI (src/profile/CMakeLists.txt); called only when the CPU has them.
#include <immintrin.h>

#include "profile/ceiling_probes.h"

namespace lumen::profile::probes {

namespace {
// Lane sums through memory (GCC 12 warns falsely inside the _mm512_reduce_* helpers); integer
// lanes wrap (summed unsigned): the probes' values are only there to be kept.
template <typename Lane>
struct SumType {
  using type = Lane;
};
template <>
struct SumType<int32_t> {
  using type = uint32_t;
};

template <typename Lane, typename Vector>
Lane lane_sum(const Vector& v) {
  using Sum = typename SumType<Lane>::type;
  alignas(64) Sum lanes[sizeof(Vector) / sizeof(Lane)];
  static_assert(sizeof(lanes) == sizeof(Vector));
  __builtin_memcpy(lanes, &v, sizeof(Vector));
  Sum total = 0;
  for (Sum lane : lanes) total += lane;
  return static_cast<Lane>(total);
}
}  // namespace

uint64_t read_sum_avx512(const void* p, size_t bytes) {
  const auto* v = static_cast<const __m512i*>(p);
  __m512i a = _mm512_setzero_si512(), b = a, c = a, d = a;
  for (size_t i = 0; i < bytes / 64; i += 4) {
    a = _mm512_add_epi64(a, _mm512_load_si512(v + i));
    b = _mm512_add_epi64(b, _mm512_load_si512(v + i + 1));
    c = _mm512_add_epi64(c, _mm512_load_si512(v + i + 2));
    d = _mm512_add_epi64(d, _mm512_load_si512(v + i + 3));
  }
  return lane_sum<uint64_t>(_mm512_add_epi64(_mm512_add_epi64(a, b), _mm512_add_epi64(c, d)));
}

float fma_avx512(int64_t iterations) {
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i) * 1e-3f);
  const __m512 x = _mm512_set1_ps(0.999999f), y = _mm512_set1_ps(1e-7f);
  for (int64_t it = 0; it < iterations; ++it) {
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], x, y);
  }
  __m512 sum = acc[0];
  for (int i = 1; i < kChains; ++i) sum = _mm512_add_ps(sum, acc[i]);
  return lane_sum<float>(sum);
}

int32_t dot_i8_avx512(int64_t iterations) {
  __m512i acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_epi32(i);
  const __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(-2);
  for (int64_t it = 0; it < iterations; ++it) {
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_dpbusd_epi32(acc[i], a, b);
  }
  __m512i sum = acc[0];
  for (int i = 1; i < kChains; ++i) sum = _mm512_add_epi32(sum, acc[i]);
  return lane_sum<int32_t>(sum);
}

int32_t dot_i8_avx512_ymm(int64_t iterations) {
  __m256i acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm256_set1_epi32(i);
  const __m256i a = _mm256_set1_epi8(3), b = _mm256_set1_epi8(-2);
  for (int64_t it = 0; it < iterations; ++it) {
    for (int i = 0; i < kChains; ++i) acc[i] = _mm256_dpbusd_epi32(acc[i], a, b);
  }
  __m256i sum = acc[0];
  for (int i = 1; i < kChains; ++i) sum = _mm256_add_epi32(sum, acc[i]);
  return lane_sum<int32_t>(sum);
}

}  // namespace lumen::profile::probes
