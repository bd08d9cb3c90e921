#pragma once
// The KV cache's element types for the CUDA kernels, written once for the device and the host
// (hd_math.h) so tests/unit/cuda_host checks them on a CPU against what the CPU backend stores
// (backend/cpu/kv_store.cc) and reads: f32, f16, and the compressed types of --kv-cache-dtype:
//  - bf16, q8_0, q4_0 with ggml's reference rounding (tensor::quantize_row_ggml), bit for bit:
//    each step is the reference's float operation, spelled with the _rn helpers so nvcc does
//    not contract a multiply and an add into one FMA;
//  - FP8 E4M3 with Lumen's saturating conversion (tensor/fp8.h), integer operations both sides.
// A row holds whole 32-value blocks per head (kv_slice_bytes), so a quantized row is quantized
// block by block, each block on its own.
#include <cmath>
#include <cstdint>

#include "backend/cuda/hd_math.h"
#include "tensor/dtype.h"

namespace lumen::backend::cuda::hd {

inline constexpr int kKvBlock = 32;
inline constexpr int kQ8_0Bytes = 34;  // f16 scale, 32 int8 codes
inline constexpr int kQ4_0Bytes = 18;  // f16 scale, 16 bytes of nibbles

// Round to nearest even, overflow to infinity (tensor::float_to_fp16 for every finite value and
// infinity; NaN payloads may differ, and no NaN reaches a cache this is tested for).
LUMEN_HD uint16_t float_to_half(float x) {
#if defined(__CUDA_ARCH__)
  return __half_as_ushort(__float2half_rn(x));
#else
  return tensor::float_to_fp16(x);
#endif
}

// tensor::float_to_bf16: NaN kept quiet, everything else rounded to nearest even.
LUMEN_HD uint16_t float_to_bf16(float x) {
  const uint32_t bits = float_bits(x);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  const uint32_t kept_lsb = (bits >> 16) & 1u;
  return static_cast<uint16_t>((bits + 0x7fffu + kept_lsb) >> 16);
}

// tensor::float_to_fp8_e4m3, step for step.
LUMEN_HD uint8_t float_to_fp8(float x) {
  const uint32_t bits = float_bits(x);
  const auto sign = static_cast<uint8_t>((bits >> 24) & 0x80u);
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return static_cast<uint8_t>(sign | 0x7fu);
  constexpr uint8_t kMaxCode = 0x7e;
  if (magnitude >= 0x43e00000u) return static_cast<uint8_t>(sign | kMaxCode);
  if (magnitude >= 0x3c800000u) {
    const uint32_t kept_lsb = (magnitude >> 20) & 1u;
    const uint32_t rounded = magnitude + 0x7ffffu + kept_lsb;
    const uint32_t code = (rounded - ((127u - 7u) << 23)) >> 20;
    return static_cast<uint8_t>(sign | (code > kMaxCode ? kMaxCode : code));
  }
  const float units = mul_rn(float_from_bits(magnitude), 512.0f);
  auto whole = static_cast<uint32_t>(units);
  const float fraction = sub_rn(units, static_cast<float>(whole));
  if (fraction > 0.5f || (fraction == 0.5f && (whole & 1u) != 0)) ++whole;
  return static_cast<uint8_t>(sign | whole);
}

// tensor::fp8_e4m3_to_float.
LUMEN_HD float fp8_to_float(uint8_t code) {
  const uint32_t sign = static_cast<uint32_t>(code & 0x80u) << 24;
  const uint32_t exponent = (code >> 3) & 0xfu;
  const uint32_t mantissa = code & 0x7u;
  if (exponent == 0xf && mantissa == 0x7) return float_from_bits(sign | 0x7fc00000u);
  if (exponent == 0) {
    const float magnitude = mul_rn(static_cast<float>(mantissa), 1.0f / 512.0f);
    return float_from_bits(sign | float_bits(magnitude));
  }
  return float_from_bits(sign | ((exponent + (127 - 7)) << 23) | (mantissa << 20));
}

// A little-endian u16 at p. On the device, one 16-bit store where p is even (every block's scale:
// blocks of 34 and 18 bytes from an even row start): two byte stores of a freshly converted half
// wrote 0 for the low byte on an H200 (CUDA 13.0, the scale's high byte right), which
// CudaKvCodec.Q8_0AndQ4_0StoresWriteTheCpusBytes caught; the odd case widens first.
LUMEN_HD void store_u16(uint8_t* p, uint16_t v) {
#if defined(__CUDA_ARCH__)
  if ((reinterpret_cast<uintptr_t>(p) & 1u) == 0) {
    *reinterpret_cast<uint16_t*>(p) = v;
    return;
  }
#endif
  const uint32_t wide = v;
  p[0] = static_cast<uint8_t>(wide & 0xffu);
  p[1] = static_cast<uint8_t>(wide >> 8);
}

// ggml's quantize_row_q8_0_ref for one block: d = max|x| / 127, q = round(x / d) (halves away
// from zero), clamped to [-127, 127]; NaN codes 0.
LUMEN_HD void quantize_q8_0_block(const float* x, uint8_t* out) {
  float amax = 0.0f;
  for (int j = 0; j < kKvBlock; ++j) amax = fmaxf(amax, fabsf(x[j]));
  const float d = div_rn(amax, 127.0f);
  const float inverse = d != 0.0f ? div_rn(1.0f, d) : 0.0f;
  store_u16(out, float_to_half(d));
  for (int j = 0; j < kKvBlock; ++j) {
    const float v = mul_rn(x[j], inverse);
    int q;
    if (v != v) {
      q = 0;
    } else if (v <= -127.0f) {
      q = -127;
    } else if (v >= 127.0f) {
      q = 127;
    } else {
      q = static_cast<int>(roundf(v));
    }
    out[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(q));
  }
}

// ggml's quantize_row_q4_0_ref for one block: d = (the element of largest magnitude, signed) /
// -8, code = min(15, trunc(x / d + 8.5)) (0 below 1, NaN included), first 16 elements in the
// low nibbles.
LUMEN_HD void quantize_q4_0_block(const float* x, uint8_t* out) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < kKvBlock; ++j) {
    if (amax < fabsf(x[j])) {
      amax = fabsf(x[j]);
      max = x[j];
    }
  }
  const float d = div_rn(max, -8.0f);
  const float inverse = d != 0.0f ? div_rn(1.0f, d) : 0.0f;
  store_u16(out, float_to_half(d));
  uint8_t codes[kKvBlock];
  for (int j = 0; j < kKvBlock; ++j) {
    const float v = add_rn(mul_rn(x[j], inverse), 8.5f);
    codes[j] = !(v >= 1.0f) ? 0 : (v >= 15.0f ? 15 : static_cast<uint8_t>(v));
  }
  for (int j = 0; j < kKvBlock / 2; ++j) {
    out[2 + j] = static_cast<uint8_t>((codes[j] & 0x0f) | ((codes[j + kKvBlock / 2] & 0x0f) << 4));
  }
}

