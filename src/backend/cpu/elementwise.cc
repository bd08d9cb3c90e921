#include "backend/cpu/elementwise.h"

namespace lumen::backend::cpu {

void add_row_values(const float* a, const float* b, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

void scale_row_values(float* x, int64_t n, float factor) {
  for (int64_t i = 0; i < n; ++i) x[i] *= factor;
}

}  // namespace lumen::backend::cpu
