// Q2_K and Q3_K quantized exactly as ggml's reference quantizers do (what llama-quantize
// writes without an importance matrix): per 16-element sub-block a search from
// ggml_kquant_search.h, then 4-bit (Q2_K) or 6-bit (Q3_K) sub-block codes against one f16
// super-scale, then every element re-rounded against the scale it will be decoded with.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "tensor/block_formats.h"
#include "tensor/fp16.h"
#include "tensor/ggml_kquant_search.h"
#include "tensor/quant_kernels.h"

namespace lumen::tensor::kernels {
namespace {

using ggml_search::nearest_int;

constexpr int kSubBlocks = 16;
constexpr int kSubBlockSize = 16;

// Both formats keep 2 bits per element in qs: within each 128-element half, byte l of the
// half's 32 holds elements l, l + 32, l + 64 and l + 96 at bits 0, 2, 4 and 6.
void pack_two_bit_planes(const uint8_t* levels, uint8_t* qs) {
  for (int half = 0; half < kSuperBlock; half += 128) {
    for (int l = 0; l < 32; ++l) {
      qs[half / 4 + l] = static_cast<uint8_t>(levels[half + l] | (levels[half + l + 32] << 2) |
                                              (levels[half + l + 64] << 4) |
                                              (levels[half + l + 96] << 6));
    }
  }
}

void quantize_q2_k_block(const float* x, BlockQ2_K& block) {
  uint8_t levels[kSuperBlock];
  uint8_t scratch[kSubBlockSize];
  float weights[kSubBlockSize];
  float scales[kSubBlocks];
  float mins[kSubBlocks];
  constexpr float kCodeMax = 15.0f;
  constexpr ggml_search::AffineSearch kSearch{3, -0.5f, 0.1f, 15, true};

  float max_scale = 0.0f;  // the offset is subtracted, so scales are never negative
  float max_min = 0.0f;
  for (int j = 0; j < kSubBlocks; ++j) {
    const float* sub = x + kSubBlockSize * j;
    for (int l = 0; l < kSubBlockSize; ++l) weights[l] = std::fabs(sub[l]);
    scales[j] = ggml_search::affine_scale_search(kSubBlockSize, sub, weights, kSearch,
                                                 levels + kSubBlockSize * j, &mins[j], scratch);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }

  // Low nibble: scale code; high nibble: offset code. Stored through uint8_t as ggml does.
  if (max_scale > 0.0f) {
    const float iscale = kCodeMax / max_scale;
    for (int j = 0; j < kSubBlocks; ++j) {
      block.scales[j] = static_cast<uint8_t>(nearest_int(iscale * scales[j]));
    }
    block.d = float_to_fp16(max_scale / kCodeMax);
  } else {
    std::memset(block.scales, 0, sizeof(block.scales));
    block.d = float_to_fp16(0.0f);
  }
  if (max_min > 0.0f) {
    const float iscale = kCodeMax / max_min;
    for (int j = 0; j < kSubBlocks; ++j) {
      const int code = nearest_int(iscale * mins[j]);
      block.scales[j] = static_cast<uint8_t>(block.scales[j] | (code << 4));
    }
    block.dmin = float_to_fp16(max_min / kCodeMax);
  } else {
    block.dmin = float_to_fp16(0.0f);
  }

  for (int j = 0; j < kSubBlocks; ++j) {
    const float d = fp16_to_float(block.d) * static_cast<float>(block.scales[j] & 0xf);
    if (d == 0.0f) continue;  // keep the search's levels
    const float dm = fp16_to_float(block.dmin) * static_cast<float>(block.scales[j] >> 4);
    for (int i = 0; i < kSubBlockSize; ++i) {
      const int l = nearest_int((x[kSubBlockSize * j + i] + dm) / d);
      levels[kSubBlockSize * j + i] = static_cast<uint8_t>(l < 0 ? 0 : (l > 3 ? 3 : l));
    }
  }
  pack_two_bit_planes(levels, block.qs);
}

// Sub-block j's 6-bit code (already offset by 32) as Q3_K packs it: low 4 bits in a nibble of
// scales[j % 8] (high nibble for j >= 8), top 2 bits at bit 2 * (j / 4) of scales[8 + j % 4].
void pack_q3_scale_code(uint8_t* scales, int j, int8_t code) {
  if (j < 8) {
    scales[j] = static_cast<uint8_t>(code & 0xf);
  } else {
    scales[j - 8] = static_cast<uint8_t>(scales[j - 8] | ((code & 0xf) << 4));
  }
  const int high = code >> 4;
  scales[8 + j % 4] = static_cast<uint8_t>(scales[8 + j % 4] | (high << (2 * (j / 4))));
}

int8_t unpack_q3_scale_code(const uint8_t* scales, int j) {
  const int low = j < 8 ? (scales[j] & 0xf) : (scales[j - 8] >> 4);
  const int high = (scales[8 + j % 4] >> (2 * (j / 4))) & 3;
  return static_cast<int8_t>((low | (high << 4)) - 32);
}

void quantize_q3_k_block(const float* x, BlockQ3_K& block) {
  int8_t levels[kSuperBlock];
  float scales[kSubBlocks];

  float max_scale = 0.0f;  // signed: the sub-block scale of largest magnitude
  float amax = 0.0f;
  for (int j = 0; j < kSubBlocks; ++j) {
    scales[j] = ggml_search::symmetric_level_refinement(kSubBlockSize, 4, x + kSubBlockSize * j,
                                                        levels + kSubBlockSize * j);
    const float scale = std::fabs(scales[j]);
    if (scale > amax) {
      amax = scale;
      max_scale = scales[j];
    }
  }

  std::memset(block.scales, 0, sizeof(block.scales));
  if (max_scale != 0.0f) {
    const float iscale = -32.0f / max_scale;
    for (int j = 0; j < kSubBlocks; ++j) {
      // Narrowed to int8_t before clamping, as the reference does.
      auto code = static_cast<int8_t>(nearest_int(iscale * scales[j]));
      code = static_cast<int8_t>((code < -32 ? -32 : (code > 31 ? 31 : code)) + 32);
      pack_q3_scale_code(block.scales, j, code);
    }
    block.d = float_to_fp16(1.0f / iscale);
  } else {
    block.d = float_to_fp16(0.0f);
  }

  for (int j = 0; j < kSubBlocks; ++j) {
    const float d = fp16_to_float(block.d) * static_cast<float>(unpack_q3_scale_code(block.scales, j));
    if (d == 0.0f) continue;  // keep the search's levels
    for (int i = 0; i < kSubBlockSize; ++i) {
      const int l = nearest_int(x[kSubBlockSize * j + i] / d);
      levels[kSubBlockSize * j + i] = static_cast<int8_t>((l < -4 ? -4 : (l > 3 ? 3 : l)) + 4);
    }
  }

  // Bit 2 of each level (set when the level is 4..7) goes to hmask: element e at bit e / 32
  // of hmask[e % 32]; the low two bits go to qs.
  std::memset(block.hmask, 0, sizeof(block.hmask));
  uint8_t low_bits[kSuperBlock];
  for (int e = 0; e < kSuperBlock; ++e) {
    int level = levels[e];
    if (level > 3) {
      block.hmask[e % 32] = static_cast<uint8_t>(block.hmask[e % 32] | (1u << (e / 32)));
      level -= 4;
    }
    low_bits[e] = static_cast<uint8_t>(level);
  }
  pack_two_bit_planes(low_bits, block.qs);
}

}  // namespace

void quantize_q2_k_ggml(const float* src, void* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b, src += kSuperBlock) {
    BlockQ2_K block{};
    quantize_q2_k_block(src, block);
    store_block(dst, b, block);
  }
}

void quantize_q3_k_ggml(const float* src, void* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b, src += kSuperBlock) {
    BlockQ3_K block{};
    quantize_q3_k_block(src, block);
    store_block(dst, b, block);
  }
}

}  // namespace lumen::tensor::kernels
