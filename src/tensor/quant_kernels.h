#pragma once
// Internal to the tensor module: the per-format reference kernels that quantize.cc dispatches
// to, and the small helpers they share. Each kernel works on whole blocks; the dispatcher has
// already checked the element count, so `blocks` is exact (for plain types, one block is one
// element).
#include <cmath>
#include <cstdint>
#include <cstring>

namespace lumen::tensor::kernels {

// Block `index` of a packed row, read without assuming the row is aligned for Block.
template <typename Block>
Block load_block(const void* row, int64_t index) {
  Block block;
  std::memcpy(&block, static_cast<const unsigned char*>(row) + index * int64_t{sizeof(Block)},
              sizeof(Block));
  return block;
}

template <typename Block>
void store_block(void* row, int64_t index, const Block& block) {
  std::memcpy(static_cast<unsigned char*>(row) + index * int64_t{sizeof(Block)}, &block,
              sizeof(Block));
}

// round(value) limited to [lo, hi], ties away from zero (as roundf). Clamping happens in float
// first so that an out-of-range value or infinity never reaches an int conversion, which would
// be undefined; NaN (e.g. 0 * inf from a degenerate scale) becomes 0, or the bound nearest it.
inline int clamp_round(float value, int lo, int hi) {
  if (std::isnan(value)) return lo > 0 ? lo : (hi < 0 ? hi : 0);
  if (value <= static_cast<float>(lo)) return lo;
  if (value >= static_cast<float>(hi)) return hi;
  return static_cast<int>(std::round(value));
}

// Plain formats (quant_plain.cc).
void dequantize_f32(const void* src, float* dst, int64_t blocks);
void quantize_f32(const float* src, void* dst, int64_t blocks);
void dequantize_f16(const void* src, float* dst, int64_t blocks);
void quantize_f16(const float* src, void* dst, int64_t blocks);
void dequantize_bf16(const void* src, float* dst, int64_t blocks);
void quantize_bf16(const float* src, void* dst, int64_t blocks);
// FP8 E4M3 with a scale of 1 (quant_fp8.cc): the KV cache's, never a file's.
void dequantize_fp8_e4m3(const void* src, float* dst, int64_t blocks);
void quantize_fp8_e4m3(const float* src, void* dst, int64_t blocks);

// Legacy 32-element formats (quant_legacy.cc); quantizers match ggml's reference bit for bit.
void dequantize_q4_0(const void* src, float* dst, int64_t blocks);
void quantize_q4_0(const float* src, void* dst, int64_t blocks);
void dequantize_q4_1(const void* src, float* dst, int64_t blocks);
void quantize_q4_1(const float* src, void* dst, int64_t blocks);
void dequantize_q5_0(const void* src, float* dst, int64_t blocks);
void quantize_q5_0(const float* src, void* dst, int64_t blocks);
void dequantize_q5_1(const void* src, float* dst, int64_t blocks);
void quantize_q5_1(const float* src, void* dst, int64_t blocks);
void dequantize_q8_0(const void* src, float* dst, int64_t blocks);
void quantize_q8_0(const float* src, void* dst, int64_t blocks);
void dequantize_q8_1(const void* src, float* dst, int64_t blocks);
void quantize_q8_1(const float* src, void* dst, int64_t blocks);

// K-quants with 2 and 3 bits (quant_k_low.cc).
void dequantize_q2_k(const void* src, float* dst, int64_t blocks);
void quantize_q2_k(const float* src, void* dst, int64_t blocks);
void dequantize_q3_k(const void* src, float* dst, int64_t blocks);
void quantize_q3_k(const float* src, void* dst, int64_t blocks);

// K-quants with 4 and 5 bits, which share the packed 6-bit scale/min pairs (quant_k_mid.cc).
void dequantize_q4_k(const void* src, float* dst, int64_t blocks);
void quantize_q4_k(const float* src, void* dst, int64_t blocks);
void dequantize_q5_k(const void* src, float* dst, int64_t blocks);
void quantize_q5_k(const float* src, void* dst, int64_t blocks);

// K-quants with 6 and 8 bits (quant_k_high.cc).
void dequantize_q6_k(const void* src, float* dst, int64_t blocks);
void quantize_q6_k(const float* src, void* dst, int64_t blocks);
void dequantize_q8_k(const void* src, float* dst, int64_t blocks);
void quantize_q8_k(const float* src, void* dst, int64_t blocks);

// The non-linear 4-bit formats (quant_iq4.cc): dequantization bit-exact with ggml's; the
// quantizers are Lumen's own least-squares searches (llama-quantize's are not reproduced).
void dequantize_iq4_nl(const void* src, float* dst, int64_t blocks);
void quantize_iq4_nl(const float* src, void* dst, int64_t blocks);
void dequantize_iq4_xs(const void* src, float* dst, int64_t blocks);
void quantize_iq4_xs(const float* src, void* dst, int64_t blocks);
void quantize_iq4_nl_weighted(const float* x, void* dst, int64_t n, const float* importance);
void quantize_iq4_xs_weighted(const float* x, void* dst, int64_t n, const float* importance);

// MXFP4 (quant_mxfp4.cc): dequantization and quantization both ggml's reference, bit for bit.
void dequantize_mxfp4(const void* src, float* dst, int64_t blocks);
void quantize_mxfp4(const float* src, void* dst, int64_t blocks);

// K-quants quantized step for step as ggml's reference quantizers, which is what llama-quantize
// writes without an importance matrix (ggml_kquant_low/mid/high.cc). The legacy and plain
// quantizers above already are ggml's.
void quantize_q2_k_ggml(const float* src, void* dst, int64_t blocks);
void quantize_q3_k_ggml(const float* src, void* dst, int64_t blocks);
void quantize_q4_k_ggml(const float* src, void* dst, int64_t blocks);
void quantize_q5_k_ggml(const float* src, void* dst, int64_t blocks);
void quantize_q6_k_ggml(const float* src, void* dst, int64_t blocks);

// ggml's quantizers with an importance matrix (what llama-quantize --imatrix writes): one row
// of n elements, importance[i] weighting element i's error (ggml_weighted_kquant.cc,
// ggml_weighted_legacy.cc). Each row is quantized on its own, as its weights depend on it.
void quantize_q2_k_weighted(const float* x, void* dst, int64_t n, const float* importance);
void quantize_q3_k_weighted(const float* x, void* dst, int64_t n, const float* importance);
void quantize_q4_k_weighted(const float* x, void* dst, int64_t n, const float* importance);
void quantize_q5_k_weighted(const float* x, void* dst, int64_t n, const float* importance);
void quantize_q6_k_weighted(const float* x, void* dst, int64_t n, const float* importance);
void quantize_q4_0_weighted(const float* x, void* dst, int64_t n, const float* importance);
void quantize_q4_1_weighted(const float* x, void* dst, int64_t n, const float* importance);
void quantize_q5_0_weighted(const float* x, void* dst, int64_t n, const float* importance);
void quantize_q5_1_weighted(const float* x, void* dst, int64_t n, const float* importance);

}  // namespace lumen::tensor::kernels
