#pragma once
// Converting one tensor's data from its stored type to another: each chunk of rows is
// dequantized to f32 and quantized with ggml's reference quantizers (tensor/quantize.h), so
// the bytes equal llama-quantize's. Chunks are spread over a thread pool; memory is the output
// plus one f32 chunk per worker, never the whole tensor in f32.
#include <cmath>
#include <cstdint>
#include <span>

#include "gguf/file.h"
#include "tensor/dtype.h"
#include "util/thread_pool.h"

namespace lumen::quantize {

// How far a converted tensor's values, read back, are from the original ones.
struct TensorError {
  double squared_error = 0.0;  // sum of (dequantized - original)^2
  double squared_value = 0.0;  // sum of original^2
  int64_t elements = 0;
  // sqrt(squared_error / squared_value): the error's RMS relative to the values' RMS (0 for an
  // all-zero tensor read back exactly).
  double relative_rmse() const {
    return squared_value > 0.0 ? std::sqrt(squared_error / squared_value) : (squared_error > 0.0 ? INFINITY : 0.0);
  }
};

// `out` must hold the tensor's rows in `target`. The types must have kernels (checked by the
// caller when it plans the conversion). `importance`, when not null, holds dims[0] weights per
// matrix of the tensor (dims[2] of them for a 3-D expert tensor, else one): the rows of matrix
// m are quantized with importance + m * dims[0] (tensor/quantize.h's quantize_rows_ggml).
// With `error`, the written rows are also dequantized and compared with the original values.
// Throws lumen::Error, naming the first such row, when the tensor holds a NaN or an infinity.
void convert_tensor(const gguf::TensorInfo& source, tensor::DType target, std::span<uint8_t> out,
                    ThreadPool& pool, const float* importance = nullptr, TensorError* error = nullptr);

}  // namespace lumen::quantize
