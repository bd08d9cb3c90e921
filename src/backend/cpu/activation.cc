#include "backend/cpu/activation.h"

#include <array>
#include <cmath>
#include <memory>

#include "backend/cpu/cpu_features.h"
#include "tensor/fp16.h"

namespace lumen::backend::cpu {

namespace {

// ggml's constants, as f32.
constexpr float kGeluCoefA = 0.044715f;
constexpr float kSqrt2OverPi = 0.79788456080286535587989211986876f;

// Evaluated in f32 in this order (this file is built with -ffp-contract=off so no FMA can
// change the rounding).
float gelu_tanh_f32(float x) {
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + kGeluCoefA * x * x)));
}

using GeluTable = std::array<uint16_t, 1 << 16>;

// Built on first use and never changed afterwards.
const GeluTable& gelu_table() {
  static const std::unique_ptr<const GeluTable> table = [] {
    auto t = std::make_unique<GeluTable>();
    for (uint32_t bits = 0; bits < t->size(); ++bits) {
      const float h = tensor::fp16_to_float(static_cast<uint16_t>(bits));
      (*t)[bits] = tensor::float_to_fp16(gelu_tanh_f32(h));
    }
    return t;
  }();
  return *table;
}

inline float gelu_from_table(const GeluTable& table, float x) {
  if (x <= -10.0f) return 0.0f;
  if (x >= 10.0f) return x;
  return tensor::fp16_to_float(table[tensor::float_to_fp16(x)]);
}

}  // namespace

float gelu_tanh_like_ggml(float x) { return gelu_from_table(gelu_table(), x); }

void detail::swiglu_row_portable(const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    out[i] = (g / (1.0f + std::exp(-g))) * up[i];
  }
}

void swiglu_row(const float* gate, const float* up, int64_t n, float* out) {
  static const bool use_avx2 = detail::have_swiglu_avx2() && selected_isa() >= Isa::kAvx2;
  if (use_avx2) {
    detail::swiglu_row_avx2(gate, up, n, out);
  } else {
    detail::swiglu_row_portable(gate, up, n, out);
  }
}

void geglu_row(const float* gate, const float* up, int64_t n, float* out) {
  const GeluTable& table = gelu_table();
  for (int64_t i = 0; i < n; ++i) out[i] = gelu_from_table(table, gate[i]) * up[i];
}

}  // namespace lumen::backend::cpu
