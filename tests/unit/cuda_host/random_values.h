#pragma once
// Reproducible random inputs for the host tests of the CUDA kernels' arithmetic.
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace lumen::backend::cuda::host_test {

// n values uniform in [lo, hi), the same for the same seed.
inline std::vector<float> random_values(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

}  // namespace lumen::backend::cuda::host_test