// Element e of a cache row of type T, widened to f32 as the CPU backend's attention widens it
// (tensor's dequantizers: d * q as one float product).
template <tensor::DType T>
LUMEN_HD float kv_element(const uint8_t* row, int64_t e) {
  using tensor::DType;
  if constexpr (T == DType::F32) {
    return float_from_bits(load_u32(row + 4 * e));
  } else if constexpr (T == DType::F16) {
    return half_to_float(load_u16(row + 2 * e));
  } else if constexpr (T == DType::BF16) {
    return bf16_to_float(load_u16(row + 2 * e));
  } else if constexpr (T == DType::FP8_E4M3) {
    return fp8_to_float(row[e]);
  } else if constexpr (T == DType::Q8_0) {
    const uint8_t* block = row + (e / kKvBlock) * kQ8_0Bytes;
    const auto q = static_cast<int8_t>(block[2 + e % kKvBlock]);
    return mul_rn(static_cast<float>(q), half_to_float(load_u16(block)));
  } else {
    static_assert(T == DType::Q4_0, "a KV cache type");
    const uint8_t* block = row + (e / kKvBlock) * kQ4_0Bytes;
    const int j = static_cast<int>(e % kKvBlock);
    const int code = j < kKvBlock / 2 ? (block[2 + j] & 0x0f) : (block[2 + j - kKvBlock / 2] >> 4);
    return mul_rn(static_cast<float>(code - 8), half_to_float(load_u16(block)));
  }
}

// Writes the n values of x (whole blocks for the block types) as a cache row of type T.
template <tensor::DType T>
LUMEN_HD void store_kv_values(const float* x, int64_t n, uint8_t* row) {
  using tensor::DType;
  if constexpr (T == DType::Q8_0 || T == DType::Q4_0) {
    for (int64_t b = 0; b < n / kKvBlock; ++b) {
      if constexpr (T == DType::Q8_0) {
        quantize_q8_0_block(x + b * kKvBlock, row + b * kQ8_0Bytes);
      } else {
        quantize_q4_0_block(x + b * kKvBlock, row + b * kQ4_0Bytes);
      }
    }
  } else {
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (T == DType::F32) {
        std::memcpy(row + 4 * i, &x[i], 4);
      } else if constexpr (T == DType::F16) {
        store_u16(row + 2 * i, float_to_half(x[i]));
      } else if constexpr (T == DType::BF16) {
        store_u16(row + 2 * i, float_to_bf16(x[i]));
      } else {
        static_assert(T == DType::FP8_E4M3, "a KV cache type");
        row[i] = float_to_fp8(x[i]);
      }
    }
  }
}

}  // namespace lumen::backend::cuda::hd
