// The original ggml formats: blocks of 32 elements with one f16 scale (and, for the "_1"
// variants, an f16 minimum). These quantizers follow ggml's reference quantizers step for step
// (same float operations in the same order, same truncation) so the bytes they produce are
// identical to ggml's and gguf-py's; that keeps files Lumen writes reproducible with the
// upstream tools. Dequantization is d * q (+ m), computed exactly as ggml does it.
#include <cmath>
#include <cstdint>
#include <limits>

#include "tensor/block_formats.h"
#include "tensor/fp16.h"
#include "tensor/quant_kernels.h"

namespace lumen::tensor::kernels {
namespace {

constexpr int kHalf = kLegacyBlock / 2;

// Element j of a block stored as nibbles: the first half in low nibbles, the second in high.
int nibble(const uint8_t* qs, int j) { return j < kHalf ? (qs[j] & 0x0f) : (qs[j - kHalf] >> 4); }

void pack_nibbles(const uint8_t* codes, uint8_t* qs) {
  for (int j = 0; j < kHalf; ++j) {
    qs[j] = static_cast<uint8_t>((codes[j] & 0x0f) | ((codes[j + kHalf] & 0x0f) << 4));
  }
}

// Bit 4 of 5-bit codes: bit j of a little-endian 32-bit word holds element j's.
uint32_t load_high_bits(const uint8_t* qh) {
  return uint32_t{qh[0]} | uint32_t{qh[1]} << 8 | uint32_t{qh[2]} << 16 | uint32_t{qh[3]} << 24;
}

void pack_high_bits(const uint8_t* codes, uint8_t* qh) {
  uint32_t bits = 0;
  for (int j = 0; j < kLegacyBlock; ++j) bits |= uint32_t{(codes[j] >> 4) & 1u} << j;
  for (int k = 0; k < 4; ++k) qh[k] = static_cast<uint8_t>(bits >> (8 * k));
}

int high_bit(uint32_t bits, int j) { return static_cast<int>((bits >> j) & 1u); }

// The element of largest magnitude, with its sign (the first one on ties; 0 for a zero block).
// Scaling by it maps that element onto the format's most negative code, which is the one code
// without a positive twin, so no range is wasted.
float signed_abs_max(const float* x) {
  float amax = 0.0f;
  float max = 0.0f;
  for (int j = 0; j < kLegacyBlock; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

struct Range {
  float min = std::numeric_limits<float>::max();
  float max = -std::numeric_limits<float>::max();
};

Range min_max(const float* x) {
  Range range;
  for (int j = 0; j < kLegacyBlock; ++j) {
    if (x[j] < range.min) range.min = x[j];
    if (x[j] > range.max) range.max = x[j];
  }
  return range;
}

// ggml truncates (value + 0.5) toward zero and caps it at the top code. For real inputs the
// value is never below 0.5, so flooring at 0 only keeps NaN and garbage away from the cast.
uint8_t truncate_code(float value, int top) {
  if (!(value >= 1.0f)) return 0;
  if (value >= static_cast<float>(top)) return static_cast<uint8_t>(top);
  return static_cast<uint8_t>(value);
}

float inverse_or_zero(float d) { return d != 0.0f ? 1.0f / d : 0.0f; }

// Symmetric formats with codes in [0, top] around `offset` = (top + 1) / 2: q = x/d + offset.
float quantize_symmetric_block(const float* x, int top, uint8_t* codes) {
  const float offset = static_cast<float>((top + 1) / 2);
  const float d = signed_abs_max(x) / -offset;
  const float inverse = inverse_or_zero(d);
  for (int j = 0; j < kLegacyBlock; ++j) {
    codes[j] = truncate_code(x[j] * inverse + (offset + 0.5f), top);
  }
  return d;
}

struct MinAndScale {
  float min;
  float d;
};

// Asymmetric formats: q = (x - min) / d, codes in [0, top].
MinAndScale quantize_min_block(const float* x, int top, uint8_t* codes) {
  const Range range = min_max(x);
  const float d = (range.max - range.min) / static_cast<float>(top);
  const float inverse = inverse_or_zero(d);
  for (int j = 0; j < kLegacyBlock; ++j) {
    codes[j] = truncate_code((x[j] - range.min) * inverse + 0.5f, top);
  }
  return {range.min, d};
}

// Q8 blocks: q = round(x / d) with d = max|x| / 127.
float quantize_q8_block(const float* x, int8_t* qs) {
  float amax = 0.0f;
  for (int j = 0; j < kLegacyBlock; ++j) amax = std::fmax(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float inverse = inverse_or_zero(d);
  for (int j = 0; j < kLegacyBlock; ++j) {
    qs[j] = static_cast<int8_t>(clamp_round(x[j] * inverse, -127, 127));
  }
  return d;
}

}  // namespace

void dequantize_q4_0(const void* src, float* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b, dst += kLegacyBlock) {
    const auto block = load_block<BlockQ4_0>(src, b);
    const float d = fp16_to_float(block.d);
    for (int j = 0; j < kLegacyBlock; ++j) dst[j] = static_cast<float>(nibble(block.qs, j) - 8) * d;
  }
}

void quantize_q4_0(const float* src, void* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b, src += kLegacyBlock) {
    uint8_t codes[kLegacyBlock];
    BlockQ4_0 block{};
    block.d = float_to_fp16(quantize_symmetric_block(src, 15, codes));
    pack_nibbles(codes, block.qs);
    store_block(dst, b, block);
  }
}

void dequantize_q4_1(const void* src, float* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b, dst += kLegacyBlock) {
    const auto block = load_block<BlockQ4_1>(src, b);
    const float d = fp16_to_float(block.d);
    const float m = fp16_to_float(block.m);
    for (int j = 0; j < kLegacyBlock; ++j) dst[j] = static_cast<float>(nibble(block.qs, j)) * d + m;
  }
}

void quantize_q4_1(const float* src, void* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b, src += kLegacyBlock) {
    uint8_t codes[kLegacyBlock];
    const MinAndScale fit = quantize_min_block(src, 15, codes);
    BlockQ4_1 block{};
    block.d = float_to_fp16(fit.d);
    block.m = float_to_fp16(fit.min);
    pack_nibbles(codes, block.qs);
    store_block(dst, b, block);
  }
}

