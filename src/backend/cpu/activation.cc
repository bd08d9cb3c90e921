#include "backend/cpu/activation.h"

#include <algorithm>
#include <cmath>

#include "backend/cpu/cpu_features.h"

namespace lumen::backend::cpu {

void detail::swiglu_row_portable(const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    out[i] = (g / (1.0f + std::exp(-g))) * up[i];
  }
}

void swiglu_row(const float* gate, const float* up, int64_t n, float* out) {
  static const bool use_avx2 = detail::have_activations_avx2() && selected_isa() >= Isa::kAvx2;
  if (use_avx2) {
    detail::swiglu_row_avx2(gate, up, n, out);
  } else {
    detail::swiglu_row_portable(gate, up, n, out);
  }
}

void swiglu_oai_row(const float* gate, const float* up, int64_t n, float* out) {
  constexpr float kAlpha = 1.702f, kLimit = 7.0f;
  for (int64_t i = 0; i < n; ++i) {
    const float g = std::min(gate[i], kLimit);
    const float u = std::clamp(up[i], -kLimit, kLimit);
    out[i] = g / (1.0f + std::exp(kAlpha * -g)) * (u + 1.0f);
  }
}

void detail::silu_row_portable(const float* x, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] / (1.0f + std::exp(-x[i]));
}

void silu_row(const float* x, int64_t n, float* out) {
  static const bool use_avx2 = detail::have_activations_avx2() && selected_isa() >= Isa::kAvx2;
  if (use_avx2) {
    detail::silu_row_avx2(x, n, out);
  } else {
    detail::silu_row_portable(x, n, out);
  }
}

void detail::geglu_row_portable(const float* gate, const float* up, int64_t n, float* out) {
  const common::GeluTable& table = common::gelu_table();
  for (int64_t i = 0; i < n; ++i) out[i] = common::gelu_from_table(table, gate[i]) * up[i];
}

void geglu_row(const float* gate, const float* up, int64_t n, float* out) {
  static const bool use_avx2 = detail::have_activations_avx2() && selected_isa() >= Isa::kAvx2;
  if (use_avx2) {
    detail::geglu_row_avx2(gate, up, n, out);
  } else {
    detail::geglu_row_portable(gate, up, n, out);
  }
}

}  // namespace lumen::backend::cpu
