#pragma once
// A paged K/V cache owned by a test, written and read with the test's own indexing (not the
// kernels'), with rows padded past kv_dim so a kernel that ignores row_bytes fails.
#include <cstdint>
#include <cstring>
#include <vector>

#include "backend/backend.h"
#include "kernel_test_util.h"

namespace lumen::backend::testing {

class PagedCache {
 public:
  PagedCache(tensor::DType type, int64_t kv_dim, int64_t block_size, int64_t n_blocks)
      : type_(type), kv_dim_(kv_dim), element_(type == tensor::DType::F32 ? 4 : 2),
        row_bytes_(static_cast<size_t>(kv_dim) * element_ + 32),
        k_(row_bytes_ * static_cast<size_t>(block_size * n_blocks), 0xAB),
        v_(row_bytes_ * static_cast<size_t>(block_size * n_blocks), 0xCD) {
    layer_.block_size = block_size;
    layer_.k = TensorView{type, {kv_dim, block_size, n_blocks, 1}, row_bytes_, k_.data()};
    layer_.v = TensorView{type, {kv_dim, block_size, n_blocks, 1}, row_bytes_, v_.data()};
  }

  KvLayer& layer() { return layer_; }
  tensor::DType type() const { return type_; }

  static int64_t row_of(const std::vector<int32_t>& table, int64_t pos, int64_t block_size) {
    return table[static_cast<size_t>(pos / block_size)] * block_size + pos % block_size;
  }

  // Value d of the key / value row at `row`, widened to f32.
  float k_at(int64_t row, int64_t d) const { return read(k_, row, d); }
  float v_at(int64_t row, int64_t d) const { return read(v_, row, d); }

  // Writes f32 values (rounded to f16 for an f16 cache) straight into a row.
  void write(int64_t row, const float* k, const float* v) {
    for (int64_t d = 0; d < kv_dim_; ++d) {
      put(k_, row, d, k[d]);
      put(v_, row, d, v[d]);
    }
  }

 private:
  float read(const std::vector<uint8_t>& buf, int64_t row, int64_t d) const {
    const uint8_t* p = buf.data() + static_cast<size_t>(row) * row_bytes_ + static_cast<size_t>(d) * element_;
    if (type_ == tensor::DType::F32) {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    uint16_t h;
    std::memcpy(&h, p, 2);
    return tensor::fp16_to_float(h);
  }
  void put(std::vector<uint8_t>& buf, int64_t row, int64_t d, float value) {
    uint8_t* p = buf.data() + static_cast<size_t>(row) * row_bytes_ + static_cast<size_t>(d) * element_;
    if (type_ == tensor::DType::F32) {
      std::memcpy(p, &value, 4);
    } else {
      const uint16_t h = tensor::float_to_fp16(value);
      std::memcpy(p, &h, 2);
    }
  }

  tensor::DType type_;
  int64_t kv_dim_;
  size_t element_;
  size_t row_bytes_;
  std::vector<uint8_t> k_, v_;
  KvLayer layer_;
};

}  // namespace lumen::backend::testing
