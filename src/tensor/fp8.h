#pragma once
// OCP 8-bit float E4M3 ("FP8_E4M3", as NVIDIA's __nv_fp8_e4m3 and vLLM's fp8 KV cache store it):
// 1 sign bit, 4 exponent bits with bias 7, 3 mantissa bits. There is no infinity; the one NaN
// pattern per sign is S.1111.111, so the largest finite value is 1.75 * 2^8 = 448 and the
// smallest subnormal 2^-9.
//
// Narrowing rounds to nearest, ties to even, and saturates: anything above 448 (infinity
// included) becomes +-448, as the saturating conversions vLLM's cache writes use. NaN stays
// NaN. Written with integer operations so every machine rounds the same way.
#include <bit>
#include <cstdint>

namespace lumen::tensor {

inline constexpr float kFp8E4m3Max = 448.0f;

inline float fp8_e4m3_to_float(uint8_t code) {
  const uint32_t sign = static_cast<uint32_t>(code & 0x80u) << 24;
  const uint32_t exponent = (code >> 3) & 0xfu;
  const uint32_t mantissa = code & 0x7u;
  if (exponent == 0xf && mantissa == 0x7) return std::bit_cast<float>(sign | 0x7fc00000u);  // NaN
  if (exponent == 0) {  // zero or subnormal: mantissa units of 2^-9, exact in float
    const float magnitude = static_cast<float>(mantissa) * (1.0f / 512.0f);
    return std::bit_cast<float>(sign | std::bit_cast<uint32_t>(magnitude));
  }
  // Normal: re-bias the exponent from 7 to 127.
  return std::bit_cast<float>(sign | ((exponent + (127 - 7)) << 23) | (mantissa << 20));
}

inline uint8_t float_to_fp8_e4m3(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const auto sign = static_cast<uint8_t>((bits >> 24) & 0x80u);
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return static_cast<uint8_t>(sign | 0x7fu);  // NaN
  constexpr uint8_t kMaxCode = 0x7e;                                       // 448
  if (magnitude >= 0x43e00000u) return static_cast<uint8_t>(sign | kMaxCode);  // >= 448, inf: saturate
  if (magnitude >= 0x3c800000u) {  // >= 2^-6: a normal E4M3
    // Round the 20 dropped mantissa bits to nearest-even; a carry ripples into the exponent.
    const uint32_t kept_lsb = (magnitude >> 20) & 1u;
    const uint32_t rounded = magnitude + 0x7ffffu + kept_lsb;
    const uint32_t code = (rounded - ((127u - 7u) << 23)) >> 20;
    return static_cast<uint8_t>(sign | (code > kMaxCode ? kMaxCode : code));  // 448 < x < 464 rounds down anyway
  }
  // Subnormal (or zero): count units of 2^-9. x * 512 is exact (a power-of-two scale), and so
  // is its fraction; 8 units is the smallest normal, whose code is also 8.
  const float units = std::bit_cast<float>(magnitude) * 512.0f;
  auto whole = static_cast<uint32_t>(units);
  const float fraction = units - static_cast<float>(whole);
  if (fraction > 0.5f || (fraction == 0.5f && (whole & 1u) != 0)) ++whole;
  return static_cast<uint8_t>(sign | whole);
}

}  // namespace lumen::tensor
