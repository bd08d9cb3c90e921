#pragma once
// The argument check of the get_rows op (embedding lookup), shared by every backend so they
// accept and refuse the same tables.
#include <cstdint>

#include "backend/tensor_view.h"

namespace lumen::backend::common {

// Throws lumen::Error when the table and out do not fit together ({n, rows} and f32 {n, ...})
// or the table's type has no dequantizer.
void check_get_rows(const TensorView& table, int64_t n_ids, const TensorView& out);

}  // namespace lumen::backend::common
