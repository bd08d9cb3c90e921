#pragma once
// Small helpers shared by the CPU kernel tests: seeded random data and f16 rounding.
#include <cstdint>
#include <random>
#include <vector>

#include "tensor/fp16.h"

namespace lumen::backend::testing {

inline std::vector<float> random_values(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

inline float round_to_f16(float x) { return tensor::fp16_to_float(tensor::float_to_fp16(x)); }

}  // namespace lumen::backend::testing
