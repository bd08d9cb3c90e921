#include "backend/common/gelu_table.h"

#include <cmath>
#include <memory>

namespace lumen::backend::common {

namespace {

// ggml's constants, as f32.
constexpr float kGeluCoefA = 0.044715f;
constexpr float kSqrt2OverPi = 0.79788456080286535587989211986876f;

// Evaluated in f32 in this order (this file is built with -ffp-contract=off so no FMA can
// change the rounding).
float gelu_tanh_f32(float x) { return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + kGeluCoefA * x * x))); }

}  // namespace

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

}  // namespace lumen::backend::common
