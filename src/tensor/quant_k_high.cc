// Q6_K and Q8_K, the high-precision K-quants. Q6_K stores weights: sixteen 16-element
// sub-blocks with int8 scales and 6-bit signed quants. Q8_K is the 8-bit form ggml quantizes
// activations to for K-quant dot products; its scale is an f32 and it carries per-16 sums.
#include <cmath>
#include <cstdint>

#include "tensor/block_formats.h"
#include "tensor/fp16.h"
#include "tensor/kquant_fit.h"
#include "tensor/quant_kernels.h"

namespace lumen::tensor::kernels {
namespace {

constexpr int kSubBlocks = 16;
constexpr int kSubBlockSize = 16;

// Q6_K keeps each 128-element half as four 32-element quarters. Quarter k of half h has its
// low 4 bits in ql[64h + 32(k % 2) + l] (high nibble for k >= 2) and its top 2 bits in
// qh[32h + l] at bit 2k, l being the position within the quarter.
struct SixBitPosition {
  int low_byte;
  int low_shift;
  int high_byte;
  int high_shift;
};

SixBitPosition six_bit_position(int e) {
  const int half = e / 128;
  const int quarter = (e % 128) / 32;
  const int l = e % 32;
  return {64 * half + 32 * (quarter % 2) + l, 4 * (quarter / 2), 32 * half + l, 2 * quarter};
}

}  // namespace

void dequantize_q6_k(const void* src, float* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b, dst += kSuperBlock) {
    const auto block = load_block<BlockQ6_K>(src, b);
    const float d = fp16_to_float(block.d);
    for (int sub = 0; sub < kSubBlocks; ++sub) {
      const float step = d * static_cast<float>(block.scales[sub]);
      for (int i = 0; i < kSubBlockSize; ++i) {
        const int e = sub * kSubBlockSize + i;
        const SixBitPosition at = six_bit_position(e);
        const int biased = ((block.ql[at.low_byte] >> at.low_shift) & 0x0f) |
                           (((block.qh[at.high_byte] >> at.high_shift) & 3) << 4);
        dst[e] = step * static_cast<float>(biased - 32);
      }
    }
  }
}

void quantize_q6_k(const float* src, void* dst, int64_t blocks) {
  constexpr SymmetricShape kShape{kSubBlocks, kSubBlockSize, /*q_min=*/-32, /*q_max=*/31,
                                  /*code_min=*/-128, /*code_max=*/127};
  for (int64_t b = 0; b < blocks; ++b, src += kSuperBlock) {
    SymmetricSuperBlock fit;
    quantize_symmetric_super_block(src, kShape, fit);
    BlockQ6_K block{};
    block.d = fit.d;
    for (int sub = 0; sub < kSubBlocks; ++sub) block.scales[sub] = fit.scale_codes[sub];
    for (int e = 0; e < kSuperBlock; ++e) {
      const int biased = fit.q[e] + 32;  // 0..63
      const SixBitPosition at = six_bit_position(e);
      block.ql[at.low_byte] =
          static_cast<uint8_t>(block.ql[at.low_byte] | ((biased & 0x0f) << at.low_shift));
      block.qh[at.high_byte] =
          static_cast<uint8_t>(block.qh[at.high_byte] | ((biased >> 4) << at.high_shift));
    }
    store_block(dst, b, block);
  }
}

void dequantize_q8_k(const void* src, float* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b, dst += kSuperBlock) {
    const auto block = load_block<BlockQ8_K>(src, b);
    for (int e = 0; e < kSuperBlock; ++e) dst[e] = block.d * static_cast<float>(block.qs[e]);
  }
}

void quantize_q8_k(const float* src, void* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b, src += kSuperBlock) {
    float amax = 0.0f;
    for (int e = 0; e < kSuperBlock; ++e) amax = std::fmax(amax, std::fabs(src[e]));
    BlockQ8_K block{};
    if (amax > 0.0f) {
      // The f32 scale has range to spare, so unlike the f16 formats no input can overflow it.
      block.d = amax / 127.0f;
      const float inverse = 127.0f / amax;
      for (int e = 0; e < kSuperBlock; ++e) {
        block.qs[e] = static_cast<int8_t>(clamp_round(src[e] * inverse, -127, 127));
      }
    }
    for (int sub = 0; sub < kSubBlocks; ++sub) {
      int sum = 0;
      for (int i = 0; i < kSubBlockSize; ++i) sum += block.qs[sub * kSubBlockSize + i];
      block.bsums[sub] = static_cast<int16_t>(sum);
    }
    store_block(dst, b, block);
  }
}

}  // namespace lumen::tensor::kernels
