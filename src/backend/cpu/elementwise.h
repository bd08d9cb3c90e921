#pragma once
// Elementwise f32 kernels on one row: the residual add, bias add and scaling. Plain loops that
// the compiler vectorises; each output element is one f32 operation, exactly as in ggml.
#include <cstdint>

namespace lumen::backend::cpu {

// out[i] = a[i] + b[i]. out may alias a or b.
void add_row_values(const float* a, const float* b, int64_t n, float* out);

// x[i] *= factor.
void scale_row_values(float* x, int64_t n, float factor);

}  // namespace lumen::backend::cpu
