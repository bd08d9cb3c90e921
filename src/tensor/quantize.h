#pragma once
// Reference (scalar, exact) conversion between f32 and every supported storage format.
// Dequantize is bit-exact with ggml / gguf-py; quantize picks scales to keep the error within
// the format's resolution. These are the ground truth the SIMD kernels are tested against.
#include <cstdint>

#include "tensor/dtype.h"

namespace lumen::tensor {

// `n` must be a multiple of the type's block size; throws lumen::Error otherwise or for a type
// without reference kernels.
void dequantize_row(DType type, const void* src, float* dst, int64_t n);
void quantize_row(DType type, const float* src, void* dst, int64_t n);

}  // namespace lumen::tensor
