#pragma once
// Internal to the CUDA backend: argument checks shared by the op implementations. They throw
// lumen::Error with the same wording as the CPU backend's checks, so a caller sees the same
// failure on either backend.
#include <cstdint>
#include <string_view>

#include "backend/cuda/cuda_backend_state.h"
#include "backend/cuda/kernels.h"
#include "util/error.h"

namespace lumen::backend::cuda {

// Throws unless t is an f32 tensor with `cols` values per row and float-aligned rows.
inline void check_f32(const TensorView& t, int64_t cols, std::string_view op,
                      std::string_view name) {
  if (t.type != tensor::DType::F32 || t.dims[0] != cols || t.data == nullptr ||
      t.row_bytes < static_cast<size_t>(cols) * sizeof(float) || t.row_bytes % sizeof(float) != 0 ||
      t.rows() < 0) {
    fail("{}: {} must be f32 with rows of {} values", op, name, cols);
  }
}

inline void check_same_shape(const TensorView& a, const TensorView& b, std::string_view op) {
  check_f32(b, a.dims[0], op, "operands");
  if (a.rows() != b.rows()) fail("{}: operands hold {} and {} rows", op, a.rows(), b.rows());
}

// Throws unless t's memory is device memory (a view of host memory would crash the kernel).
inline void require_device(const CudaBackend::State& s, const TensorView& t, std::string_view op,
                           std::string_view name) {
  if (t.data != nullptr && !s.is_device(t.data)) {
    fail("{}: {} is not in device memory (allocate it from the CUDA backend)", op, name);
  }
}

inline void require_rows_type(tensor::DType type, std::string_view op) {
  if (!rows_supported(type)) {
    fail("{}: the CUDA backend has no kernels for {} tensors", op, tensor::dtype_name(type));
  }
}

// Floats from one row to the next of an f32 tensor (checked by check_f32 to be whole).
inline int64_t stride_of(const TensorView& t) {
  return static_cast<int64_t>(t.row_bytes / sizeof(float));
}

}  // namespace lumen::backend::cuda
