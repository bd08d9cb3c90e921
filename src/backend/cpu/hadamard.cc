#include "backend/cpu/hadamard.h"

#include <cmath>

namespace lumen::backend::cpu {

void hadamard_rotate(float* x, int64_t n) {
  // log2(n) butterfly passes; the inner loop runs over contiguous pairs, which the compiler
  // vectorizes once the span reaches a vector's width.
  for (int64_t span = 1; span < n; span *= 2) {
    for (int64_t start = 0; start < n; start += 2 * span) {
      float* a = x + start;
      float* b = a + span;
      for (int64_t j = 0; j < span; ++j) {
        const float sum = a[j] + b[j];
        const float difference = a[j] - b[j];
        a[j] = sum;
        b[j] = difference;
      }
    }
  }
  const float norm = 1.0f / std::sqrt(static_cast<float>(n));
  for (int64_t i = 0; i < n; ++i) x[i] *= norm;
}

}  // namespace lumen::backend::cpu
