#include "backend/cpu/attention_tiles.h"

#include <cmath>
#include <limits>

#include "backend/cpu/cpu_features.h"
#include "tensor/fp16.h"
#include "tensor/quantize.h"

namespace lumen::backend::cpu {

namespace {

// A tile's rows, f32 through a stride or f16 through one pointer per key. Each loop below is
// written once for both, so the f16 form does exactly the f32 form's arithmetic on the
// (exactly) widened values.
struct F32Rows {
  const float* base;
  int64_t stride;
  const float* row(int64_t j) const { return base + j * stride; }
  static float at(const float* row, int64_t d) { return row[d]; }
};

struct F16Rows {
  const uint16_t* const* rows;
  const uint16_t* row(int64_t j) const { return rows[j]; }
  static float at(const uint16_t* row, int64_t d) { return tensor::fp16_to_float(row[d]); }
};

// Eight partial sums so the compiler can keep them in one vector register without having to
// reorder additions itself.
template <typename Rows, typename Row>
float dot_portable(const float* a, Row b, int64_t n) {
  constexpr int kLanes = 8;
  float partial[kLanes] = {};
  int64_t d = 0;
  for (; d + kLanes <= n; d += kLanes) {
    for (int lane = 0; lane < kLanes; ++lane) partial[lane] += a[d + lane] * Rows::at(b, d + lane);
  }
  float sum = 0.0f;
  for (int lane = 0; lane < kLanes; ++lane) sum += partial[lane];
  for (; d < n; ++d) sum += a[d] * Rows::at(b, d);
  return sum;
}

template <typename Rows>
void qk_rows(const float* q, int64_t nq, Rows k, int64_t nk, int64_t dim, float* scores, int64_t ld) {
  for (int64_t i = 0; i < nq; ++i) {
    for (int64_t j = 0; j < nk; ++j) scores[i * ld + j] = dot_portable<Rows>(q + i * dim, k.row(j), dim);
  }
}

template <typename Rows>
void pv_rows(const float* p, int64_t nq, int64_t ld, Rows v, int64_t nk, int64_t dim, float* acc) {
  for (int64_t i = 0; i < nq; ++i) {
    float* out = acc + i * dim;
    for (int64_t j = 0; j < nk; ++j) {
      const float weight = p[i * ld + j];
      if (weight == 0.0f) continue;  // masked key
      const auto row = v.row(j);
      for (int64_t d = 0; d < dim; ++d) out[d] += weight * Rows::at(row, d);
    }
  }
}

void qk_portable(const float* q, int64_t nq, const float* k, int64_t k_stride, int64_t nk,
                 int64_t dim, float* scores, int64_t ld) {
  qk_rows(q, nq, F32Rows{k, k_stride}, nk, dim, scores, ld);
}

void pv_portable(const float* p, int64_t nq, int64_t ld, const float* v, int64_t v_stride,
                 int64_t nk, int64_t dim, float* acc) {
  pv_rows(p, nq, ld, F32Rows{v, v_stride}, nk, dim, acc);
}

void qk_f16_portable(const float* q, int64_t nq, const uint16_t* const* k, int64_t nk, int64_t dim,
                     float* scores, int64_t ld) {
  qk_rows(q, nq, F16Rows{k}, nk, dim, scores, ld);
}

void pv_f16_portable(const float* p, int64_t nq, int64_t ld, const uint16_t* const* v, int64_t nk,
                     int64_t dim, float* acc) {
  pv_rows(p, nq, ld, F16Rows{v}, nk, dim, acc);
}

void round_f16_portable(const float* src, int64_t n, float scale, float* dst) {
  for (int64_t j = 0; j < n; ++j) dst[j] = tensor::fp16_to_float(tensor::float_to_fp16(src[j] * scale));
}

float exp_shifted_portable(float* s, int64_t n, float shift) {
  float sum = 0.0f;
  for (int64_t j = 0; j < n; ++j) sum += (s[j] = std::exp(s[j] - shift));
  return sum;
}

double exp_shifted_f64_portable(float* s, int64_t n, float shift) {
  double sum = 0.0;
  for (int64_t j = 0; j < n; ++j) sum += (s[j] = std::exp(s[j] - shift));
  return sum;
}

void scale_portable(const float* src, int64_t n, float scale, float* dst) {
  for (int64_t j = 0; j < n; ++j) dst[j] = src[j] * scale;
}

float max_portable(const float* x, int64_t n) {
  float max = -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < n; ++j) max = x[j] > max ? x[j] : max;
  return max;
}

// The tensor module's reference routines themselves.
void dequantize_q8_0_portable(const void* src, float* dst, int64_t blocks) {
  tensor::dequantize_row(tensor::DType::Q8_0, src, dst, blocks * 32);
}
void dequantize_q4_0_portable(const void* src, float* dst, int64_t blocks) {
  tensor::dequantize_row(tensor::DType::Q4_0, src, dst, blocks * 32);
}

constexpr AttentionTileKernels kPortable = {qk_portable,
                                            pv_portable,
                                            qk_f16_portable,
                                            pv_f16_portable,
                                            round_f16_portable,
                                            exp_shifted_portable,
                                            exp_shifted_f64_portable,
                                            scale_portable,
                                            max_portable,
                                            dequantize_q8_0_portable,
                                            dequantize_q4_0_portable};

}  // namespace

const AttentionTileKernels& portable_attention_tiles() { return kPortable; }

const AttentionTileKernels& best_attention_tiles() {
  static const AttentionTileKernels* const best = [] {
    const AttentionTileKernels* avx512 = avx512_attention_tiles();
    if (avx512 != nullptr && selected_isa() >= Isa::kAvx512) return avx512;
    const AttentionTileKernels* avx2 = avx2_attention_tiles();
    return avx2 != nullptr && selected_isa() >= Isa::kAvx2 ? avx2 : &kPortable;
  }();
  return *best;
}

}  // namespace lumen::backend::cpu
