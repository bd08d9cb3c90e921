#pragma once
// What the CUDA benches (cuda_gemv_bench.cc, cuda_gemm_bench.cc) share: their comma lists, and a
// weight matrix whose every row is one quantized random row (quantizing a 128256 x 2048 matrix row
// by row with the reference quantizers takes minutes; the kernels' speed does not depend on the
// values).
#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "tensor/quantize.h"

namespace lumen::bench {

inline std::vector<std::string> split_commas(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

// A cols x rows matrix of `type` on the backend's device, every row the same quantized random row;
// nullopt where cols is not whole blocks of the type.
inline std::optional<backend::TensorView> upload_repeated_row(backend::CudaBackend& backend, tensor::DType type,
                                                              int64_t cols, int64_t rows, std::mt19937& rng) {
  const auto row_bytes = tensor::row_bytes(type, cols);
  if (!row_bytes) return std::nullopt;
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> row(static_cast<size_t>(cols));
  for (float& v : row) v = 0.05f * uniform(rng);
  std::vector<uint8_t> weights(*row_bytes * static_cast<size_t>(rows));
  tensor::quantize_row(type, row.data(), weights.data(), cols);
  for (int64_t r = 1; r < rows; ++r)
    std::copy_n(weights.begin(), *row_bytes, weights.begin() + r * static_cast<int64_t>(*row_bytes));
  return backend.upload_weights(type, {cols, rows, 1, 1}, weights.data());
}

}  // namespace lumen::bench
