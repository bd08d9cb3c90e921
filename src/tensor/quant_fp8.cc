// FP8 E4M3 rows (tensor/fp8.h): one byte per value, no scale (a scale of 1.0, what vLLM's fp8
// KV cache uses without calibration). Only the KV cache stores it; no GGUF file can.
#include "tensor/fp8.h"
#include "tensor/quant_kernels.h"

namespace lumen::tensor::kernels {

void dequantize_fp8_e4m3(const void* src, float* dst, int64_t blocks) {
  const auto* codes = static_cast<const uint8_t*>(src);
  for (int64_t i = 0; i < blocks; ++i) dst[i] = fp8_e4m3_to_float(codes[i]);
}

void quantize_fp8_e4m3(const float* src, void* dst, int64_t blocks) {
  auto* codes = static_cast<uint8_t*>(dst);
  for (int64_t i = 0; i < blocks; ++i) codes[i] = float_to_fp8_e4m3(src[i]);
}

}  // namespace lumen::tensor::kernels
