#pragma once
// Embedding lookup: rows of a (possibly quantized) table converted to f32.
#include <cstdint>

#include "backend/tensor_view.h"

namespace lumen::backend::cpu {

// Throws lumen::Error when the table and out do not fit together ({n, rows} and f32 {n, ...})
// or the table's type has no dequantizer.
void check_get_rows(const TensorView& table, int64_t n_ids, const TensorView& out);

// out row i = table row `id` in f32. `id` must be in [0, table.rows()): the caller checks.
// F32 rows are copied, F16/BF16 widened, quantized rows dequantized (bit-exact with ggml).
void get_row(const TensorView& table, int32_t id, float* out);

}  // namespace lumen::backend::cpu
