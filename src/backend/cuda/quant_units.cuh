#pragma once
// Dequantization of the block formats the CUDA backend supports (Q4_0, Q4_1, Q8_0, Q4_K,
// Q6_K), 32 values at a time: a "unit" is one legacy block or one 32-value part of a K-quant
// super-block. The arithmetic is the reference dequantizers' (src/tensor/quant_*.cc, built
// without FMA contraction), so results are bit-exact with tensor::dequantize_row.
//
// Block layouts (src/tensor/block_formats.h):
//   Q4_0  18 bytes: f16 d, 16 bytes of nibbles; x = d * (q - 8)
//   Q4_1  20 bytes: f16 d, f16 m, 16 bytes of nibbles; x = d * q + m
//   Q8_0  34 bytes: f16 d, 32 int8; x = d * q
//   Q4_K 144 bytes: f16 d, f16 dmin, 12 bytes of 6-bit (scale, min) pairs, 128 bytes of nibbles
//   Q6_K 210 bytes: 128 bytes low nibbles, 64 bytes 2-bit tops, 16 int8 scales, f16 d
// Legacy element j < 16 is the low nibble of qs[j], element j + 16 its high nibble.
#include <cstdint>

#include "backend/cuda/device_math.cuh"

namespace lumen::backend::cuda {

inline constexpr int kQ4_0Bytes = 18;
inline constexpr int kQ4_1Bytes = 20;
inline constexpr int kQ8_0Bytes = 34;
inline constexpr int kQ4_KBytes = 144;
inline constexpr int kQ6_KBytes = 210;

// Q4_K / Q5_K: the 6-bit scale and min of 32-value sub-block j (0..7).
__device__ __forceinline__ void q4k_scale_min(const uint8_t* packed, int j, int& scale, int& min) {
  if (j < 4) {
    scale = packed[j] & 63;
    min = packed[j + 4] & 63;
  } else {
    scale = (packed[j + 4] & 15) | ((packed[j - 4] >> 6) << 4);
    min = (packed[j + 4] >> 4) | ((packed[j] >> 6) << 4);
  }
}

// Q6_K unit j (elements 32j .. 32j + 31) of a super-block: the unsigned 6-bit code of element
// l (0..31); the value is d * scale[(32j + l) / 16] * (code - 32).
// Element e = 128 * half + 32 * quarter + l takes its low nibble from ql[64 * half + l] (quarters
// 0, 2) or ql[64 * half + 32 + l] (quarters 1, 3), low for quarters 0 and 1, high for 2 and 3,
// and its top two bits from bits 2 * quarter of qh[32 * half + l].
__device__ __forceinline__ int q6k_code(const uint8_t* block, int j, int l) {
  const int half = j / 4, quarter = j % 4;
  const uint8_t low = block[64 * half + ((quarter & 1) ? 32 : 0) + l];
  const uint8_t high = block[128 + 32 * half + l];
  const int nibble = (quarter >= 2 ? (low >> 4) : low) & 15;
  return nibble | (((high >> (2 * quarter)) & 3) << 4);
}

// Element c of a row of a float type F (F32, F16 or BF16, as tensor::DType values), widened.
template <int F>
__device__ __forceinline__ float float_element(const uint8_t* row, int64_t c) {
  if constexpr (F == 0) {  // F32
    return reinterpret_cast<const float*>(row)[c];
  } else if constexpr (F == 1) {  // F16
    return half_bits_to_float(reinterpret_cast<const uint16_t*>(row)[c]);
  } else {  // BF16
    return bf16_bits_to_float(reinterpret_cast<const uint16_t*>(row)[c]);
  }
}

// Writes the 32 values of unit `unit` of a row of type F (a tensor::DType value) to out.
template <int F>
__device__ __forceinline__ void dequantize_unit(const uint8_t* row, int64_t unit, float* out);

template <>
__device__ __forceinline__ void dequantize_unit<2>(const uint8_t* row, int64_t unit,
                                                   float* out) {  // Q4_0
  const uint8_t* b = row + unit * kQ4_0Bytes;
  const float d = half_bits_to_float(load_u16(b));
  for (int j = 0; j < 16; ++j) {
    const uint8_t q = b[2 + j];
    out[j] = __fmul_rn(static_cast<float>((q & 15) - 8), d);
    out[j + 16] = __fmul_rn(static_cast<float>((q >> 4) - 8), d);
  }
}

template <>
__device__ __forceinline__ void dequantize_unit<3>(const uint8_t* row, int64_t unit,
                                                   float* out) {  // Q4_1
  const uint8_t* b = row + unit * kQ4_1Bytes;
  const float d = half_bits_to_float(load_u16(b));
  const float m = half_bits_to_float(load_u16(b + 2));
  for (int j = 0; j < 16; ++j) {
    const uint8_t q = b[4 + j];
    out[j] = __fadd_rn(__fmul_rn(static_cast<float>(q & 15), d), m);
    out[j + 16] = __fadd_rn(__fmul_rn(static_cast<float>(q >> 4), d), m);
  }
}

template <>
__device__ __forceinline__ void dequantize_unit<8>(const uint8_t* row, int64_t unit,
                                                   float* out) {  // Q8_0
  const uint8_t* b = row + unit * kQ8_0Bytes;
  const float d = half_bits_to_float(load_u16(b));
  for (int j = 0; j < 32; ++j)
    out[j] = __fmul_rn(static_cast<float>(static_cast<int8_t>(b[2 + j])), d);
}

template <>
__device__ __forceinline__ void dequantize_unit<12>(const uint8_t* row, int64_t unit,
                                                    float* out) {  // Q4_K
  const uint8_t* b = row + (unit / 8) * kQ4_KBytes;
  const int j = static_cast<int>(unit % 8);
  const float d = half_bits_to_float(load_u16(b));
  const float dmin = half_bits_to_float(load_u16(b + 2));
  int scale = 0, min = 0;
  q4k_scale_min(b + 4, j, scale, min);
  const float step = __fmul_rn(d, static_cast<float>(scale));
  const float offset = __fmul_rn(dmin, static_cast<float>(min));
  const uint8_t* qs = b + 16 + 32 * (j / 2);  // sub-blocks 2g and 2g + 1 share 32 bytes
  for (int l = 0; l < 32; ++l) {
    const int q = (j & 1) ? (qs[l] >> 4) : (qs[l] & 15);
    out[l] = __fsub_rn(__fmul_rn(step, static_cast<float>(q)), offset);
  }
}

template <>
__device__ __forceinline__ void dequantize_unit<14>(const uint8_t* row, int64_t unit,
                                                    float* out) {  // Q6_K
  const uint8_t* b = row + (unit / 8) * kQ6_KBytes;
  const int j = static_cast<int>(unit % 8);
  const float d = half_bits_to_float(load_u16(b + 208));
  const auto* scales = reinterpret_cast<const int8_t*>(b + 192);
  for (int l = 0; l < 32; ++l) {
    const float step = __fmul_rn(d, static_cast<float>(scales[2 * j + l / 16]));
    out[l] = __fmul_rn(step, static_cast<float>(q6k_code(b, j, l) - 32));
  }
}

}  // namespace lumen::backend::cuda
