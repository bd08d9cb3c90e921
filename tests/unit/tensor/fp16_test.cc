// f16 and bf16 conversions: exact widening, round-to-nearest-even narrowing (checked against
// the definition, not against another implementation), and NaN/inf/subnormal edges.
#include "tensor/fp16.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>

namespace lumen::tensor {
namespace {

uint32_t bits_of(float f) { return std::bit_cast<uint32_t>(f); }
float float_of(uint32_t bits) { return std::bit_cast<float>(bits); }

bool half_is_nan(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x03ff) != 0; }

// The value of a finite half from its definition, in double.
double half_value(uint16_t h) {
  const int exponent = (h >> 10) & 0x1f;
  const int mantissa = h & 0x3ff;
  const double magnitude = exponent == 0 ? std::ldexp(mantissa, -24)
                                         : std::ldexp(1024 + mantissa, exponent - 25);
  return (h & 0x8000) != 0 ? -magnitude : magnitude;
}

TEST(Fp16, KnownValues) {
  EXPECT_EQ(fp16_to_float(0x3c00), 1.0f);
  EXPECT_EQ(fp16_to_float(0xc000), -2.0f);
  EXPECT_EQ(fp16_to_float(0x7bff), 65504.0f);
  EXPECT_EQ(fp16_to_float(0x0400), std::ldexp(1.0f, -14));
  EXPECT_EQ(fp16_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(fp16_to_float(0x03ff), std::ldexp(1023.0f, -24));
  EXPECT_EQ(bits_of(fp16_to_float(0x8000)), 0x80000000u);
  EXPECT_EQ(fp16_to_float(0x7c00), INFINITY);
  EXPECT_EQ(fp16_to_float(0xfc00), -INFINITY);
  EXPECT_EQ(float_to_fp16(1.0f), 0x3c00);
  EXPECT_EQ(float_to_fp16(-0.0f), 0x8000);
  EXPECT_EQ(float_to_fp16(0.0f), 0x0000);
  EXPECT_EQ(float_to_fp16(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_fp16(INFINITY), 0x7c00);
  EXPECT_EQ(float_to_fp16(-INFINITY), 0xfc00);
}

TEST(Fp16, WideningIsExactForEveryHalf) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const auto half = static_cast<uint16_t>(h);
    const float f = fp16_to_float(half);
    if (half_is_nan(half)) {
      // The payload moves up unchanged (numpy does the same), sign kept.
      EXPECT_EQ(bits_of(f), ((h & 0x8000u) << 16) | 0x7f800000u | ((h & 0x3ffu) << 13)) << h;
    } else if ((h & 0x7fff) == 0x7c00) {
      EXPECT_TRUE(std::isinf(f));
    } else {
      EXPECT_EQ(static_cast<double>(f), half_value(half)) << h;
    }
  }
}

TEST(Fp16, NarrowingRoundTripsEveryHalf) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const auto half = static_cast<uint16_t>(h);
    const uint16_t back = float_to_fp16(fp16_to_float(half));
    if (half_is_nan(half)) {
      EXPECT_EQ(back, half | 0x0200) << h;  // same sign and payload, now quiet
    } else {
      EXPECT_EQ(back, half) << h;
    }
  }
}

// Every midpoint between two adjacent positive halves (exact in f32) must round to the one with
// the even mantissa, and the floats just either side of it to the nearer one. This covers the
// subnormal range, the subnormal/normal seam and the overflow threshold (65504 | 65520 | inf).
TEST(Fp16, NarrowingRoundsToNearestEven) {
  for (uint16_t h = 0; h < 0x7c00; ++h) {
    const auto next = static_cast<uint16_t>(h + 1);
    const double lo = half_value(h);
    const double hi = next == 0x7c00 ? 65536.0 : half_value(next);
    const auto mid = static_cast<float>((lo + hi) / 2);
    ASSERT_EQ(static_cast<double>(mid), (lo + hi) / 2);
    const uint16_t even = (h & 1) == 0 ? h : next;
    EXPECT_EQ(float_to_fp16(mid), even) << "midpoint above " << h;
    EXPECT_EQ(float_to_fp16(-mid), even | 0x8000) << "midpoint above -" << h;
    EXPECT_EQ(float_to_fp16(std::nextafter(mid, 0.0f)), h) << h;
    EXPECT_EQ(float_to_fp16(std::nextafter(mid, INFINITY)), next) << h;
  }
}

