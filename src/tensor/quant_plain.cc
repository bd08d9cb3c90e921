// The unquantized storage formats: F32 is a copy, F16 and BF16 convert each element on its
// own through tensor/fp16.h, so their results are exact and independent of the host FPU.
#include <array>
#include <cstring>

#include "tensor/fp16.h"
#include "tensor/quant_kernels.h"

namespace lumen::tensor::kernels {
namespace {

// 16-bit elements of a row, read and written one at a time since the row may be unaligned.
uint16_t load_u16(const void* row, int64_t index) {
  uint16_t bits = 0;
  std::memcpy(&bits, static_cast<const unsigned char*>(row) + 2 * index, sizeof(bits));
  return bits;
}

void store_u16(void* row, int64_t index, uint16_t bits) {
  std::memcpy(static_cast<unsigned char*>(row) + 2 * index, &bits, sizeof(bits));
}

// Every f16 value widened once (256 KiB): a load instead of fp16_to_float's branches, which
// showed as 8% of `lumen quantize`'s time on an F16 model. Same values, bit for bit.
const std::array<float, 65536>& f16_table() {
  static const auto table = [] {
    std::array<float, 65536> values{};
    for (uint32_t bits = 0; bits < values.size(); ++bits) {
      values[bits] = fp16_to_float(static_cast<uint16_t>(bits));
    }
    return values;
  }();
  return table;
}

}  // namespace

void dequantize_f32(const void* src, float* dst, int64_t blocks) {
  std::memcpy(dst, src, static_cast<size_t>(blocks) * sizeof(float));
}

void quantize_f32(const float* src, void* dst, int64_t blocks) {
  std::memcpy(dst, src, static_cast<size_t>(blocks) * sizeof(float));
}

void dequantize_f16(const void* src, float* dst, int64_t blocks) {
  const std::array<float, 65536>& table = f16_table();
  for (int64_t i = 0; i < blocks; ++i) dst[i] = table[load_u16(src, i)];
}

void quantize_f16(const float* src, void* dst, int64_t blocks) {
  for (int64_t i = 0; i < blocks; ++i) store_u16(dst, i, float_to_fp16(src[i]));
}

void dequantize_bf16(const void* src, float* dst, int64_t blocks) {
  for (int64_t i = 0; i < blocks; ++i) dst[i] = bf16_to_float(load_u16(src, i));
}

void quantize_bf16(const float* src, void* dst, int64_t blocks) {
  for (int64_t i = 0; i < blocks; ++i) store_u16(dst, i, float_to_bf16(src[i]));
}

}  // namespace lumen::tensor::kernels
