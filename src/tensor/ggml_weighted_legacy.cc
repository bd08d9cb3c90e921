// The legacy 32-element formats quantized as ggml does with an importance matrix: each
// element's weight is importance[column] * sqrt(sigma2 + x^2), sigma2 being the mean square of
// the whole row (not of a block, unlike the K-quants), and each block's scale (and offset) is
// the weighted search's. Q8_0 has no weighted variant: ggml ignores the importance there.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "tensor/block_formats.h"
#include "tensor/fp16.h"
#include "tensor/ggml_weighted_search.h"
#include "tensor/quant_kernels.h"

namespace lumen::tensor::kernels {
namespace {

namespace weighted = ggml_weighted;

float row_mean_square(const float* x, int64_t n) {
  float sum = 0.0f;
  for (int64_t j = 0; j < n; ++j) sum += x[j] * x[j];
  return sum / static_cast<float>(n);
}

void block_weights(const float* x, const float* importance, float sigma2, float* weights) {
  for (int j = 0; j < kLegacyBlock; ++j) weights[j] = importance[j] * std::sqrt(sigma2 + x[j] * x[j]);
}

// Element j < 16 in the low nibble of qs[j], element j + 16 in its high nibble; for the 5-bit
// formats bit 4 of element j is bit j of qh.
template <typename Level>
void pack_nibbles(const Level* levels, uint8_t* qs) {
  for (int j = 0; j < kLegacyBlock / 2; ++j) {
    qs[j] = static_cast<uint8_t>((levels[j] & 0x0f) | ((levels[j + 16] & 0x0f) << 4));
  }
}

template <typename Level>
void pack_high_bits(const Level* levels, uint8_t* qh_bytes) {
  uint32_t qh = 0;
  for (int j = 0; j < kLegacyBlock; ++j) qh |= ((static_cast<uint32_t>(levels[j]) & 0x10u) >> 4) << j;
  std::memcpy(qh_bytes, &qh, sizeof(qh));
}

template <typename Block, typename Fill>
void quantize_blocks(const float* x, void* dst, int64_t n, const float* importance, Fill fill) {
  const float sigma2 = row_mean_square(x, n);
  float weights[kLegacyBlock];
  for (int64_t b = 0; b < n / kLegacyBlock; ++b) {
    const float* xb = x + b * kLegacyBlock;
    block_weights(xb, importance + b * kLegacyBlock, sigma2, weights);
    Block block{};
    fill(xb, weights, block);
    store_block(dst, b, block);
  }
}

}  // namespace

void quantize_q4_0_weighted(const float* x, void* dst, int64_t n, const float* importance) {
  quantize_blocks<BlockQ4_0>(x, dst, n, importance, [](const float* xb, const float* w, BlockQ4_0& block) {
    int8_t levels[kLegacyBlock];
    block.d = float_to_fp16(weighted::symmetric_search(kLegacyBlock, 8, xb, w, levels));
    pack_nibbles(levels, block.qs);
  });
}

void quantize_q4_1_weighted(const float* x, void* dst, int64_t n, const float* importance) {
  quantize_blocks<BlockQ4_1>(x, dst, n, importance, [](const float* xb, const float* w, BlockQ4_1& block) {
    uint8_t levels[kLegacyBlock], scratch[kLegacyBlock];
    float offset = 0.0f;
    block.d = float_to_fp16(weighted::affine_search(kLegacyBlock, 15, xb, w, levels, &offset, scratch));
    block.m = float_to_fp16(-offset);
    pack_nibbles(levels, block.qs);
  });
}

void quantize_q5_0_weighted(const float* x, void* dst, int64_t n, const float* importance) {
  quantize_blocks<BlockQ5_0>(x, dst, n, importance, [](const float* xb, const float* w, BlockQ5_0& block) {
    int8_t levels[kLegacyBlock];
    block.d = float_to_fp16(weighted::symmetric_search(kLegacyBlock, 16, xb, w, levels));
    pack_nibbles(levels, block.qs);
    pack_high_bits(levels, block.qh);
  });
}

void quantize_q5_1_weighted(const float* x, void* dst, int64_t n, const float* importance) {
  quantize_blocks<BlockQ5_1>(x, dst, n, importance, [](const float* xb, const float* w, BlockQ5_1& block) {
    uint8_t levels[kLegacyBlock], scratch[kLegacyBlock];
    float offset = 0.0f;
    block.d = float_to_fp16(weighted::affine_search(kLegacyBlock, 31, xb, w, levels, &offset, scratch));
    block.m = float_to_fp16(-offset);
    pack_nibbles(levels, block.qs);
    pack_high_bits(levels, block.qh);
  });
}

}  // namespace lumen::tensor::kernels
