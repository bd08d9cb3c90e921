#pragma once
// The block formats' arithmetic for the CUDA kernels, written once for the device and the host
// (hd_math.h) so tests/unit/cuda_host checks it on a CPU against the CPU backend: every weight
// type the CPU backend reads (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1, Q2_K .. Q6_K, Q8_K, IQ4_NL, IQ4_XS,
// MXFP4). MXFP4 meets Q8_0 activations, as on the CPU; its 17-byte blocks have no alignment at
// all, so its words are read byte by byte (load_word), and the kernels that stage 16-byte vectors
// take only rows that are whole vectors (a multiple of 512 values).
//
// A "unit" is 32 consecutive values: one legacy block, or one of the 8 parts of a 256-value
// K-quant super-block. Kernels see a unit in two forms:
//  - decoded for dot products: 8 words of 4 int8 codes in element order (word k = elements
//    4k .. 4k + 3), the unit's scales, and what the dot product needs to undo offsets, so a
//    unit's dot with 32 int8 activations is __dp4a over 8 word pairs;
//  - dequantized: 32 floats, bit-exact with tensor::dequantize_row (each value is formed with
//    the reference dequantizer's operations in its order, one rounding each).
// The dot products form each block's float value as backend/cpu/matmul_scalar.cc does, so a
// block's contribution is bit-exact with the CPU's; only the order of adding blocks differs.
//
// Layouts are tensor/block_formats.h's. Alignment within a row: blocks of 20, 24, 36, 84, 144,
// 176 and 292 bytes keep 4-byte alignment, the others (18, 22, 34, 110, 210) only 2-byte.
#include <cstdint>

#include "backend/cuda/hd_math.h"
#include "tensor/block_formats.h"
#include "tensor/dtype.h"

