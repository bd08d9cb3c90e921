// IQ4_NL and IQ4_XS: 4-bit codes that index 16 fixed, non-uniform int8 levels (kIq4Levels).
// Dequantization is d * level (IQ4_NL) and (d * (ls - 32)) * level (IQ4_XS), the float
// operations ggml and gguf-py perform, so the values are theirs bit for bit.
//
// The quantizers are Lumen's own. For a group of 32 values x with weights w, a scale d and codes
// q give the error sum_j w_j (x_j - d L[q_j])^2. For fixed codes the best d is the weighted least
// squares one, d = sum w x L / sum w L^2, which leaves an error of sum w x^2 - (sum w x L)^2 /
// sum w L^2; so among candidate scales (the group's value of largest magnitude mapped onto -127,
// the level of largest magnitude, and onto the 12 level units on either side of it), the one
// whose nearest-level codes maximise (sum w x L)^2 / sum w L^2 wins, and its least-squares d is
// kept. IQ4_XS first finds each sub-block's scale that way,
// then quantizes those scales to 6 bits under one f16 d and picks the codes again under the
// scale actually stored.
//
// Weights: by default x^2 plus the group's mean square (large values matter more, small ones
// still count); an importance matrix multiplies them per column.
#include <cmath>
#include <cstdint>

#include "tensor/block_formats.h"
#include "tensor/fp16.h"
#include "tensor/quant_kernels.h"

namespace lumen::tensor::kernels {
namespace {

constexpr int kGroup = 32;
constexpr int kLevels = 16;
// Candidate inverse scales: the largest magnitude lands on level (-127 + k) for k in
// [-kSearch, kSearch], in steps of one level unit.
constexpr int kSearch = 12;

// The index of the level nearest to v (ties go to the lower level). Midpoints between levels are
// multiples of 1/2, so ceil(2 v) decides: v <= m = j / 2 exactly when ceil(2 v) <= j. One table
// lookup instead of a search (the quantizers try 25 scales for every group).
constexpr int kTableLow = 2 * -127, kTableHigh = 2 * 113;

struct NearestTable {
  uint8_t index[kTableHigh - kTableLow + 1];
  constexpr NearestTable() : index() {
    for (int k = kTableLow; k <= kTableHigh; ++k) {
      int q = 0;
      while (q + 1 < kLevels && k > kIq4Levels[q] + kIq4Levels[q + 1]) ++q;  // 2 v above 2 m
      index[k - kTableLow] = static_cast<uint8_t>(q);
    }
  }
};
constexpr NearestTable kNearest;

int nearest_level(float v) {
  if (!(v > static_cast<float>(kIq4Levels[0]))) return 0;  // also NaN
  if (v >= static_cast<float>(kIq4Levels[kLevels - 1])) return kLevels - 1;
  return kNearest.index[static_cast<int>(std::ceil(2.0f * v)) - kTableLow];
}

void group_weights(const float* x, const float* importance, float* w) {
  double sum_sq = 0.0;
  for (int j = 0; j < kGroup; ++j) sum_sq += static_cast<double>(x[j]) * x[j];
  const auto mean_sq = static_cast<float>(sum_sq / kGroup);
  for (int j = 0; j < kGroup; ++j) {
    w[j] = (mean_sq + x[j] * x[j]) * (importance != nullptr ? importance[j] : 1.0f);
  }
}

// Codes of x under the inverse scale `inverse`, with the least-squares d for them and how much
// of the weighted energy they explain ((sum w x L)^2 / sum w L^2; larger is better).
struct Fit {
  float d = 0.0f;
  double explained = -1.0;
};

Fit fit_codes(const float* x, const float* w, float inverse, uint8_t* codes) {
  double sxl = 0.0, sll = 0.0;
  for (int j = 0; j < kGroup; ++j) {
    const int q = nearest_level(x[j] * inverse);
    codes[j] = static_cast<uint8_t>(q);
    const double level = kIq4Levels[q];
    sxl += static_cast<double>(w[j]) * x[j] * level;
    sll += static_cast<double>(w[j]) * level * level;
  }
  Fit fit;
  if (sll > 0.0) {
    fit.d = static_cast<float>(sxl / sll);
    fit.explained = sxl * sxl / sll;
  }
  return fit;
}

// The best scale of a group (0 for a group of zeros or non-finite values).
float best_scale(const float* x, const float* w) {
  float max = 0.0f, amax = 0.0f;
  for (int j = 0; j < kGroup; ++j) {
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  if (!(amax > 0.0f) || !std::isfinite(amax)) return 0.0f;
  uint8_t codes[kGroup];
  Fit best;
  for (int k = -kSearch; k <= kSearch; ++k) {
    const float inverse = static_cast<float>(kIq4Levels[0] + k) / max;
    const Fit fit = fit_codes(x, w, inverse, codes);
    if (fit.explained > best.explained) best = fit;
  }
  return best.d;
}

// Codes for x under the scale d that will be stored (0 codes the level nearest zero).
void codes_for(const float* x, float d, uint8_t* codes) {
  const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
  for (int j = 0; j < kGroup; ++j) codes[j] = static_cast<uint8_t>(nearest_level(x[j] * inverse));
}

void pack_codes(const uint8_t* codes, uint8_t* qs) {
  for (int j = 0; j < kGroup / 2; ++j) qs[j] = static_cast<uint8_t>(codes[j] | codes[j + kGroup / 2] << 4);
}

float level_at(const uint8_t* qs, int j) {
  const int q = j < kGroup / 2 ? (qs[j] & 0x0f) : (qs[j - kGroup / 2] >> 4);
  return static_cast<float>(kIq4Levels[q]);
}

void quantize_iq4_nl_block(const float* x, const float* importance, BlockIQ4_NL& block) {
  float w[kGroup];
  group_weights(x, importance, w);
  block.d = float_to_fp16(best_scale(x, w));
  uint8_t codes[kGroup];
  codes_for(x, fp16_to_float(block.d), codes);
  pack_codes(codes, block.qs);
}

constexpr int kSubBlocks = kSuperBlock / kGroup;

void quantize_iq4_xs_block(const float* x, const float* importance, BlockIQ4_XS& block) {
  float scales[kSubBlocks];
  float max = 0.0f, amax = 0.0f;
  for (int s = 0; s < kSubBlocks; ++s) {
    float w[kGroup];
    group_weights(x + kGroup * s, importance != nullptr ? importance + kGroup * s : nullptr, w);
    scales[s] = best_scale(x + kGroup * s, w);
    if (std::fabs(scales[s]) > amax) {
      amax = std::fabs(scales[s]);
      max = scales[s];
    }
  }
  // The largest scale maps onto ls - 32 = -32, the one 6-bit value without a positive twin.
  const float d = max / -32.0f;
  block.d = float_to_fp16(d);
  const float stored = fp16_to_float(block.d);
  const float inverse = stored != 0.0f ? 1.0f / stored : 0.0f;
  block.scales_h = 0;
  for (int s = 0; s < kSubBlocks / 2; ++s) block.scales_l[s] = 0;
  for (int s = 0; s < kSubBlocks; ++s) {
    const int ls = clamp_round(scales[s] * inverse, -32, 31) + 32;
    block.scales_l[s / 2] = static_cast<uint8_t>(block.scales_l[s / 2] | (ls & 0x0f) << (4 * (s % 2)));
    block.scales_h = static_cast<uint16_t>(block.scales_h | (ls >> 4) << (2 * s));
    uint8_t codes[kGroup];
    codes_for(x + kGroup * s, stored * static_cast<float>(ls - 32), codes);
    pack_codes(codes, block.qs + kGroup / 2 * s);
  }
}

int iq4_xs_scale(const BlockIQ4_XS& block, int s) {
  const int low = (block.scales_l[s / 2] >> (4 * (s % 2))) & 0x0f;
  const int high = (block.scales_h >> (2 * s)) & 3;
  return low | high << 4;
}

}  // namespace

void dequantize_iq4_nl(const void* src, float* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b, dst += kGroup) {
    const auto block = load_block<BlockIQ4_NL>(src, b);
    const float d = fp16_to_float(block.d);
    for (int j = 0; j < kGroup; ++j) dst[j] = d * level_at(block.qs, j);
  }
}

void quantize_iq4_nl(const float* src, void* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b, src += kGroup) {
    BlockIQ4_NL block{};
    quantize_iq4_nl_block(src, nullptr, block);
    store_block(dst, b, block);
  }
}

