#include "backend/cpu/attention_tiles.h"

#include <cmath>

#include "backend/cpu/cpu_features.h"
#include "tensor/fp16.h"

namespace lumen::backend::cpu {

namespace {

// Eight partial sums so the compiler can keep them in one vector register without having to
// reorder additions itself.
float dot_portable(const float* a, const float* b, int64_t n) {
  constexpr int kLanes = 8;
  float partial[kLanes] = {};
  int64_t d = 0;
  for (; d + kLanes <= n; d += kLanes) {
    for (int lane = 0; lane < kLanes; ++lane) partial[lane] += a[d + lane] * b[d + lane];
  }
  float sum = 0.0f;
  for (int lane = 0; lane < kLanes; ++lane) sum += partial[lane];
  for (; d < n; ++d) sum += a[d] * b[d];
  return sum;
}

void qk_portable(const float* q, int64_t nq, const float* k, int64_t k_stride, int64_t nk,
                 int64_t dim, float* scores, int64_t ld) {
  for (int64_t i = 0; i < nq; ++i) {
    for (int64_t j = 0; j < nk; ++j) scores[i * ld + j] = dot_portable(q + i * dim, k + j * k_stride, dim);
  }
}

void pv_portable(const float* p, int64_t nq, int64_t ld, const float* v, int64_t v_stride,
                 int64_t nk, int64_t dim, float* acc) {
  for (int64_t i = 0; i < nq; ++i) {
    float* out = acc + i * dim;
    for (int64_t j = 0; j < nk; ++j) {
      const float weight = p[i * ld + j];
      if (weight == 0.0f) continue;  // masked key
      const float* row = v + j * v_stride;
      for (int64_t d = 0; d < dim; ++d) out[d] += weight * row[d];
    }
  }
}

void widen_f16_portable(const uint16_t* src, int64_t n, float* dst) {
  for (int64_t d = 0; d < n; ++d) dst[d] = tensor::fp16_to_float(src[d]);
}

float exp_shifted_portable(float* s, int64_t n, float shift) {
  float sum = 0.0f;
  for (int64_t j = 0; j < n; ++j) sum += (s[j] = std::exp(s[j] - shift));
  return sum;
}

constexpr AttentionTileKernels kPortable = {qk_portable, pv_portable, widen_f16_portable,
                                            exp_shifted_portable};

}  // namespace

const AttentionTileKernels& portable_attention_tiles() { return kPortable; }

const AttentionTileKernels& best_attention_tiles() {
  static const AttentionTileKernels* const best = [] {
    const AttentionTileKernels* avx2 = avx2_attention_tiles();
    return avx2 != nullptr && selected_isa() >= Isa::kAvx2 ? avx2 : &kPortable;
  }();
  return *best;
}

}  // namespace lumen::backend::cpu
