// Q2_K and Q3_K: 256-element super-blocks of sixteen 16-element sub-blocks, with 2-bit
// (Q2_K, plus a per-sub-block minimum) and 3-bit (Q3_K, signed) quants. Both store their low
// 2 bits the same way: each 32-byte half of qs holds 128 elements as four 2-bit planes, so
// element e of a half lives in byte e % 32 at bit 2 * (e / 32).
#include <cstdint>

#include "tensor/block_formats.h"
#include "tensor/fp16.h"
#include "tensor/kquant_fit.h"
#include "tensor/quant_kernels.h"

namespace lumen::tensor::kernels {
namespace {

constexpr int kSubBlocks = 16;
constexpr int kSubBlockSize = 16;

struct BitPosition {
  int byte;
  int shift;
};

// Where the low two bits of element e (0..255) sit in qs.
BitPosition two_bit_position(int e) {
  const int half = e / 128;
  const int within = e % 128;
  return {32 * half + within % 32, 2 * (within / 32)};
}

int low_two_bits(const uint8_t* qs, int e) {
  const BitPosition at = two_bit_position(e);
  return (qs[at.byte] >> at.shift) & 3;
}

void set_low_two_bits(uint8_t* qs, int e, int value) {
  const BitPosition at = two_bit_position(e);
  qs[at.byte] = static_cast<uint8_t>(qs[at.byte] | ((value & 3) << at.shift));
}

// Q3_K's third bit of element e: bit e / 32 of hmask[e % 32].
int q3_high_bit(const uint8_t* hmask, int e) { return (hmask[e % 32] >> (e / 32)) & 1; }

// Q3_K's sixteen 6-bit scale codes (stored with a +32 bias): the low 4 bits of code i are a
// nibble of byte i % 8 (low nibble for i < 8), its high 2 bits sit in byte 8 + i % 4 at bit
// 2 * (i / 4).
int q3_scale_code(const uint8_t* scales, int i) {
  const int low = (scales[i % 8] >> (4 * (i / 8))) & 0x0f;
  const int high = (scales[8 + i % 4] >> (2 * (i / 4))) & 3;
  return low | (high << 4);
}

void set_q3_scale_code(uint8_t* scales, int i, int code) {
  scales[i % 8] = static_cast<uint8_t>(scales[i % 8] | ((code & 0x0f) << (4 * (i / 8))));
  scales[8 + i % 4] =
      static_cast<uint8_t>(scales[8 + i % 4] | (((code >> 4) & 3) << (2 * (i / 4))));
}

}  // namespace

void dequantize_q2_k(const void* src, float* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b, dst += kSuperBlock) {
    const auto block = load_block<BlockQ2_K>(src, b);
    const float d = fp16_to_float(block.d);
    const float dmin = fp16_to_float(block.dmin);
    for (int sub = 0; sub < kSubBlocks; ++sub) {
      // Low nibble: the sub-block's scale code; high nibble: its min code.
      const float step = d * static_cast<float>(block.scales[sub] & 0x0f);
      const float offset = dmin * static_cast<float>(block.scales[sub] >> 4);
      for (int i = 0; i < kSubBlockSize; ++i) {
        const int e = sub * kSubBlockSize + i;
        dst[e] = step * static_cast<float>(low_two_bits(block.qs, e)) - offset;
      }
    }
  }
}

void quantize_q2_k(const float* src, void* dst, int64_t blocks) {
  constexpr AffineShape kShape{kSubBlocks, kSubBlockSize, /*q_max=*/3, /*code_max=*/15};
  for (int64_t b = 0; b < blocks; ++b, src += kSuperBlock) {
    AffineSuperBlock fit;
    quantize_affine_super_block(src, kShape, fit);
    BlockQ2_K block{};
    block.d = fit.d;
    block.dmin = fit.dmin;
    for (int sub = 0; sub < kSubBlocks; ++sub) {
      block.scales[sub] = static_cast<uint8_t>(fit.scale_codes[sub] | (fit.min_codes[sub] << 4));
    }
    for (int e = 0; e < kSuperBlock; ++e) set_low_two_bits(block.qs, e, fit.q[e]);
    store_block(dst, b, block);
  }
}

void dequantize_q3_k(const void* src, float* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b, dst += kSuperBlock) {
    const auto block = load_block<BlockQ3_K>(src, b);
    const float d = fp16_to_float(block.d);
    for (int sub = 0; sub < kSubBlocks; ++sub) {
      const float step = d * static_cast<float>(q3_scale_code(block.scales, sub) - 32);
      for (int i = 0; i < kSubBlockSize; ++i) {
        const int e = sub * kSubBlockSize + i;
        // A clear high bit means the quant is 4 lower: q = low - 4 * (1 - high).
        const int q = low_two_bits(block.qs, e) - (q3_high_bit(block.hmask, e) != 0 ? 0 : 4);
        dst[e] = step * static_cast<float>(q);
      }
    }
  }
}

void quantize_q3_k(const float* src, void* dst, int64_t blocks) {
  constexpr SymmetricShape kShape{kSubBlocks, kSubBlockSize, /*q_min=*/-4, /*q_max=*/3,
                                  /*code_min=*/-32, /*code_max=*/31};
  for (int64_t b = 0; b < blocks; ++b, src += kSuperBlock) {
    SymmetricSuperBlock fit;
    quantize_symmetric_super_block(src, kShape, fit);
    BlockQ3_K block{};
    block.d = fit.d;
    for (int sub = 0; sub < kSubBlocks; ++sub) {
      set_q3_scale_code(block.scales, sub, fit.scale_codes[sub] + 32);
    }
    for (int e = 0; e < kSuperBlock; ++e) {
      const int biased = fit.q[e] + 4;  // 0..7: bit 2 goes to hmask, bits 0-1 to qs
      set_low_two_bits(block.qs, e, biased);
      if ((biased & 4) != 0) {
        block.hmask[e % 32] = static_cast<uint8_t>(block.hmask[e % 32] | (1 << (e / 32)));
      }
    }
    store_block(dst, b, block);
  }
}

}  // namespace lumen::tensor::kernels
