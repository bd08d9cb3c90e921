#pragma once
// The tanh-approximation GELU as ggml evaluates it (built with GGML_GELU_FP16, its default):
// not per element, but for -10 < x < 10 by rounding x to f16 and reading a 65536-entry table
// that holds f16(gelu_tanh(h)) for every f16 value h, with
//   gelu_tanh(h) = 0.5 h (1 + tanh(sqrt(2/pi) h (1 + 0.044715 h^2)))   (f32 arithmetic);
// x <= -10 gives 0 and x >= 10 gives x. Every backend's GeGLU reads this one table (the CPU
// directly, CUDA after copying it to the device), so they round alike.
#include <array>
#include <cstdint>

#include "tensor/fp16.h"

namespace lumen::backend::common {

using GeluTable = std::array<uint16_t, 1 << 16>;

// Built on first use (thread-safe) and never changed afterwards.
const GeluTable& gelu_table();

// One lookup; inline so a row loop over it stays a loop of table reads.
inline float gelu_from_table(const GeluTable& table, float x) {
  if (x <= -10.0f) return 0.0f;
  if (x >= 10.0f) return x;
  return tensor::fp16_to_float(table[tensor::float_to_fp16(x)]);
}

// The GELU of one value exactly as ggml's table gives it.
inline float gelu_tanh_like_ggml(float x) { return gelu_from_table(gelu_table(), x); }

}  // namespace lumen::backend::common