TEST(Fp16, NarrowingEdges) {
  EXPECT_EQ(float_to_fp16(65519.996f), 0x7bff);
  EXPECT_EQ(float_to_fp16(65520.0f), 0x7c00);
  EXPECT_EQ(float_to_fp16(1e10f), 0x7c00);
  EXPECT_EQ(float_to_fp16(-3.4e38f), 0xfc00);
  EXPECT_EQ(float_to_fp16(std::ldexp(1.0f, -25)), 0x0000);  // tie with zero -> even (zero)
  EXPECT_EQ(float_to_fp16(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(float_to_fp16(std::ldexp(1.0f, -26)), 0x0000);
  EXPECT_EQ(float_to_fp16(-std::ldexp(1.0f, -30)), 0x8000);  // underflow keeps the sign
  EXPECT_EQ(float_to_fp16(std::ldexp(3.0f, -25)), 0x0002);   // 1.5 units -> 2 (even)
  EXPECT_EQ(float_to_fp16(1e-45f), 0x0000);                  // f32 subnormal
  EXPECT_EQ(float_to_fp16(float_of(0x387fe000)), 0x0400);    // rounds up into the normals
}

TEST(Fp16, NaNNarrowsToAQuietNaN) {
  EXPECT_EQ(float_to_fp16(float_of(0x7fc00000)), 0x7e00);
  EXPECT_EQ(float_to_fp16(float_of(0xffc00000)), 0xfe00);
  EXPECT_EQ(float_to_fp16(float_of(0x7f800001)), 0x7e00);  // signalling, payload below f16's
  EXPECT_EQ(float_to_fp16(float_of(0x7fa00000)), 0x7f00);  // signalling, payload kept
  EXPECT_EQ(float_to_fp16(float_of(0x7fffffff)), 0x7fff);
  EXPECT_EQ(float_to_fp16(float_of(0xffc02000)), 0xfe01);
}

// Random finite floats: the chosen half is at least as close as both neighbours, and on an
// exact tie it is the even one.
TEST(Fp16, RandomFloatsRoundToTheNearestHalf) {
  std::mt19937 rng(1234);
  std::uniform_int_distribution<uint32_t> exponent(90, 150);  // ~1e-12 .. ~1.6e7
  std::uniform_int_distribution<uint32_t> bits(0, 0xffffffffu);
  for (int i = 0; i < 200000; ++i) {
    const uint32_t raw = (bits(rng) & 0x807fffffu) | (exponent(rng) << 23);
    const float f = float_of(raw);
    const uint16_t h = float_to_fp16(f);
    const double x = std::fabs(static_cast<double>(f));
    const auto magnitude = static_cast<uint16_t>(h & 0x7fff);
    ASSERT_EQ((h & 0x8000) != 0, std::signbit(f));
    if (magnitude == 0x7c00) {
      ASSERT_GE(x, 65520.0) << raw;
      continue;
    }
    const double err = std::fabs(x - half_value(magnitude));
    const double below = magnitude > 0 ? std::fabs(x - half_value(magnitude - 1)) : INFINITY;
    const double above = magnitude < 0x7bff ? std::fabs(x - half_value(magnitude + 1))
                                            : std::fabs(x - 65536.0);
    ASSERT_LE(err, below) << raw;
    ASSERT_LE(err, above) << raw;
    if (err == below || err == above) {
      ASSERT_EQ(magnitude & 1, 0) << raw;
    }
  }
}

TEST(Bf16, WideningIsAShift) {
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    EXPECT_EQ(bits_of(bf16_to_float(static_cast<uint16_t>(b))), b << 16);
  }
}

TEST(Bf16, NarrowingRoundsToNearestEven) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16(float_of(0x3f808000)), 0x3f80);  // tie, kept bit even: down
  EXPECT_EQ(float_to_bf16(float_of(0x3f818000)), 0x3f82);  // tie, kept bit odd: up
  EXPECT_EQ(float_to_bf16(float_of(0x3f808001)), 0x3f81);
  EXPECT_EQ(float_to_bf16(float_of(0x3f807fff)), 0x3f80);
  EXPECT_EQ(float_to_bf16(float_of(0xbf818000)), 0xbf82);
  EXPECT_EQ(float_to_bf16(float_of(0x3fffffff)), 0x4000);  // carry into the exponent
  EXPECT_EQ(float_to_bf16(float_of(0x00008000)), 0x0000);  // subnormal tie -> even
  EXPECT_EQ(float_to_bf16(float_of(0x00018000)), 0x0002);
  EXPECT_EQ(float_to_bf16(-0.0f), 0x8000);
  EXPECT_EQ(float_to_bf16(float_of(0x7f7f7fff)), 0x7f7f);
  EXPECT_EQ(float_to_bf16(float_of(0x7f7f8000)), 0x7f80);  // tie at the top: to infinity
  EXPECT_EQ(float_to_bf16(float_of(0x7f7fffff)), 0x7f80);
  EXPECT_EQ(float_to_bf16(INFINITY), 0x7f80);
  EXPECT_EQ(float_to_bf16(-INFINITY), 0xff80);
}

TEST(Bf16, NaNNarrowsToAQuietNaN) {
  EXPECT_EQ(float_to_bf16(float_of(0x7fc00000)), 0x7fc0);
  EXPECT_EQ(float_to_bf16(float_of(0x7f800001)), 0x7fc0);  // payload only in dropped bits
  EXPECT_EQ(float_to_bf16(float_of(0xff800001)), 0xffc0);
  EXPECT_EQ(float_to_bf16(float_of(0x7f810000)), 0x7fc1);
  EXPECT_EQ(float_to_bf16(float_of(0x7fffffff)), 0x7fff);  // no rounding carry out of NaN
}

TEST(Bf16, RoundTripsEveryValue) {
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    const auto bf = static_cast<uint16_t>(b);
    const bool nan = (b & 0x7f80) == 0x7f80 && (b & 0x7f) != 0;
    EXPECT_EQ(float_to_bf16(bf16_to_float(bf)), nan ? (bf | 0x40) : bf) << b;
  }
}

}  // namespace
}  // namespace lumen::tensor