namespace lumen::backend::cuda::hd {

using tensor::DType;

template <DType F>
inline constexpr int kBlockBytes = F == DType::Q4_0     ? 18
                                   : F == DType::Q4_1   ? 20
                                   : F == DType::Q5_0   ? 22
                                   : F == DType::Q5_1   ? 24
                                   : F == DType::Q8_0   ? 34
                                   : F == DType::Q8_1   ? 36
                                   : F == DType::Q2_K   ? 84
                                   : F == DType::Q3_K   ? 110
                                   : F == DType::Q4_K   ? 144
                                   : F == DType::Q5_K   ? 176
                                   : F == DType::Q6_K   ? 210
                                   : F == DType::Q8_K   ? 292
                                   : F == DType::IQ4_NL ? 18
                                   : F == DType::IQ4_XS ? 136
                                   : F == DType::MXFP4  ? 17
                                                        : 0;

// The 256-value super-block types, read against Q8_K activations: the K-quants and IQ4_XS.
template <DType F>
inline constexpr bool kIsKQuant = F == DType::Q2_K || F == DType::Q3_K || F == DType::Q4_K || F == DType::Q5_K ||
                                  F == DType::Q6_K || F == DType::Q8_K || F == DType::IQ4_XS;

// IQ4_NL / IQ4_XS: tensor::kIq4Levels as the bytes of two words (levels 0..7, then 8..15), so
// that host and device look a level up by shifting, with no table in memory.
inline constexpr uint64_t kIq4LevelsLow = 0xF6EADDCFBFAD9881ull;
inline constexpr uint64_t kIq4LevelsHigh = 0x7159453526190D01ull;
// Whether two words hold a 16-level table's bytes (levels 0..7, then 8..15).
constexpr bool words_match_levels(uint64_t low, uint64_t high, const int8_t (&levels)[16]) {
  for (int q = 0; q < 16; ++q) {
    const uint64_t word = q < 8 ? low : high;
    if (static_cast<int8_t>(static_cast<uint8_t>(word >> (8 * (q % 8)))) != levels[q]) return false;
  }
  return true;
}
static_assert(words_match_levels(kIq4LevelsLow, kIq4LevelsHigh, tensor::kIq4Levels));

// MXFP4: tensor::kMxfp4Levels (the doubled E2M1 values) the same way.
inline constexpr uint64_t kMxfp4LevelsLow = 0x0C08060403020100ull;
inline constexpr uint64_t kMxfp4LevelsHigh = 0xF4F8FAFCFDFEFF00ull;
static_assert(words_match_levels(kMxfp4LevelsLow, kMxfp4LevelsHigh, tensor::kMxfp4Levels));

// Four codes (one per byte, 0..15) to their four int8 levels, byte for byte, from a table's two
// words (levels 0..7, then 8..15).
LUMEN_HD uint32_t table_levels(uint32_t codes, uint64_t low_word, uint64_t high_word) {
  uint32_t out = 0;
  LUMEN_UNROLL
  for (int i = 0; i < 4; ++i) {
    const uint32_t q = (codes >> (8 * i)) & 15u;
    const uint64_t word = q < 8 ? low_word : high_word;
    out |= static_cast<uint32_t>((word >> (8 * (q & 7u))) & 0xFFu) << (8 * i);
  }
  return out;
}

LUMEN_HD uint32_t iq4_levels(uint32_t codes) { return table_levels(codes, kIq4LevelsLow, kIq4LevelsHigh); }
LUMEN_HD uint32_t mxfp4_levels(uint32_t codes) { return table_levels(codes, kMxfp4LevelsLow, kMxfp4LevelsHigh); }

// Legacy types whose value is d * q + m (the others: d * q).
template <DType F>
inline constexpr bool kHasMin = F == DType::Q4_1 || F == DType::Q5_1;

// Four bytes at offset `at` of a block of F: 4-byte loads where the block size keeps them
// aligned, two 2-byte loads where it keeps 2-byte alignment, byte loads otherwise (MXFP4).
template <DType F>
LUMEN_HD uint32_t load_word(const uint8_t* block, int at) {
  if constexpr (kBlockBytes<F> % 4 == 0) {
    return (at % 4 == 0) ? load_u32(block + at) : load_u32_align2(block + at);
  } else if constexpr (kBlockBytes<F> % 2 != 0) {
    return load_u32_align1(block + at);
  } else {
    return load_u32_align2(block + at);
  }
}

// ---- legacy blocks ----

struct LegacyBlock {
  int w[8];  // signed codes q (the value is d * q, or d * q + m)
  float d;
  float m;  // 0 without a min
};

// Nibble words k and 4 + k of a 4-bit block: elements 4k .. 4k + 3 are the low nibbles of
// qs bytes 4k .. 4k + 3, elements 16 + 4k .. their high nibbles.
LUMEN_HD void split_nibbles(uint32_t qs, uint32_t& low, uint32_t& high) {
  low = qs & 0x0F0F0F0Fu;
  high = (qs >> 4) & 0x0F0F0F0Fu;
}

// The blocks whose scale d is their first two bytes, an f16.
template <DType F>
LUMEN_HD void decode_f16_scaled_legacy(const uint8_t* b, LegacyBlock& out) {
  out.d = half_to_float(load_u16(b));
  if constexpr (F == DType::IQ4_NL) {  // Q4_0's nibbles, each indexing a level
    LUMEN_UNROLL
    for (int k = 0; k < 4; ++k) {
      uint32_t low, high;
      split_nibbles(load_word<F>(b, 2 + 4 * k), low, high);
      out.w[k] = static_cast<int>(iq4_levels(low));
      out.w[4 + k] = static_cast<int>(iq4_levels(high));
    }
  } else if constexpr (F == DType::Q8_0 || F == DType::Q8_1) {
    const int qs = F == DType::Q8_0 ? 2 : 4;  // Q8_1's s is for activations, not values
    LUMEN_UNROLL
    for (int k = 0; k < 8; ++k) out.w[k] = static_cast<int>(load_word<F>(b, qs + 4 * k));
  } else {
    if constexpr (kHasMin<F>) out.m = half_to_float(load_u16(b + 2));
    // Byte offsets of qh (5-bit kinds: bit 4 of element j is bit j of qh) and of the nibbles.
    constexpr int qh = F == DType::Q5_0 ? 2 : 4;
    constexpr int qs = F == DType::Q4_0 ? 2 : F == DType::Q4_1 ? 4 : F == DType::Q5_0 ? 6 : 8;
    constexpr bool five_bit = F == DType::Q5_0 || F == DType::Q5_1;
    uint32_t high_bits = 0;
    if constexpr (five_bit) high_bits = load_word<F>(b, qh);
    LUMEN_UNROLL
    for (int k = 0; k < 4; ++k) {
      uint32_t low, high;
      split_nibbles(load_word<F>(b, qs + 4 * k), low, high);
      if constexpr (five_bit) {
        low |= spread_bits_to_bit4((high_bits >> (4 * k)) & 15u);
        high |= spread_bits_to_bit4((high_bits >> (16 + 4 * k)) & 15u);
      }
      if constexpr (F == DType::Q4_0) {  // q - 8: -8 .. 7
        low = sub_bytes(low, 8);
        high = sub_bytes(high, 8);
      } else if constexpr (F == DType::Q5_0) {  // q - 16: -16 .. 15
        low = sub_bytes(low, 16);
        high = sub_bytes(high, 16);
      }
      out.w[k] = static_cast<int>(low);
      out.w[4 + k] = static_cast<int>(high);
    }
  }
}

template <DType F>
LUMEN_HD void decode_legacy(const uint8_t* b, LegacyBlock& out) {
  out.m = 0.0f;
  if constexpr (F == DType::MXFP4) {  // an E8M0 byte, then Q4_0's nibbles, each indexing a level
    out.d = e8m0_half_scale(b[0]);
    LUMEN_UNROLL
    for (int k = 0; k < 4; ++k) {
      uint32_t low, high;
      split_nibbles(load_word<F>(b, 1 + 4 * k), low, high);
      out.w[k] = static_cast<int>(mxfp4_levels(low));
      out.w[4 + k] = static_cast<int>(mxfp4_levels(high));
    }
  } else {
    decode_f16_scaled_legacy<F>(b, out);
  }
}

LUMEN_HD int code_at(const int* words, int l) {
  return static_cast<int8_t>(static_cast<uint32_t>(words[l / 4]) >> (8 * (l % 4)));
}

template <DType F>
LUMEN_HD void dequantize_legacy(const LegacyBlock& b, float* out) {
  LUMEN_UNROLL
  for (int l = 0; l < 32; ++l) {
    const float v = mul_rn(static_cast<float>(code_at(b.w, l)), b.d);
    out[l] = kHasMin<F> ? add_rn(v, b.m) : v;
  }
}

// The block's term of a dot product with a Q8_0 (or, for Q4_1 / Q5_1, Q8_1) activation block:
// codes x, scale xd and xs = xd * sum(x) (both rounded through f16, as ggml's blocks store them).
template <DType F>
LUMEN_HD float legacy_dot(const LegacyBlock& w, const int* x, float xd, float xs) {
  int sumi = 0;
  LUMEN_UNROLL
  for (int k = 0; k < 8; ++k) sumi = dp4a(w.w[k], x[k], sumi);
  const float v = mul_rn(static_cast<float>(sumi), mul_rn(w.d, xd));
  if constexpr (kHasMin<F>) return add_rn(v, mul_rn(w.m, xs));
  return v;
}

// ---- K-quant units: backend/cpu/kquant_decode.h's uniform form, 32 values at a time ----
//
//   value(l) = d * scale[l / 16] * code(l) - dmin * min[l / 16]
//
// with unsigned codes. Formats with a signed grid (Q3_K: q - 4, Q6_K: q - 32) have min =
// bias * scale and dmin = d, which a dot product needs; dequantization instead forms the
// reference's d * scale * (code - bias).
struct KUnit {
  int codes[8];
  int scale[2];  // of the unit's two 16-value halves
  int min[2];
  float d;
  float dmin;
};

template <DType F>
inline constexpr int kKQuantBias = F == DType::Q3_K   ? 4
                                   : F == DType::Q6_K ? 32
                                                      : 0;

// Q4_K / Q5_K: the 6-bit scale and min of 32-value sub-block j (0..7).
LUMEN_HD void q4k_scale_min(const uint8_t* packed, int j, int& scale, int& min) {
  if (j < 4) {
    scale = packed[j] & 63;
    min = packed[j + 4] & 63;
  } else {
    scale = (packed[j + 4] & 15) | ((packed[j - 4] >> 6) << 4);
    min = (packed[j + 4] >> 4) | ((packed[j] >> 6) << 4);
  }
}

// Q3_K's 6-bit scale code i (0..15), biased by 32: low 4 bits from a nibble of byte i % 8, high
// 2 bits from byte 8 + i % 4 at bit 2 * (i / 4).
LUMEN_HD int q3k_scale(const uint8_t* scales, int i) {
  const int low = (scales[i % 8] >> (4 * (i / 8))) & 15;
  const int high = (scales[8 + i % 4] >> (2 * (i / 4))) & 3;
  return (low | (high << 4)) - 32;
}

// Unit j (0..7) of super-block sb.
template <DType F>
LUMEN_HD void decode_kunit(const uint8_t* sb, int j, KUnit& u) {
  if constexpr (F == DType::Q2_K || F == DType::Q3_K) {
    // 2-bit codes: unit j = 4 * half + plane takes bits 2 * plane of qs[32 * half + l].
    const int half = j / 4, plane = j % 4;
    const uint8_t* qs = sb + (F == DType::Q2_K ? 16 : 32) + 32 * half;
    LUMEN_UNROLL
    for (int k = 0; k < 8; ++k) {
      uint32_t codes = (load_word<F>(qs, 4 * k) >> (2 * plane)) & 0x03030303u;
      // Q3_K: a set hmask bit j of byte l adds 4 (the stored q is code - 4).
      if constexpr (F == DType::Q3_K) codes |= ((load_word<F>(sb, 4 * k) >> j) & 0x01010101u) << 2;
      u.codes[k] = static_cast<int>(codes);
    }
    if constexpr (F == DType::Q2_K) {
      u.d = half_to_float(load_u16(sb + 80));
      u.dmin = half_to_float(load_u16(sb + 82));
      LUMEN_UNROLL
      for (int i = 0; i < 2; ++i) {
        u.scale[i] = sb[2 * j + i] & 15;
        u.min[i] = sb[2 * j + i] >> 4;
      }
    } else {
      u.d = u.dmin = half_to_float(load_u16(sb + 108));
      LUMEN_UNROLL
      for (int i = 0; i < 2; ++i) {
        u.scale[i] = q3k_scale(sb + 96, 2 * j + i);
        u.min[i] = 4 * u.scale[i];
      }
    }
  } else if constexpr (F == DType::Q4_K || F == DType::Q5_K) {
    u.d = half_to_float(load_u16(sb));
    u.dmin = half_to_float(load_u16(sb + 2));
    int scale = 0, min = 0;
    q4k_scale_min(sb + 4, j, scale, min);
    u.scale[0] = u.scale[1] = scale;
    u.min[0] = u.min[1] = min;
    // Sub-blocks 2g and 2g + 1 share 32 bytes of nibbles (low, high); Q5_K's bit 4 of element
    // 32j + l is bit j of qh[l].
    const uint8_t* qs = sb + (F == DType::Q4_K ? 16 : 48) + 32 * (j / 2);
    LUMEN_UNROLL
    for (int k = 0; k < 8; ++k) {
      const uint32_t word = load_u32(qs + 4 * k);
      uint32_t codes = (j & 1) ? (word >> 4) & 0x0F0F0F0Fu : word & 0x0F0F0F0Fu;
      if constexpr (F == DType::Q5_K) codes |= ((load_u32(sb + 16 + 4 * k) >> j) & 0x01010101u) << 4;
      u.codes[k] = static_cast<int>(codes);
    }
  } else if constexpr (F == DType::Q6_K) {
    // Element 128 * half + 32 * quarter + l: low nibble from ql[64 * half + l] (quarters 0, 2)
    // or ql[64 * half + 32 + l] (1, 3), low for quarters 0 and 1 and high for 2 and 3; top two
    // bits from bits 2 * quarter of qh[32 * half + l].
    const int half = j / 4, quarter = j % 4;
    const uint8_t* ql = sb + 64 * half + ((quarter & 1) ? 32 : 0);
    const uint8_t* qh = sb + 128 + 32 * half;
    const int low_shift = quarter >= 2 ? 4 : 0;
    LUMEN_UNROLL
    for (int k = 0; k < 8; ++k) {
      const uint32_t low = (load_u32_align2(ql + 4 * k) >> low_shift) & 0x0F0F0F0Fu;
      const uint32_t high = (load_u32_align2(qh + 4 * k) >> (2 * quarter)) & 0x03030303u;
      u.codes[k] = static_cast<int>(low | (high << 4));
    }
    u.d = u.dmin = half_to_float(load_u16(sb + 208));
    LUMEN_UNROLL
    for (int i = 0; i < 2; ++i) {
      u.scale[i] = static_cast<int8_t>(sb[192 + 2 * j + i]);
      u.min[i] = 32 * u.scale[i];
    }
  } else if constexpr (F == DType::IQ4_XS) {
    // Signed levels as codes, one scale ls - 32 for the unit's two halves, no min; the unit's
    // 16 bytes of nibbles hold elements l (low) and 16 + l (high).
    u.d = half_to_float(load_u16(sb));
    u.dmin = 0.0f;
    const int ls = (((sb[4 + j / 2] >> (4 * (j % 2))) & 15) | (((load_u16(sb + 2) >> (2 * j)) & 3) << 4)) - 32;
    u.scale[0] = u.scale[1] = ls;
    u.min[0] = u.min[1] = 0;
    const uint8_t* qs = sb + 8 + 16 * j;
    LUMEN_UNROLL
    for (int k = 0; k < 4; ++k) {
      uint32_t low, high;
      split_nibbles(load_u32(qs + 4 * k), low, high);
      u.codes[k] = static_cast<int>(iq4_levels(low));
      u.codes[4 + k] = static_cast<int>(iq4_levels(high));
    }
  }
}

template <DType F>
LUMEN_HD void dequantize_kunit(const KUnit& u, float* out) {
  LUMEN_UNROLL
  for (int l = 0; l < 32; ++l) {
    const int i = l / 16;
    const float step = mul_rn(u.d, static_cast<float>(u.scale[i]));
    const int code = code_at(u.codes, l);
    if constexpr (kKQuantBias<F> != 0) {
      out[l] = mul_rn(step, static_cast<float>(code - kKQuantBias<F>));
    } else {
      out[l] = sub_rn(mul_rn(step, static_cast<float>(code)), mul_rn(u.dmin, static_cast<float>(u.min[i])));
    }
  }
}

// The unit's integer sums against 32 Q8_K activation codes x and the sums of their two halves:
// scaled = sum_i scale[i] * (codes . x)[half i], mins = sum_i min[i] * bsums[i].
LUMEN_HD void kunit_dot(const KUnit& u, const int* x, const int* bsums, int& scaled, int& mins) {
  int dot0 = 0, dot1 = 0;
  LUMEN_UNROLL
  for (int k = 0; k < 4; ++k) {
    dot0 = dp4a(u.codes[k], x[k], dot0);
    dot1 = dp4a(u.codes[4 + k], x[4 + k], dot1);
  }
  scaled = u.scale[0] * dot0 + u.scale[1] * dot1;
  mins = u.min[0] * bsums[0] + u.min[1] * bsums[1];
}

// A super-block's term from the sums of its 8 units (integers: exact in any order) and the
// activation block's f32 scale xd.
LUMEN_HD float ksuper_value(float d, float dmin, float xd, int scaled, int mins) {
  return sub_rn(mul_rn(mul_rn(d, xd), static_cast<float>(scaled)), mul_rn(mul_rn(dmin, xd), static_cast<float>(mins)));
}

// ---- any type, 32 values at a time (get_rows and the f16 conversion for cuBLAS) ----

template <DType F>
LUMEN_HD void dequantize_unit(const uint8_t* row, int64_t unit, float* out) {
  if constexpr (F == DType::Q8_K) {  // f32 d, then 256 int8: x = d * q
    const uint8_t* b = row + (unit / 8) * kBlockBytes<F>;
    const float d = float_from_bits(load_u32(b));
    const auto* qs = reinterpret_cast<const int8_t*>(b + 4 + 32 * (unit % 8));
    LUMEN_UNROLL
    for (int l = 0; l < 32; ++l) out[l] = mul_rn(d, static_cast<float>(qs[l]));
  } else if constexpr (kIsKQuant<F>) {
    KUnit u;
    decode_kunit<F>(row + (unit / 8) * kBlockBytes<F>, static_cast<int>(unit % 8), u);
    dequantize_kunit<F>(u, out);
  } else {
    LegacyBlock b;
    decode_legacy<F>(row + unit * kBlockBytes<F>, b);
    dequantize_legacy<F>(b, out);
  }
}

// Element c of a row of a float type (F32, F16 or BF16), widened.
template <DType F>
LUMEN_HD float float_element(const uint8_t* row, int64_t c) {
  if constexpr (F == DType::F32) {
    return float_from_bits(load_u32(row + 4 * c));
  } else if constexpr (F == DType::F16) {
    return half_to_float(load_u16(row + 2 * c));
  } else {
    return bf16_to_float(load_u16(row + 2 * c));
  }
}

}  // namespace lumen::backend::cuda::hd
