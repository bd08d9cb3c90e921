#pragma once
// Weight matrices for the simulated kernels' tests: random rows stored as `type` (quantized, or
// f32 / f16 / bf16), with the values tensor::dequantize_row reads back from them.
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "tensor/dtype.h"
#include "tensor/fp16.h"
#include "tensor/quantize.h"

namespace lumen::backend::cuda::sim_testing {

struct Matrix {
  std::vector<uint8_t> bytes;
  size_t row_bytes = 0;
  std::vector<float> values;  // dequantized, row-major
};

// rows x cols values uniform in [-magnitude, magnitude].
inline Matrix random_matrix(tensor::DType type, int64_t cols, int64_t rows, uint32_t seed, float magnitude) {
  using tensor::DType;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-magnitude, magnitude);
  Matrix m;
  m.row_bytes = *tensor::row_bytes(type, cols);
  m.bytes.resize(m.row_bytes * static_cast<size_t>(rows));
  m.values.resize(static_cast<size_t>(rows * cols));
  std::vector<float> row(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (float& v : row) v = uniform(rng);
    uint8_t* at = m.bytes.data() + static_cast<size_t>(r) * m.row_bytes;
    if (type == DType::F32) {
      std::memcpy(at, row.data(), m.row_bytes);
    } else if (type == DType::F16 || type == DType::BF16) {
      for (int64_t c = 0; c < cols; ++c) {
        const float v = row[static_cast<size_t>(c)];
        const uint16_t bits = type == DType::F16 ? tensor::float_to_fp16(v) : tensor::float_to_bf16(v);
        std::memcpy(at + 2 * c, &bits, 2);
      }
    } else {
      tensor::quantize_row(type, row.data(), at, cols);
    }
    tensor::dequantize_row(type, at, m.values.data() + r * cols, cols);
  }
  return m;
}

}  // namespace lumen::backend::cuda::sim_testing
