// Edge cases of quantize_row / dequantize_row: argument errors, blocks that are all zero or
// constant, magnitudes at the ends of what an f16 scale can express, and the plain formats.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "tensor/dtype.h"
#include "tensor/fp16.h"
#include "tensor/quantize.h"
#include "util/error.h"

namespace lumen::tensor {
namespace {

const DType kQuantized[] = {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1,
                            DType::Q8_0, DType::Q8_1, DType::Q2_K, DType::Q3_K,
                            DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::Q8_K};

std::vector<float> round_trip(DType type, const std::vector<float>& x) {
  const auto n = static_cast<int64_t>(x.size());
  std::vector<unsigned char> packed(row_bytes(type, n).value());
  quantize_row(type, x.data(), packed.data(), n);
  std::vector<float> y(x.size());
  dequantize_row(type, packed.data(), y.data(), n);
  return y;
}

int64_t block_of(DType type) { return dtype_info(type).block_elements; }

TEST(QuantizeRow, RefusesTypesWithoutKernels) {
  std::vector<float> values(256);
  std::vector<unsigned char> bytes(1024);
  for (const DType type :
       {DType::IQ2_XXS, DType::IQ3_S, DType::TQ1_0, DType::NVFP4, DType::I8, DType::F64, DType::Q1_0}) {
    EXPECT_THROW(dequantize_row(type, bytes.data(), values.data(), 256), Error);
    EXPECT_THROW(quantize_row(type, values.data(), bytes.data(), 256), Error);
  }
  try {
    dequantize_row(DType::IQ2_XXS, bytes.data(), values.data(), 256);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("IQ2_XXS"), std::string::npos) << e.what();
  }
  EXPECT_THROW(dequantize_row(static_cast<DType>(31), bytes.data(), values.data(), 32), Error);
}

TEST(QuantizeRow, RefusesPartialBlocks) {
  std::vector<float> values(512);
  std::vector<unsigned char> bytes(1024);
  for (const DType type : kQuantized) {
    const int64_t block = block_of(type);
    for (const int64_t n : {block - 1, block + 1, 2 * block + 16, int64_t{-1}, -block}) {
      EXPECT_THROW(dequantize_row(type, bytes.data(), values.data(), n), Error) << n;
      EXPECT_THROW(quantize_row(type, values.data(), bytes.data(), n), Error) << n;
    }
    dequantize_row(type, nullptr, nullptr, 0);  // nothing to do is not an error
    quantize_row(type, nullptr, nullptr, 0);
  }
  try {
    quantize_row(DType::Q4_K, values.data(), bytes.data(), 100);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("256"), std::string::npos) << e.what();
  }
}

TEST(QuantizeRow, ZeroBlocksStayExactlyZero) {
  for (const DType type : kQuantized) {
    // Zero blocks between random ones: a block's scales must not leak into its neighbours.
    const int64_t block = block_of(type);
    std::vector<float> x(static_cast<size_t>(5 * block), 0.0f);
    std::mt19937 rng(3);
    std::normal_distribution<float> gaussian(0.0f, 1.0f);
    for (int64_t i = block; i < 2 * block; ++i) x[static_cast<size_t>(i)] = gaussian(rng);
    for (int64_t i = 3 * block; i < 4 * block; ++i) x[static_cast<size_t>(i)] = gaussian(rng);
    const auto y = round_trip(type, x);
    for (const int64_t b : {int64_t{0}, int64_t{2}, int64_t{4}}) {
      for (int64_t i = b * block; i < (b + 1) * block; ++i) {
        ASSERT_EQ(y[static_cast<size_t>(i)], 0.0f) << dtype_name(type) << " element " << i;
      }
    }
  }
}

// A constant block is representable up to the f16 rounding of its scale (2^-11 relative), for
// either sign, as long as that scale is a normal f16: |c| >= 0.3 keeps even Q6_K's super-scale
// (c / 4096) normal. Below that the scale loses bits as a subnormal, as it does in ggml.
TEST(QuantizeRow, ConstantBlocksAreNearlyExact) {
  for (const DType type : kQuantized) {
    for (const float c : {0.3f, -0.7f, 1.0f, -1234.5f, 0.4375f, 7.0f, 20000.0f}) {
      const std::vector<float> x(static_cast<size_t>(3 * block_of(type)), c);
      const auto y = round_trip(type, x);
      for (size_t i = 0; i < y.size(); ++i) {
        ASSERT_NEAR(y[i], c, std::fabs(c) * 1e-3) << dtype_name(type) << " c=" << c << " i=" << i;
      }
    }
  }
}

