#pragma once
// Scalar, exact conversions between f32 and the two 16-bit float formats GGUF stores: IEEE
// binary16 ("F16", also every f16 scale inside a quantized block) and bfloat16 ("BF16").
//
// They are written with integer operations rather than hardware instructions so the result is
// the same on every machine and matches the references bit for bit:
//  - widening (16 -> 32 bits) is exact and keeps a NaN's sign and payload, as numpy does;
//  - narrowing rounds to nearest, ties to even, overflowing to infinity like IEEE (and numpy);
//  - a NaN narrows to a quiet NaN with the same sign and the top bits of its payload. For a
//    quiet input that is exactly what numpy and gguf-py produce; a signalling NaN is quietened
//    (numpy would keep it signalling), so NaN-ness can never be lost to a zero payload.
#include <bit>
#include <cstdint>

namespace lumen::tensor {

inline float fp16_to_float(uint16_t half) {
  const uint32_t sign = static_cast<uint32_t>(half & 0x8000u) << 16;
  const uint32_t exponent = (half >> 10) & 0x1fu;
  uint32_t mantissa = half & 0x3ffu;
  if (exponent == 0x1f) {  // infinity or NaN: widen the payload unchanged
    return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  }
  if (exponent != 0) {  // normal: re-bias the exponent from 15 to 127
    return std::bit_cast<float>(sign | ((exponent + (127 - 15)) << 23) | (mantissa << 13));
  }
  if (mantissa == 0) return std::bit_cast<float>(sign);  // signed zero
  // Subnormal half: every one of them is a normal float. Shift the leading one up to the
  // implicit-bit position, lowering the exponent once per shift.
  uint32_t float_exponent = 127 - 14;
  while ((mantissa & 0x400u) == 0) {
    mantissa <<= 1;
    --float_exponent;
  }
  return std::bit_cast<float>(sign | (float_exponent << 23) | ((mantissa & 0x3ffu) << 13));
}

inline uint16_t float_to_fp16(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7fffffffu;

  if (magnitude >= 0x7f800000u) {  // infinity or NaN
    if (magnitude == 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u);
    return static_cast<uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
  }
  // 65520 is half-way between the largest half (65504, odd mantissa) and 2^16: ties-to-even
  // sends it, and everything above, to infinity.
  if (magnitude >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);

  if (magnitude >= 0x38800000u) {  // >= 2^-14: a normal half
    // Round the 13 dropped mantissa bits to nearest-even by adding just under one half plus
    // the kept lowest bit; a carry ripples into the exponent, which is the right answer.
    const uint32_t kept_lsb = (magnitude >> 13) & 1u;
    const uint32_t rounded = magnitude + 0xfffu + kept_lsb;
    return static_cast<uint16_t>(sign | ((rounded - ((127u - 15u) << 23)) >> 13));
  }
  // A subnormal half (or zero): the result counts units of 2^-24. Values up to 2^-25 (the tie
  // with zero included) round to zero.
  if (magnitude <= 0x33000000u) return sign;
  const uint32_t exponent = magnitude >> 23;  // 102..112 here
  const uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126u - exponent;     // value / 2^-24 == mantissa >> shift
  uint32_t units = mantissa >> shift;
  const uint32_t remainder = mantissa & ((1u << shift) - 1u);
  const uint32_t halfway = 1u << (shift - 1u);
  if (remainder > halfway || (remainder == halfway && (units & 1u) != 0)) ++units;
  return static_cast<uint16_t>(sign | units);  // 0x400 (smallest normal) is encoded correctly
}

inline float bf16_to_float(uint16_t bf16) {
  return std::bit_cast<float>(static_cast<uint32_t>(bf16) << 16);
}

inline uint16_t float_to_bf16(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) {  // NaN: keep sign and top payload, force quiet
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  }
  // Round to nearest-even on the dropped 16 bits. No NaN reaches here, so the largest input
  // (0xff800000) cannot overflow 32 bits.
  const uint32_t kept_lsb = (bits >> 16) & 1u;
  return static_cast<uint16_t>((bits + 0x7fffu + kept_lsb) >> 16);
}

}  // namespace lumen::tensor
