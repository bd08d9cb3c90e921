#pragma once
// Converting one tensor's data from its stored type to another: each chunk of rows is
// dequantized to f32 and quantized with ggml's reference quantizers (tensor/quantize.h), so
// the bytes equal llama-quantize's. Chunks are spread over a thread pool; memory is the output
// plus one f32 chunk per worker, never the whole tensor in f32.
#include <cstdint>
#include <span>

#include "gguf/file.h"
#include "tensor/dtype.h"
#include "util/thread_pool.h"

namespace lumen::quantize {

// `out` must hold the tensor's rows in `target`. The types must have kernels (checked by the
// caller when it plans the conversion). Throws lumen::Error, naming the first such row, when
// the tensor holds a NaN or an infinity.
void convert_tensor(const gguf::TensorInfo& source, tensor::DType target, std::span<uint8_t> out,
                    ThreadPool& pool);

}  // namespace lumen::quantize
