// Q4_K and Q5_K quantized exactly as ggml's reference quantizers do (what llama-quantize
// writes without an importance matrix): per 32-element sub-block an affine search weighted by
// RMS(sub-block) + |x|, 6-bit scale and offset codes against two f16 super-scales, then every
// element re-rounded against the scale and offset it will be decoded with.
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

constexpr int kSubBlocks = 8;
constexpr int kSubBlockSize = 32;

// The super-block header both formats share: f16 d and dmin and eight 6-bit (scale, offset)
// code pairs packed into twelve bytes. Pairs 0-3 use the low 6 bits of bytes 0-3 (scale) and
// 4-7 (offset); pairs 4-7 put their low 4 bits in the nibbles of bytes 8-11 and their top 2
// bits in the spare top bits of bytes 0-3 (scale) and 4-7 (offset).
struct Header {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
};

void pack_code_pair(uint8_t* scales, int j, uint8_t scale_code, uint8_t min_code) {
  if (j < 4) {
    scales[j] = scale_code;
    scales[j + 4] = min_code;
  } else {
    scales[j + 4] = static_cast<uint8_t>((scale_code & 0xf) | ((min_code & 0xf) << 4));
    scales[j - 4] = static_cast<uint8_t>(scales[j - 4] | ((scale_code >> 4) << 6));
    scales[j] = static_cast<uint8_t>(scales[j] | ((min_code >> 4) << 6));
  }
}

void unpack_code_pair(const uint8_t* scales, int j, uint8_t& scale_code, uint8_t& min_code) {
  if (j < 4) {
    scale_code = scales[j] & 63;
    min_code = scales[j + 4] & 63;
  } else {
    scale_code = static_cast<uint8_t>((scales[j + 4] & 0xf) | ((scales[j - 4] >> 6) << 4));
    min_code = static_cast<uint8_t>((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4));
  }
}

// Fills the header and the 256 levels in [0, nmax] of one super-block.
void quantize_affine_block(const float* x, const ggml_search::AffineSearch& search, Header& header,
                           uint8_t* levels) {
  uint8_t scratch[kSubBlockSize];
  float weights[kSubBlockSize];
  float scales[kSubBlocks];
  float mins[kSubBlocks];

  float max_scale = 0.0f;  // the offset is subtracted, so scales are never negative
  float max_min = 0.0f;
  for (int j = 0; j < kSubBlocks; ++j) {
    const float* sub = x + kSubBlockSize * j;
    float sum_x2 = 0.0f;
    for (int l = 0; l < kSubBlockSize; ++l) sum_x2 += sub[l] * sub[l];
    const float rms = std::sqrt(sum_x2 / static_cast<float>(kSubBlockSize));
    for (int l = 0; l < kSubBlockSize; ++l) weights[l] = rms + std::fabs(sub[l]);
    scales[j] = ggml_search::affine_scale_search(kSubBlockSize, sub, weights, search,
                                                 levels + kSubBlockSize * j, &mins[j], scratch);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }

  const float inv_scale = max_scale > 0.0f ? 63.0f / max_scale : 0.0f;
  const float inv_min = max_min > 0.0f ? 63.0f / max_min : 0.0f;
  std::memset(header.scales, 0, sizeof(header.scales));
  for (int j = 0; j < kSubBlocks; ++j) {
    // Narrowed to uint8_t before capping at 63, as the reference does.
    auto scale_code = static_cast<uint8_t>(nearest_int(inv_scale * scales[j]));
    auto min_code = static_cast<uint8_t>(nearest_int(inv_min * mins[j]));
    if (scale_code > 63) scale_code = 63;
    if (min_code > 63) min_code = 63;
    pack_code_pair(header.scales, j, scale_code, min_code);
  }
  header.d = float_to_fp16(max_scale / 63.0f);
  header.dmin = float_to_fp16(max_min / 63.0f);

  for (int j = 0; j < kSubBlocks; ++j) {
    uint8_t scale_code = 0;
    uint8_t min_code = 0;
    unpack_code_pair(header.scales, j, scale_code, min_code);
    const float d = fp16_to_float(header.d) * static_cast<float>(scale_code);
    if (d == 0.0f) continue;  // keep the search's levels
    const float dm = fp16_to_float(header.dmin) * static_cast<float>(min_code);
    for (int i = 0; i < kSubBlockSize; ++i) {
      const int l = nearest_int((x[kSubBlockSize * j + i] + dm) / d);
      levels[kSubBlockSize * j + i] =
          static_cast<uint8_t>(l < 0 ? 0 : (l > search.nmax ? search.nmax : l));
    }
  }
}

}  // namespace

void quantize_q4_k_ggml(const float* src, void* dst, int64_t blocks) {
  constexpr ggml_search::AffineSearch kSearch{15, -1.0f, 0.1f, 20, false};
  for (int64_t b = 0; b < blocks; ++b, src += kSuperBlock) {
    Header header{};
    uint8_t levels[kSuperBlock];
    quantize_affine_block(src, kSearch, header, levels);
    BlockQ4_K block{};
    block.d = header.d;
    block.dmin = header.dmin;
    std::memcpy(block.scales, header.scales, sizeof(block.scales));
    // Each 64-element pair of sub-blocks: the first in the low nibbles of 32 bytes, the
    // second in the high nibbles.
    for (int pair = 0; pair < kSuperBlock / 64; ++pair) {
      for (int l = 0; l < 32; ++l) {
        block.qs[32 * pair + l] =
            static_cast<uint8_t>(levels[64 * pair + l] | (levels[64 * pair + l + 32] << 4));
      }
    }
    store_block(dst, b, block);
  }
}

void quantize_q5_k_ggml(const float* src, void* dst, int64_t blocks) {
  constexpr ggml_search::AffineSearch kSearch{31, -0.5f, 0.1f, 15, false};
  for (int64_t b = 0; b < blocks; ++b, src += kSuperBlock) {
    Header header{};
    uint8_t levels[kSuperBlock];
    quantize_affine_block(src, kSearch, header, levels);
    BlockQ5_K block{};
    block.d = header.d;
    block.dmin = header.dmin;
    std::memcpy(block.scales, header.scales, sizeof(block.scales));
    // Low 4 bits as Q4_K; bit 4 of element e is bit e / 32 (its sub-block) of qh[e % 32].
    for (int pair = 0; pair < kSuperBlock / 64; ++pair) {
      for (int l = 0; l < 32; ++l) {
        const int first = levels[64 * pair + l];
        const int second = levels[64 * pair + l + 32];
        block.qs[32 * pair + l] = static_cast<uint8_t>((first & 0xf) | ((second & 0xf) << 4));
        const int high = ((first >> 4) << (2 * pair)) | ((second >> 4) << (2 * pair + 1));
        block.qh[l] = static_cast<uint8_t>(block.qh[l] | high);
      }
    }
    store_block(dst, b, block);
  }
}

}  // namespace lumen::tensor::kernels
