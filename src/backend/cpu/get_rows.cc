#include "backend/cpu/get_rows.h"

#include <cstring>

#include "tensor/quantize.h"

namespace lumen::backend::cpu {

void get_row(const TensorView& table, int32_t id, float* out) {
  const uint8_t* row = table.row<const uint8_t>(id);
  if (table.type == tensor::DType::F32) {
    std::memcpy(out, row, static_cast<size_t>(table.dims[0]) * sizeof(float));
    return;
  }
  tensor::dequantize_row(table.type, row, out, table.dims[0]);
}

}  // namespace lumen::backend::cpu
