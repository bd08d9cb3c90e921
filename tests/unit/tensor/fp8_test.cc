// FP8 E4M3 (tensor/fp8.h), the KV cache's fp8 format, against its definition: every code's
// value, round trips, round-to-nearest-even between neighbours, saturation, NaN; and the type's
// place outside ggml's numbering (no file can name it).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tensor/dtype.h"
#include "tensor/fp8.h"
#include "tensor/quantize.h"

namespace lumen::tensor {
namespace {

// The value of a positive code from the OCP definition (bias 7, 3 mantissa bits).
double definition(int code) {
  const int exponent = code >> 3, mantissa = code & 7;
  return exponent == 0 ? std::ldexp(mantissa, -9) : std::ldexp(8 + mantissa, exponent - 10);
}

TEST(Fp8E4m3, EveryCodeWidensToItsDefinitionAndBack) {
  for (int code = 0; code < 0x7f; ++code) {
    EXPECT_EQ(fp8_e4m3_to_float(static_cast<uint8_t>(code)), definition(code)) << code;
    EXPECT_EQ(fp8_e4m3_to_float(static_cast<uint8_t>(code | 0x80)), -definition(code)) << code;
    EXPECT_EQ(float_to_fp8_e4m3(static_cast<float>(definition(code))), code) << code;
    EXPECT_EQ(float_to_fp8_e4m3(static_cast<float>(-definition(code))), code | 0x80) << code;
  }
  EXPECT_EQ(fp8_e4m3_to_float(0x7e), 448.0f);
  EXPECT_TRUE(std::isnan(fp8_e4m3_to_float(0x7f)));
  EXPECT_TRUE(std::isnan(fp8_e4m3_to_float(0xff)));
}

TEST(Fp8E4m3, RoundsToNearestTiesToEven) {
  for (int code = 0; code < 0x7e; ++code) {  // between every pair of neighbours
    const double lo = definition(code), hi = definition(code + 1), mid = (lo + hi) / 2;
    const int even = (code & 1) == 0 ? code : code + 1;
    EXPECT_EQ(float_to_fp8_e4m3(static_cast<float>(mid)), even) << "tie above code " << code;
    EXPECT_EQ(float_to_fp8_e4m3(std::nextafter(static_cast<float>(mid), 0.0f)), code) << code;
    EXPECT_EQ(float_to_fp8_e4m3(std::nextafter(static_cast<float>(mid), 1e9f)), code + 1) << code;
  }
}

TEST(Fp8E4m3, SaturatesAndKeepsNaN) {
  const float inf = std::numeric_limits<float>::infinity();
  for (float big : {448.0f, 460.0f, 464.0f, 500.0f, 1e30f, inf}) {
    EXPECT_EQ(float_to_fp8_e4m3(big), 0x7e) << big;
    EXPECT_EQ(float_to_fp8_e4m3(-big), 0xfe) << big;
  }
  EXPECT_EQ(float_to_fp8_e4m3(std::numeric_limits<float>::quiet_NaN()) & 0x7f, 0x7f);
  EXPECT_EQ(float_to_fp8_e4m3(-0.0f), 0x80);  // the sign of zero is kept
  EXPECT_EQ(float_to_fp8_e4m3(1e-30f), 0x00);
}

TEST(Fp8E4m3, IsAKvTypeNoFileCanHold) {
  EXPECT_EQ(dtype_info(DType::FP8_E4M3).block_bytes, 1u);
  EXPECT_EQ(row_bytes(DType::FP8_E4M3, 64), 64u);
  EXPECT_FALSE(dtype_from_name("FP8_E4M3").has_value());
  EXPECT_EQ(dtype_info(static_cast<uint32_t>(DType::FP8_E4M3)), nullptr);
  const float row[4] = {1.0f, -0.3f, 300.0f, 1000.0f};
  uint8_t codes[4];
  float back[4];
  quantize_row(DType::FP8_E4M3, row, codes, 4);
  dequantize_row(DType::FP8_E4M3, codes, back, 4);
  EXPECT_EQ(back[0], 1.0f);
  EXPECT_EQ(back[1], -0.3125f);  // nearest: 0.3125 (1.25 * 2^-2) rather than 0.28125
  EXPECT_EQ(back[2], 288.0f);    // 256 and 288 are neighbours: 300 is nearer 288
  EXPECT_EQ(back[3], 448.0f);
}

}  // namespace
}  // namespace lumen::tensor
