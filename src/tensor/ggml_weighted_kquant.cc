// K-quants quantized as ggml does when llama-quantize has an importance matrix: each element's
// weight is importance[column] * sqrt(sigma2 + x^2) (sigma2 from the super-block's mean
// square), the sub-block searches and the super-block's scale codes are weighted by it, and
// every element is then re-rounded against the scale it will be decoded with. Q6_K weights by
// the importance alone, as the reference does.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "tensor/block_formats.h"
#include "tensor/fp16.h"
#include "tensor/ggml_kquant_search.h"
#include "tensor/ggml_weighted_search.h"
#include "tensor/quant_kernels.h"

namespace lumen::tensor::kernels {
namespace {

using ggml_search::nearest_int;
namespace weighted = ggml_weighted;

int clamp_level(int level, int lo, int hi) { return level < lo ? lo : (level > hi ? hi : level); }

// factor * mean of x^2 over the super-block.
float mean_square(const float* x, float factor) {
  float sum = 0.0f;
  for (int l = 0; l < kSuperBlock; ++l) sum += x[l] * x[l];
  return factor * sum / static_cast<float>(kSuperBlock);
}

// Element weights of one sub-block, and their sum.
float element_weights(int n, const float* x, const float* importance, float sigma2, float* weights) {
  for (int l = 0; l < n; ++l) weights[l] = importance[l] * std::sqrt(sigma2 + x[l] * x[l]);
  float sum = 0.0f;
  for (int l = 0; l < n; ++l) sum += weights[l];
  return sum;
}

// Two bits per element, four 32-element planes per 128 elements (Q2_K's and Q3_K's layout).
void pack_two_bit_planes(const uint8_t* levels, uint8_t* qs) {
  for (int j = 0; j < kSuperBlock; j += 128) {
    for (int l = 0; l < 32; ++l) {
      qs[j / 4 + l] = static_cast<uint8_t>(levels[j + l] | (levels[j + l + 32] << 2) | (levels[j + l + 64] << 4) |
                                           (levels[j + l + 96] << 6));
    }
  }
}

void q2_k_block(const float* x, const float* importance, BlockQ2_K& block) {
  uint8_t levels[kSuperBlock];
  uint8_t scratch[16];
  float scales[16], mins[16], sums[16], weights[16];
  uint8_t scale_codes[16], min_codes[16];
  const float sigma2 = mean_square(x, 1.0f);
  for (int j = 0; j < 16; ++j) {
    sums[j] = element_weights(16, x + 16 * j, importance + 16 * j, sigma2, weights);
    scales[j] = weighted::affine_search(16, 3, x + 16 * j, weights, levels + 16 * j, &mins[j], scratch);
  }
  block.d = float_to_fp16(weighted::positive_search(16, 15, scales, sums, scale_codes));
  block.dmin = float_to_fp16(weighted::positive_search(16, 15, mins, sums, min_codes));
  const float dm = fp16_to_float(block.d);
  const float mm = fp16_to_float(block.dmin);
  for (int j = 0; j < 16; ++j) block.scales[j] = static_cast<uint8_t>(scale_codes[j] | (min_codes[j] << 4));
  for (int j = 0; j < 16; ++j) {
    const float d = dm * static_cast<float>(block.scales[j] & 0xf);
    if (d == 0.0f) continue;  // keep the search's levels
    const float m = mm * static_cast<float>(block.scales[j] >> 4);
    for (int i = 0; i < 16; ++i) {
      levels[16 * j + i] = static_cast<uint8_t>(clamp_level(nearest_int((x[16 * j + i] + m) / d), 0, 3));
    }
  }
  pack_two_bit_planes(levels, block.qs);
}

void q3_k_block(const float* x, const float* importance, BlockQ3_K& block) {
  int8_t levels[kSuperBlock];
  float scales[16], sums[16], weights[16];
  int8_t codes[16];
  const float sigma2 = mean_square(x, 2.0f);
  for (int j = 0; j < 16; ++j) {
    sums[j] = element_weights(16, x + 16 * j, importance + 16 * j, sigma2, weights);
    scales[j] = weighted::symmetric_search(16, 4, x + 16 * j, weights, levels + 16 * j);
  }
  std::memset(block.scales, 0, sizeof(block.scales));
  const float d_block = weighted::symmetric_search(16, 32, scales, sums, codes);
  // Sixteen 6-bit codes: low nibbles in bytes 0-7 (codes 8-15 in the high nibbles), the top two
  // bits of code j at bit 2 * (j / 4) of byte 8 + j % 4.
  for (int j = 0; j < 16; ++j) {
    int l = codes[j];
    if (j < 8) {
      block.scales[j] = static_cast<uint8_t>(l & 0xf);
    } else {
      block.scales[j - 8] = static_cast<uint8_t>(block.scales[j - 8] | ((l & 0xf) << 4));
    }
    l >>= 4;
    block.scales[j % 4 + 8] = static_cast<uint8_t>(block.scales[j % 4 + 8] | (l << (2 * (j / 4))));
  }
  block.d = float_to_fp16(d_block);
  for (int j = 0; j < 16; ++j) {
    const int low = j < 8 ? (block.scales[j] & 0xf) : (block.scales[j - 8] >> 4);
    const int code = (low | (((block.scales[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32;
    const float d = fp16_to_float(block.d) * static_cast<float>(code);
    if (d == 0.0f) continue;
    for (int i = 0; i < 16; ++i) {
      levels[16 * j + i] = static_cast<int8_t>(clamp_level(nearest_int(x[16 * j + i] / d), -4, 3) + 4);
    }
  }
  std::memset(block.hmask, 0, sizeof(block.hmask));
  uint8_t low_bits[kSuperBlock];
  // The high bit of element e goes to bit e / 32 of hmask[e % 32].
  for (int e = 0; e < kSuperBlock; ++e) {
    int l = levels[e];
    if (l > 3) {
      block.hmask[e % 32] = static_cast<uint8_t>(block.hmask[e % 32] | (1 << (e / 32)));
      l -= 4;
    }
    low_bits[e] = static_cast<uint8_t>(l);
  }
  pack_two_bit_planes(low_bits, block.qs);
}

// Q4_K and Q5_K: eight 32-element affine sub-blocks with 6-bit (scale, offset) codes.
struct AffineHeader {
  uint16_t* d;
  uint16_t* dmin;
  uint8_t* scales;  // 12 bytes
};

void quantize_affine(const float* x, const float* importance, int nmax, bool cap_codes, AffineHeader header,
                     uint8_t* levels) {
  uint8_t scratch[32];
  float scales[8], mins[8], sums[8], weights[32];
  uint8_t scale_codes[8], min_codes[8];
  const float sigma2 = mean_square(x, 2.0f);
  for (int j = 0; j < 8; ++j) {
    sums[j] = element_weights(32, x + 32 * j, importance + 32 * j, sigma2, weights);
    scales[j] = weighted::affine_search(32, nmax, x + 32 * j, weights, levels + 32 * j, &mins[j], scratch);
  }
  const float d_block = weighted::positive_search(8, 63, scales, sums, scale_codes);
  const float m_block = weighted::positive_search(8, 63, mins, sums, min_codes);
  uint8_t* sc = header.scales;
  for (int j = 0; j < 8; ++j) {
    uint8_t ls = scale_codes[j];
    uint8_t lm = min_codes[j];
    if (cap_codes) {
      ls = ls < 63 ? ls : 63;
      lm = lm < 63 ? lm : 63;
    }
    if (j < 4) {
      sc[j] = ls;
      sc[j + 4] = lm;
    } else {
      sc[j + 4] = static_cast<uint8_t>((ls & 0xf) | ((lm & 0xf) << 4));
      sc[j - 4] = static_cast<uint8_t>(sc[j - 4] | ((ls >> 4) << 6));
      sc[j] = static_cast<uint8_t>(sc[j] | ((lm >> 4) << 6));
    }
  }
  *header.d = float_to_fp16(d_block);
  *header.dmin = float_to_fp16(m_block);
  for (int j = 0; j < 8; ++j) {
    uint8_t scale_code = 0, min_code = 0;
    if (j < 4) {
      scale_code = sc[j] & 63;
      min_code = sc[j + 4] & 63;
    } else {
      scale_code = static_cast<uint8_t>((sc[j + 4] & 0xf) | ((sc[j - 4] >> 6) << 4));
      min_code = static_cast<uint8_t>((sc[j + 4] >> 4) | ((sc[j] >> 6) << 4));
    }
    const float d = fp16_to_float(*header.d) * static_cast<float>(scale_code);
    if (d == 0.0f) continue;
    const float dm = fp16_to_float(*header.dmin) * static_cast<float>(min_code);
    for (int i = 0; i < 32; ++i) {
      levels[32 * j + i] = static_cast<uint8_t>(clamp_level(nearest_int((x[32 * j + i] + dm) / d), 0, nmax));
    }
  }
}

void q4_k_block(const float* x, const float* importance, BlockQ4_K& block) {
  uint8_t levels[kSuperBlock];
  quantize_affine(x, importance, 15, false, {&block.d, &block.dmin, block.scales}, levels);
  for (int j = 0; j < kSuperBlock; j += 64) {
    for (int l = 0; l < 32; ++l) {
      block.qs[j / 2 + l] = static_cast<uint8_t>(levels[j + l] | (levels[j + l + 32] << 4));
    }
  }
}

void q5_k_block(const float* x, const float* importance, BlockQ5_K& block) {
  uint8_t levels[kSuperBlock];
  quantize_affine(x, importance, 31, true, {&block.d, &block.dmin, block.scales}, levels);
  std::memset(block.qh, 0, sizeof(block.qh));
  // Low nibbles as Q4_K; bit 4 of element e is bit e / 32 of qh[e % 32].
  for (int j = 0; j < kSuperBlock; j += 64) {
    for (int l = 0; l < 32; ++l) {
      int l1 = levels[j + l];
      int l2 = levels[j + l + 32];
      if (l1 > 15) {
        l1 -= 16;
        block.qh[l] = static_cast<uint8_t>(block.qh[l] | (1 << (j / 32)));
      }
      if (l2 > 15) {
        l2 -= 16;
        block.qh[l] = static_cast<uint8_t>(block.qh[l] | (2 << (j / 32)));
      }
      block.qs[j / 2 + l] = static_cast<uint8_t>(l1 | (l2 << 4));
    }
  }
}

void q6_k_block(const float* x, const float* importance, BlockQ6_K& block) {
  int8_t levels[kSuperBlock];
  float scales[16];
  float max_scale = 0.0f;
  float max_abs_scale = 0.0f;
  for (int j = 0; j < 16; ++j) {
    scales[j] = weighted::symmetric_search(16, 32, x + 16 * j, importance + 16 * j, levels + 16 * j);
    const float abs_scale = std::fabs(scales[j]);
    if (abs_scale > max_abs_scale) {
      max_abs_scale = abs_scale;
      max_scale = scales[j];
    }
  }
  if (max_abs_scale < ggml_search::kGroupMaxEps) {
    block = BlockQ6_K{};
    return;
  }
  const float iscale = -128.0f / max_scale;
  block.d = float_to_fp16(1.0f / iscale);
  for (int j = 0; j < 16; ++j) {
    const int code = nearest_int(iscale * scales[j]);
    block.scales[j] = static_cast<int8_t>(code < 127 ? code : 127);
  }
  for (int j = 0; j < 16; ++j) {
    const float d = fp16_to_float(block.d) * static_cast<float>(block.scales[j]);
    if (d == 0.0f) continue;
    for (int i = 0; i < 16; ++i) {
      levels[16 * j + i] = static_cast<int8_t>(clamp_level(nearest_int(x[16 * j + i] / d), -32, 31) + 32);
    }
  }
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

template <typename Block, void (*QuantizeBlock)(const float*, const float*, Block&)>
void quantize_row(const float* x, void* dst, int64_t n, const float* importance) {
  for (int64_t b = 0; b < n / kSuperBlock; ++b) {
    Block block{};
    QuantizeBlock(x + b * kSuperBlock, importance + b * kSuperBlock, block);
    store_block(dst, b, block);
  }
}

}  // namespace

void quantize_q2_k_weighted(const float* x, void* dst, int64_t n, const float* importance) {
  quantize_row<BlockQ2_K, q2_k_block>(x, dst, n, importance);
}
void quantize_q3_k_weighted(const float* x, void* dst, int64_t n, const float* importance) {
  quantize_row<BlockQ3_K, q3_k_block>(x, dst, n, importance);
}
void quantize_q4_k_weighted(const float* x, void* dst, int64_t n, const float* importance) {
  quantize_row<BlockQ4_K, q4_k_block>(x, dst, n, importance);
}
void quantize_q5_k_weighted(const float* x, void* dst, int64_t n, const float* importance) {
  quantize_row<BlockQ5_K, q5_k_block>(x, dst, n, importance);
}
void quantize_q6_k_weighted(const float* x, void* dst, int64_t n, const float* importance) {
  quantize_row<BlockQ6_K, q6_k_block>(x, dst, n, importance);
}

}  // namespace lumen::tensor::kernels
