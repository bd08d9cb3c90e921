#include "backend/common/get_rows_check.h"

#include "tensor/quantize.h"
#include "util/error.h"

namespace lumen::backend::common {

void check_get_rows(const TensorView& table, int64_t n_ids, const TensorView& out) {
  if (!tensor::has_reference_kernels(table.type)) {
    fail("get_rows: no f32 conversion for {} tables", tensor::dtype_name(table.type));
  }
  const auto bytes = tensor::row_bytes(table.type, table.dims[0]);
  if (!bytes || table.row_bytes < *bytes || table.data == nullptr) {
    fail("get_rows: table rows of {} {} values do not fit their stride", table.dims[0], tensor::dtype_name(table.type));
  }
  if (out.type != tensor::DType::F32 || out.dims[0] != table.dims[0] || out.rows() < n_ids ||
      out.row_bytes < static_cast<size_t>(out.dims[0]) * sizeof(float) || out.row_bytes % sizeof(float) != 0 ||
      out.data == nullptr) {
    fail("get_rows: out must be f32 with rows of {} values for {} ids", table.dims[0], n_ids);
  }
}

}  // namespace lumen::backend::common
