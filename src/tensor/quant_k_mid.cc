// Q4_K and Q5_K: 256-element super-blocks of eight 32-element sub-blocks, each with a 6-bit
// scale code and a 6-bit min code: x = (d * sc) * q - (dmin * m). Quants are 4 bits (Q4_K) or
// 4 + 1 bits (Q5_K). Within each 64-element pair of sub-blocks, the first sub-block's quants
// are the low nibbles of 32 bytes and the second's the high nibbles.
#include <cstdint>

#include "tensor/block_formats.h"
#include "tensor/fp16.h"
#include "tensor/kquant_fit.h"
#include "tensor/quant_kernels.h"

namespace lumen::tensor::kernels {
namespace {

constexpr int kSubBlocks = 8;
constexpr int kSubBlockSize = 32;

struct ScaleAndMin {
  int scale;
  int min;
};

// The twelve scale bytes pack eight (scale, min) pairs of 6 bits. Pairs 0-3 take the low 6
// bits of bytes 0-3 (scale) and 4-7 (min); pairs 4-7 put their low 4 bits in the nibbles of
// bytes 8-11 and their top 2 bits in the spare top bits of bytes 0-3 (scale) and 4-7 (min).
ScaleAndMin unpack_scale_and_min(const uint8_t* packed, int j) {
  if (j < 4) return {packed[j] & 0x3f, packed[j + 4] & 0x3f};
  return {(packed[j + 4] & 0x0f) | ((packed[j - 4] >> 6) << 4),
          (packed[j + 4] >> 4) | ((packed[j] >> 6) << 4)};
}

void pack_scales_and_mins(const uint8_t* scales, const uint8_t* mins, uint8_t* packed) {
  for (int j = 0; j < 4; ++j) {
    packed[j] = static_cast<uint8_t>((scales[j] & 0x3f) | ((scales[j + 4] >> 4) << 6));
    packed[j + 4] = static_cast<uint8_t>((mins[j] & 0x3f) | ((mins[j + 4] >> 4) << 6));
    packed[j + 8] = static_cast<uint8_t>((scales[j + 4] & 0x0f) | ((mins[j + 4] & 0x0f) << 4));
  }
}

struct NibblePosition {
  int byte;
  int shift;
};

// Element e's 4 low bits: byte 32 * (e / 64) + e % 32, high nibble for odd sub-blocks.
NibblePosition nibble_position(int e) { return {32 * (e / 64) + e % 32, 4 * ((e / 32) % 2)}; }

int low_nibble_of(const uint8_t* qs, int e) {
  const NibblePosition at = nibble_position(e);
  return (qs[at.byte] >> at.shift) & 0x0f;
}

void set_nibble(uint8_t* qs, int e, int value) {
  const NibblePosition at = nibble_position(e);
  qs[at.byte] = static_cast<uint8_t>(qs[at.byte] | ((value & 0x0f) << at.shift));
}

// Q5_K's fifth bit of element e: bit e / 32 (its sub-block) of qh[e % 32].
int fifth_bit(const uint8_t* qh, int e) { return (qh[e % 32] >> (e / 32)) & 1; }

// Shared by both formats; `qh` is null for Q4_K.
void dequantize_super_block(uint16_t d_bits, uint16_t dmin_bits, const uint8_t* packed,
                            const uint8_t* qs, const uint8_t* qh, float* dst) {
  const float d = fp16_to_float(d_bits);
  const float dmin = fp16_to_float(dmin_bits);
  for (int sub = 0; sub < kSubBlocks; ++sub) {
    const ScaleAndMin codes = unpack_scale_and_min(packed, sub);
    const float step = d * static_cast<float>(codes.scale);
    const float offset = dmin * static_cast<float>(codes.min);
    for (int i = 0; i < kSubBlockSize; ++i) {
      const int e = sub * kSubBlockSize + i;
      const int q = low_nibble_of(qs, e) | (qh != nullptr ? fifth_bit(qh, e) << 4 : 0);
      dst[e] = step * static_cast<float>(q) - offset;
    }
  }
}

}  // namespace

void dequantize_q4_k(const void* src, float* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b, dst += kSuperBlock) {
    const auto block = load_block<BlockQ4_K>(src, b);
    dequantize_super_block(block.d, block.dmin, block.scales, block.qs, nullptr, dst);
  }
}

void quantize_q4_k(const float* src, void* dst, int64_t blocks) {
  constexpr AffineShape kShape{kSubBlocks, kSubBlockSize, /*q_max=*/15, /*code_max=*/63};
  for (int64_t b = 0; b < blocks; ++b, src += kSuperBlock) {
    AffineSuperBlock fit;
    quantize_affine_super_block(src, kShape, fit);
    BlockQ4_K block{};
    block.d = fit.d;
    block.dmin = fit.dmin;
    pack_scales_and_mins(fit.scale_codes, fit.min_codes, block.scales);
    for (int e = 0; e < kSuperBlock; ++e) set_nibble(block.qs, e, fit.q[e]);
    store_block(dst, b, block);
  }
}

void dequantize_q5_k(const void* src, float* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b, dst += kSuperBlock) {
    const auto block = load_block<BlockQ5_K>(src, b);
    dequantize_super_block(block.d, block.dmin, block.scales, block.qs, block.qh, dst);
  }
}

void quantize_q5_k(const float* src, void* dst, int64_t blocks) {
  constexpr AffineShape kShape{kSubBlocks, kSubBlockSize, /*q_max=*/31, /*code_max=*/63};
  for (int64_t b = 0; b < blocks; ++b, src += kSuperBlock) {
    AffineSuperBlock fit;
    quantize_affine_super_block(src, kShape, fit);
    BlockQ5_K block{};
    block.d = fit.d;
    block.dmin = fit.dmin;
    pack_scales_and_mins(fit.scale_codes, fit.min_codes, block.scales);
    for (int e = 0; e < kSuperBlock; ++e) {
      set_nibble(block.qs, e, fit.q[e]);
      if ((fit.q[e] & 0x10) != 0) {
        block.qh[e % 32] = static_cast<uint8_t>(block.qh[e % 32] | (1 << (e / 32)));
      }
    }
    store_block(dst, b, block);
  }
}

}  // namespace lumen::tensor::kernels
