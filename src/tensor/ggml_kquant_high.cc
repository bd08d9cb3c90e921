// Q6_K quantized exactly as ggml's reference quantizer does (what llama-quantize writes
// without an importance matrix): per 16-element sub-block a symmetric scale search, int8
// sub-block codes against one f16 super-scale, then every element re-rounded against the
// scale it will be decoded with.
#include <cmath>
#include <cstdint>

#include "tensor/block_formats.h"
#include "tensor/fp16.h"
#include "tensor/ggml_kquant_search.h"
#include "tensor/quant_kernels.h"

namespace lumen::tensor::kernels {
namespace {

using ggml_search::nearest_int;

constexpr int kSubBlocks = 16;
constexpr int kSubBlockSize = 16;

void quantize_q6_k_block(const float* x, BlockQ6_K& block) {
  int8_t levels[kSuperBlock];
  float scales[kSubBlocks];

  float max_scale = 0.0f;  // signed: the sub-block scale of largest magnitude
  float max_abs_scale = 0.0f;
  for (int j = 0; j < kSubBlocks; ++j) {
    scales[j] = ggml_search::symmetric_scale_search(kSubBlockSize, 32, x + kSubBlockSize * j,
                                                    levels + kSubBlockSize * j);
    const float abs_scale = std::fabs(scales[j]);
    if (abs_scale > max_abs_scale) {
      max_abs_scale = abs_scale;
      max_scale = scales[j];
    }
  }
  if (max_abs_scale < ggml_search::kGroupMaxEps) {
    block = BlockQ6_K{};  // all zero, d included
    return;
  }

  const float iscale = -128.0f / max_scale;
  block.d = float_to_fp16(1.0f / iscale);
  for (int j = 0; j < kSubBlocks; ++j) {
    const int code = nearest_int(iscale * scales[j]);
    block.scales[j] = static_cast<int8_t>(code < 127 ? code : 127);
  }
  for (int j = 0; j < kSubBlocks; ++j) {
    const float d = fp16_to_float(block.d) * static_cast<float>(block.scales[j]);
    if (d == 0.0f) continue;  // keep the search's levels
    for (int i = 0; i < kSubBlockSize; ++i) {
      const int l = nearest_int(x[kSubBlockSize * j + i] / d);
      levels[kSubBlockSize * j + i] = static_cast<int8_t>((l < -32 ? -32 : (l > 31 ? 31 : l)) + 32);
    }
  }

  // Each 128-element half as four 32-element quarters: quarters 0 and 1 in the low nibbles of
  // ql[0..31] and ql[32..63], quarters 2 and 3 in their high nibbles, and the top 2 bits of
  // quarter k at bit 2k of qh[l].
  for (int half = 0; half < kSuperBlock / 128; ++half) {
    const int8_t* q = levels + 128 * half;
    uint8_t* ql = block.ql + 64 * half;
    uint8_t* qh = block.qh + 32 * half;
    for (int l = 0; l < 32; ++l) {
      ql[l] = static_cast<uint8_t>((q[l] & 0xf) | ((q[l + 64] & 0xf) << 4));
      ql[l + 32] = static_cast<uint8_t>((q[l + 32] & 0xf) | ((q[l + 96] & 0xf) << 4));
      qh[l] = static_cast<uint8_t>((q[l] >> 4) | ((q[l + 32] >> 4) << 2) | ((q[l + 64] >> 4) << 4) |
                                   ((q[l + 96] >> 4) << 6));
    }
  }
}

}  // namespace

void quantize_q6_k_ggml(const float* src, void* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b, src += kSuperBlock) {
    BlockQ6_K block{};
    quantize_q6_k_block(src, block);
    store_block(dst, b, block);
  }
}

}  // namespace lumen::tensor::kernels
