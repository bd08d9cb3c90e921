#include "backend/cpu/rms_norm.h"

#include <cmath>

namespace lumen::backend::cpu {

namespace {

// Sum of squares in f64 with independent partial sums, so the loop is not one long chain of
// dependent f64 additions (the compiler may not reorder them itself).
double sum_of_squares(const float* x, int64_t n) {
  constexpr int kLanes = 8;
  double partial[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int lane = 0; lane < kLanes; ++lane) {
      const float square = x[i + lane] * x[i + lane];  // rounded to f32 first, as ggml does
      partial[lane] += static_cast<double>(square);
    }
  }
  double sum = 0.0;
  for (int lane = 0; lane < kLanes; ++lane) sum += partial[lane];
  for (; i < n; ++i) sum += static_cast<double>(x[i] * x[i]);
  return sum;
}

}  // namespace

void rms_norm_row(const float* x, const float* weight, float eps, int64_t n, float* y) {
  if (n <= 0) return;
  const auto mean = static_cast<float>(sum_of_squares(x, n) / static_cast<double>(n));
  const float scale = 1.0f / std::sqrt(mean + eps);
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] * scale) * weight[i];
}

}  // namespace lumen::backend::cpu
