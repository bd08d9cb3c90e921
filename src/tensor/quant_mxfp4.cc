// MXFP4: 32 E2M1 values under one E8M0 exponent (block_formats.h). Dequantization is
// 2^(e - 128) * level, the float multiply ggml and gguf-py perform, so the values are theirs bit
// for bit. The quantizer is ggml's reference rule, so its bytes are too: the exponent puts the
// block's largest magnitude a in [1, 2) x 2^(floor(log2 a)) onto level 8..12 of the doubled grid
// (values up to 1.5 x 2^floor(log2 a); larger ones clip to the top level), and each value takes
// the nearest level, the first of equals on a tie.
#include <cmath>
#include <cstdint>

#include "tensor/block_formats.h"
#include "tensor/quant_kernels.h"

namespace lumen::tensor::kernels {
namespace {

constexpr int kGroup = kLegacyBlock;

uint8_t nearest_level(float x, float d) {
  int best = 0;
  float best_err = std::fabs(static_cast<float>(kMxfp4Levels[0]) * d - x);
  for (int q = 1; q < 16; ++q) {
    const float err = std::fabs(static_cast<float>(kMxfp4Levels[q]) * d - x);
    if (err < best_err) {
      best = q;
      best_err = err;
    }
  }
  return static_cast<uint8_t>(best);
}

// floor(log2 a) - 2 + 127 as ggml computes it (in float, then to uint8). For a = 0 (and NaN,
// which no comparison passes) the exponent is 0.
uint8_t block_exponent(float amax) {
  if (!(amax > 0.0f)) return 0;
  const float e = std::floor(std::log2(amax)) - 2.0f + 127.0f;
  // A finite a gives e in [-24, 252]; ggml's conversion of a negative float (or of infinity) to
  // uint8 is undefined, and blocks whose largest value is below 2^-125 are far below any
  // weight: clamp to [0, 254].
  if (e <= 0.0f) return 0;
  return e >= 254.0f ? 254 : static_cast<uint8_t>(e);
}

}  // namespace

void dequantize_mxfp4(const void* src, float* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b) {
    const auto block = load_block<BlockMXFP4>(src, b);
    const float d = mxfp4_scale(block.e);
    for (int j = 0; j < kGroup / 2; ++j) {
      dst[b * kGroup + j] = d * static_cast<float>(kMxfp4Levels[block.qs[j] & 15]);
      dst[b * kGroup + j + kGroup / 2] = d * static_cast<float>(kMxfp4Levels[block.qs[j] >> 4]);
    }
  }
}

void quantize_mxfp4(const float* src, void* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b) {
    const float* x = src + b * kGroup;
    float amax = 0.0f;
    for (int j = 0; j < kGroup; ++j) amax = std::fmax(amax, std::fabs(x[j]));
    BlockMXFP4 block{};
    block.e = block_exponent(amax);
    const float d = mxfp4_scale(block.e);
    for (int j = 0; j < kGroup / 2; ++j) {
      block.qs[j] = static_cast<uint8_t>(nearest_level(x[j], d) | (nearest_level(x[j + kGroup / 2], d) << 4));
    }
    store_block(dst, b, block);
  }
}

}  // namespace lumen::tensor::kernels
