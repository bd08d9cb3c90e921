// SwiGLU on eight lanes: silu(g) * u = g / (1 + e^-g) * u with the polynomial exp of
// exp_avx2.h (within ~2 ulp of expf, the same order of difference ggml's own SIMD exp has).
// Compiled with -mavx2 -mfma; called only when cpu_features reports AVX2.
#include "backend/cpu/activation.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

#include <cmath>

#include "backend/cpu/exp_avx2.h"

namespace lumen::backend::cpu::detail {

bool have_swiglu_avx2() { return true; }

void swiglu_row_avx2(const float* gate, const float* up, int64_t n, float* out) {
  const __m256 one = _mm256_set1_ps(1.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 g = _mm256_loadu_ps(gate + i);
    const __m256 e = exp_avx2(_mm256_sub_ps(_mm256_setzero_ps(), g));
    const __m256 silu = _mm256_div_ps(g, _mm256_add_ps(one, e));
    _mm256_storeu_ps(out + i, _mm256_mul_ps(silu, _mm256_loadu_ps(up + i)));
  }
  for (; i < n; ++i) out[i] = (gate[i] / (1.0f + std::exp(-gate[i]))) * up[i];
}

}  // namespace lumen::backend::cpu::detail

#else

namespace lumen::backend::cpu::detail {
bool have_swiglu_avx2() { return false; }
void swiglu_row_avx2(const float*, const float*, int64_t, float*) {}
}  // namespace lumen::backend::cpu::detail

#endif