void quantize_iq4_nl_weighted(const float* x, void* dst, int64_t n, const float* importance) {
  for (int64_t b = 0; b < n / kGroup; ++b) {
    BlockIQ4_NL block{};
    quantize_iq4_nl_block(x + kGroup * b, importance + kGroup * b, block);
    store_block(dst, b, block);
  }
}

void dequantize_iq4_xs(const void* src, float* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b) {
    const auto block = load_block<BlockIQ4_XS>(src, b);
    const float d = fp16_to_float(block.d);
    for (int s = 0; s < kSubBlocks; ++s, dst += kGroup) {
      const float dl = d * static_cast<float>(iq4_xs_scale(block, s) - 32);
      for (int j = 0; j < kGroup; ++j) dst[j] = dl * level_at(block.qs + kGroup / 2 * s, j);
    }
  }
}

void quantize_iq4_xs(const float* src, void* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b, src += kSuperBlock) {
    BlockIQ4_XS block{};
    quantize_iq4_xs_block(src, nullptr, block);
    store_block(dst, b, block);
  }
}

void quantize_iq4_xs_weighted(const float* x, void* dst, int64_t n, const float* importance) {
  for (int64_t b = 0; b < n / kSuperBlock; ++b) {
    BlockIQ4_XS block{};
    quantize_iq4_xs_block(x + kSuperBlock * b, importance + kSuperBlock * b, block);
    store_block(dst, b, block);
  }
}

}  // namespace lumen::tensor::kernels