// Far below the f16 scale range the scale underflows: the values come back as (nearly) zero,
// never as NaN or garbage larger than the input.
TEST(QuantizeRow, TinyInputsUnderflowQuietly) {
  for (const DType type : kQuantized) {
    std::vector<float> x(static_cast<size_t>(3 * block_of(type)));
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> uniform(-1e-9f, 1e-9f);
    for (float& v : x) v = uniform(rng);
    const auto y = round_trip(type, x);
    for (size_t i = 0; i < y.size(); ++i) {
      ASSERT_TRUE(std::isfinite(y[i])) << dtype_name(type);
      ASSERT_LE(std::fabs(y[i]), 2e-9f) << dtype_name(type) << " i=" << i;
    }
  }
}

// K-quants clamp an oversized f16 super-scale, so inputs past f16 range saturate rather than
// decode to inf/NaN. (The legacy formats follow ggml bit for bit and do overflow to inf.)
TEST(QuantizeRow, KQuantsSaturateBeyondHalfRange) {
  for (const DType type : {DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
    std::vector<float> x(512);
    for (size_t i = 0; i < x.size(); ++i) x[i] = (i % 2 == 0 ? 1.0f : -1.0f) * 1e12f;
    const auto y = round_trip(type, x);
    for (const float v : y) ASSERT_TRUE(std::isfinite(v)) << dtype_name(type);
  }
  // Q8_K's scale is an f32: any finite magnitude round-trips with the usual precision.
  for (const float scale : {1e30f, 1e-30f}) {
    std::vector<float> x(256);
    for (size_t i = 0; i < x.size(); ++i) x[i] = scale * std::sin(static_cast<float>(i));
    const auto y = round_trip(DType::Q8_K, x);
    for (size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(y[i], x[i], scale / 254 * 1.01f);
  }
}

TEST(PlainFormats, RowsConvertElementByElement) {
  std::vector<float> x = {0.0f, -0.0f, 1.0f, -2.5f, 65504.0f, 1e6f, 1e-8f, 3.14159f,
                          std::numeric_limits<float>::infinity(), -1e-30f, 0.1f};
  const auto n = static_cast<int64_t>(x.size());
  std::vector<uint16_t> half(x.size());
  std::vector<uint16_t> brain(x.size());
  std::vector<float> back(x.size());
  quantize_row(DType::F16, x.data(), half.data(), n);
  quantize_row(DType::BF16, x.data(), brain.data(), n);
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(half[i], float_to_fp16(x[i]));
    EXPECT_EQ(brain[i], float_to_bf16(x[i]));
  }
  dequantize_row(DType::F16, half.data(), back.data(), n);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(back[i], fp16_to_float(half[i]));
  dequantize_row(DType::BF16, brain.data(), back.data(), n);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(back[i], bf16_to_float(brain[i]));
  quantize_row(DType::F32, x.data(), back.data(), n);
  EXPECT_EQ(back, x);
  std::vector<float> copy(x.size());
  dequantize_row(DType::F32, x.data(), copy.data(), n);
  EXPECT_EQ(copy, x);
}

// Rows need not be aligned: a Q4_0 row starting at an odd address decodes the same.
TEST(PlainFormats, UnalignedRowsAreFine) {
  std::vector<float> x(64);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::cos(static_cast<float>(i));
  for (const DType type : {DType::Q4_0, DType::Q6_K, DType::Q8_K, DType::F16}) {
    const int64_t n = type == DType::Q6_K || type == DType::Q8_K ? 256 : 64;
    std::vector<float> input(static_cast<size_t>(n));
    for (size_t i = 0; i < input.size(); ++i) input[i] = x[i % x.size()];
    const size_t bytes = row_bytes(type, n).value();
    std::vector<unsigned char> buffer(bytes + 1);
    quantize_row(type, input.data(), buffer.data() + 1, n);
    std::vector<float> a(input.size()), b(input.size());
    dequantize_row(type, buffer.data() + 1, a.data(), n);
    std::vector<unsigned char> aligned(buffer.begin() + 1, buffer.end());
    dequantize_row(type, aligned.data(), b.data(), n);
    EXPECT_EQ(a, b) << dtype_name(type);
  }
}

}  // namespace
}  // namespace lumen::tensor
