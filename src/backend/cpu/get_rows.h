#pragma once
// Embedding lookup: rows of a (possibly quantized) table converted to f32.
#include <cstdint>

#include "backend/common/get_rows_check.h"
#include "backend/tensor_view.h"

namespace lumen::backend::cpu {

// The argument check every backend shares (backend/common/get_rows_check.h).
using common::check_get_rows;

// out row i = table row `id` in f32. `id` must be in [0, table.rows()): the caller checks.
// F32 rows are copied, F16/BF16 widened, quantized rows dequantized (bit-exact with ggml).
void get_row(const TensorView& table, int32_t id, float* out);

}  // namespace lumen::backend::cpu
