#pragma once
// exp() for the sampler's softmax loops, written so the compiler can vectorize it (a call to
// std::exp in a loop stays scalar without -ffast-math, which would also break the -inf logits
// masks rely on). Accurate to a few float ulps, the same as rounding the exact value to float:
// a distribution built from it cannot be told from the exact one by any number of draws a test
// can afford (tests/unit/sampling check the error bound).
#include <bit>
#include <cstdint>

namespace lumen::sampling {

// e^x for x <= 88. Results below e^-87 (~1.6e-38, the bottom of the normal floats), -inf and
// NaN give 0: a token that unlikely is never drawn.
inline float fast_exp(float x) {
  const bool vanishes = !(x >= -87.0f);
  float c = x < 88.0f ? x : 88.0f;
  c = c > -87.0f ? c : -87.0f;
  // x = n ln2 + r, |r| <= ln2 / 2; n rounded to nearest by the 1.5 * 2^23 trick (exact for
  // |n| < 2^22 in round-to-nearest). ln2 is split so that n * ln2_hi is exact.
  const float n = (c * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  const float r = (c - n * 0.693359375f) - n * -2.12194440e-4f;
  // e^r by its Taylor series to r^7: the remainder is below 1e-8 relative for |r| <= ln2 / 2.
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  // 2^n as a float: n is in [-126, 127], a normal exponent.
  const float scale = std::bit_cast<float>((static_cast<int32_t>(n) + 127) << 23);
  return vanishes ? 0.0f : p * scale;
}

}  // namespace lumen::sampling
