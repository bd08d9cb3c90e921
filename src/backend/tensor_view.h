#pragma once
// A typed view of backend memory: what backend ops read and write. Row-major with ggml's
// naming: dims[0] is the row length (contiguous), dims[1] the number of rows, dims[2..3] outer
// batch dimensions. Views never own memory.
#include <array>
#include <cstddef>
#include <cstdint>

#include "tensor/dtype.h"

namespace lumen::backend {

struct TensorView {
  tensor::DType type = tensor::DType::F32;
  std::array<int64_t, 4> dims = {1, 1, 1, 1};
  size_t row_bytes = 0;  // bytes from one row (dims[0] elements) to the next
  void* data = nullptr;

  int64_t rows() const { return dims[1] * dims[2] * dims[3]; }
  int64_t elements() const { return dims[0] * rows(); }
  template <typename T>
  T* row(int64_t r) const {
    return reinterpret_cast<T*>(static_cast<uint8_t*>(data) + static_cast<size_t>(r) * row_bytes);
  }
};

// Matrix `index` of a tensor of several 2-D matrices (dims {cols, rows, n} or {cols, rows, a, b}:
// a MoE layer's 3-D expert tensors), as a 2-D view of the same memory. The caller checks index.
inline TensorView expert_matrix(const TensorView& t, int64_t index) {
  TensorView m = t;
  m.dims = {t.dims[0], t.dims[1], 1, 1};
  m.data = static_cast<uint8_t*>(t.data) + static_cast<size_t>(index) * static_cast<size_t>(t.dims[1]) * t.row_bytes;
  return m;
}

// The first n rows of a 2-D matrix (scratch buffers sized for the largest batch).
inline TensorView first_rows(const TensorView& m, int64_t n) {
  TensorView view = m;
  view.dims[1] = n;
  return view;
}

// The first n rows of a {row, ...} f32 matrix seen as {head_dim, heads, n}: each row's heads
// one after the other (rope, attention).
inline TensorView as_heads(const TensorView& m, int64_t n, int64_t head_dim) {
  TensorView view = m;
  view.dims = {head_dim, m.dims[0] / head_dim, n, 1};
  view.row_bytes = static_cast<size_t>(head_dim) * sizeof(float);
  return view;
}

// A contiguous f32 matrix of `rows` rows of `cols` values.
inline TensorView f32_matrix(float* data, int64_t cols, int64_t rows) {
  return {tensor::DType::F32, {cols, rows, 1, 1}, static_cast<size_t>(cols) * sizeof(float), data};
}

}  // namespace lumen::backend