void dequantize_q5_0(const void* src, float* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b, dst += kLegacyBlock) {
    const auto block = load_block<BlockQ5_0>(src, b);
    const float d = fp16_to_float(block.d);
    const uint32_t high = load_high_bits(block.qh);
    for (int j = 0; j < kLegacyBlock; ++j) {
      const int q = nibble(block.qs, j) | (high_bit(high, j) << 4);
      dst[j] = static_cast<float>(q - 16) * d;
    }
  }
}

void quantize_q5_0(const float* src, void* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b, src += kLegacyBlock) {
    uint8_t codes[kLegacyBlock];
    BlockQ5_0 block{};
    block.d = float_to_fp16(quantize_symmetric_block(src, 31, codes));
    pack_high_bits(codes, block.qh);
    pack_nibbles(codes, block.qs);
    store_block(dst, b, block);
  }
}

void dequantize_q5_1(const void* src, float* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b, dst += kLegacyBlock) {
    const auto block = load_block<BlockQ5_1>(src, b);
    const float d = fp16_to_float(block.d);
    const float m = fp16_to_float(block.m);
    const uint32_t high = load_high_bits(block.qh);
    for (int j = 0; j < kLegacyBlock; ++j) {
      const int q = nibble(block.qs, j) | (high_bit(high, j) << 4);
      dst[j] = static_cast<float>(q) * d + m;
    }
  }
}

void quantize_q5_1(const float* src, void* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b, src += kLegacyBlock) {
    uint8_t codes[kLegacyBlock];
    const MinAndScale fit = quantize_min_block(src, 31, codes);
    BlockQ5_1 block{};
    block.d = float_to_fp16(fit.d);
    block.m = float_to_fp16(fit.min);
    pack_high_bits(codes, block.qh);
    pack_nibbles(codes, block.qs);
    store_block(dst, b, block);
  }
}

void dequantize_q8_0(const void* src, float* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b, dst += kLegacyBlock) {
    const auto block = load_block<BlockQ8_0>(src, b);
    const float d = fp16_to_float(block.d);
    for (int j = 0; j < kLegacyBlock; ++j) dst[j] = static_cast<float>(block.qs[j]) * d;
  }
}

void quantize_q8_0(const float* src, void* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b, src += kLegacyBlock) {
    BlockQ8_0 block{};
    block.d = float_to_fp16(quantize_q8_block(src, block.qs));
    store_block(dst, b, block);
  }
}

void dequantize_q8_1(const void* src, float* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b, dst += kLegacyBlock) {
    const auto block = load_block<BlockQ8_1>(src, b);
    const float d = fp16_to_float(block.d);
    for (int j = 0; j < kLegacyBlock; ++j) dst[j] = static_cast<float>(block.qs[j]) * d;
  }
}

void quantize_q8_1(const float* src, void* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b, src += kLegacyBlock) {
    BlockQ8_1 block{};
    const float d = quantize_q8_block(src, block.qs);
    int sum = 0;
    for (const int8_t q : block.qs) sum += q;
    block.d = float_to_fp16(d);
    block.s = float_to_fp16(static_cast<float>(sum) * d);
    store_block(dst, b, block);
  }
}

}  // namespace lumen::tensor::kernels
