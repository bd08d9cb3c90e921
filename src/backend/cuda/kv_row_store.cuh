#pragma once
// One row of keys or values into its cache row, as the CPU backend stores it (kv_codec.h), by a
// block's threads: shared by store_kv (rows.cu) and the fused rope + store (rope_store_kv.cu), so
// both write the same bytes.
#include <cstdint>

#include "backend/cuda/kv_codec.h"
#include "tensor/dtype.h"

namespace lumen::backend::cuda {

// One row of kv_dim values into a cache row of `type`, by the block's threads: an element each
// for the element types, a 32-value block each for q8_0 and q4_0 (whose scale needs the whole
// block).
__device__ __forceinline__ void store_kv_row(tensor::DType type, const float* x, int64_t kv_dim, uint8_t* row) {
  using tensor::DType;
  if (type == DType::Q8_0 || type == DType::Q4_0) {
    for (int64_t b = threadIdx.x; b < kv_dim / hd::kKvBlock; b += blockDim.x) {
      if (type == DType::Q8_0) {
        hd::quantize_q8_0_block(x + b * hd::kKvBlock, row + b * hd::kQ8_0Bytes);
      } else {
        hd::quantize_q4_0_block(x + b * hd::kKvBlock, row + b * hd::kQ4_0Bytes);
      }
    }
    return;
  }
  for (int64_t d = threadIdx.x; d < kv_dim; d += blockDim.x) {
    switch (type) {
      case DType::F32: reinterpret_cast<float*>(row)[d] = x[d]; break;
      case DType::F16: reinterpret_cast<uint16_t*>(row)[d] = hd::float_to_half(x[d]); break;
      case DType::BF16: reinterpret_cast<uint16_t*>(row)[d] = hd::float_to_bf16(x[d]); break;
      case DType::FP8_E4M3: row[d] = hd::float_to_fp8(x[d]); break;
      default: return;  // CudaBackend::do_supports_kv_type refuses the others at load
    }
  }
}

}  // namespace lumen::backend::cuda
