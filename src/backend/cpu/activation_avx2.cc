// SwiGLU (and SiLU alone) on eight lanes: silu(g) * u = g / (1 + e^-g) * u with the polynomial exp of
// exp_avx2.h (within ~2 ulp of expf, the same order of difference ggml's own SIMD exp has).
// GeGLU on eight lanes: ggml's f16 GELU table, read with one gather per 8 gates.
// Compiled with -mavx2 -mfma -mf16c; called only when cpu_features reports AVX2.
#include "backend/cpu/activation.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

#include <cmath>
#include <vector>

#include "backend/cpu/exp_avx2.h"
#include "tensor/fp16.h"

namespace lumen::backend::cpu::detail {

bool have_activations_avx2() { return true; }

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

void silu_row_avx2(const float* x, int64_t n, float* out) {
  const __m256 one = _mm256_set1_ps(1.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    const __m256 e = exp_avx2(_mm256_sub_ps(_mm256_setzero_ps(), v));
    _mm256_storeu_ps(out + i, _mm256_div_ps(v, _mm256_add_ps(one, e)));
  }
  silu_row_portable(x + i, n - i, out + i);
}

namespace {

// The shared f16 table widened to f32 once (256 KiB, which stays in L2 through a matmul's
// GeGLU), so a gather returns the value itself.
const float* gelu_table_f32() {
  static const std::vector<float> table = [] {
    const common::GeluTable& half = common::gelu_table();
    std::vector<float> wide(half.size());
    for (size_t i = 0; i < half.size(); ++i) wide[i] = tensor::fp16_to_float(half[i]);
    return wide;
  }();
  return table.data();
}

}  // namespace

void geglu_row_avx2(const float* gate, const float* up, int64_t n, float* out) {
  const float* table = gelu_table_f32();
  const __m256 low = _mm256_set1_ps(-10.0f), high = _mm256_set1_ps(10.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 g = _mm256_loadu_ps(gate + i);
    // Round to nearest even, as float_to_fp16 and ggml's F16C conversion do; the f16 bits are
    // the table index.
    const __m256i index = _mm256_cvtepu16_epi32(_mm256_cvtps_ph(g, _MM_FROUND_TO_NEAREST_INT));
    __m256 gelu = _mm256_i32gather_ps(table, index, 4);
    // x <= -10: 0; x >= 10: x (the table's range ends there, as ggml's does).
    gelu = _mm256_blendv_ps(gelu, _mm256_setzero_ps(), _mm256_cmp_ps(g, low, _CMP_LE_OQ));
    gelu = _mm256_blendv_ps(gelu, g, _mm256_cmp_ps(g, high, _CMP_GE_OQ));
    _mm256_storeu_ps(out + i, _mm256_mul_ps(gelu, _mm256_loadu_ps(up + i)));
  }
  geglu_row_portable(gate + i, up + i, n - i, out + i);
}

}  // namespace lumen::backend::cpu::detail

#else

namespace lumen::backend::cpu::detail {
bool have_activations_avx2() { return false; }
void swiglu_row_avx2(const float*, const float*, int64_t, float*) {}
void silu_row_avx2(const float*, int64_t, float*) {}
void geglu_row_avx2(const float*, const float*, int64_t, float*) {}
}  // namespace lumen::backend::cpu::detail

#endif
