// Bit layouts of the packed blocks, pinned down with hand-built blocks: literal values for the
// legacy formats, and single-bit probes for the K-quants (flip one stored bit, exactly one
// element may change, and it must be the one the format definition names). Round-trip tests
// cannot catch a layout that quantize and dequantize get wrong the same way; these can.
// (The Python golden test additionally compares every format except Q8_1/Q8_K with gguf-py.)
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "tensor/block_formats.h"
#include "tensor/dtype.h"
#include "tensor/quantize.h"

namespace lumen::tensor {
namespace {

constexpr uint16_t kOne = 0x3c00;      // f16 1.0
constexpr uint16_t kHalf = 0x3800;     // f16 0.5
constexpr uint16_t kMinusOne = 0xbc00; // f16 -1.0

template <typename Block>
std::vector<float> decode(DType type, const Block& block) {
  const int64_t n = dtype_info(type).block_elements;
  std::vector<float> out(static_cast<size_t>(n));
  dequantize_row(type, &block, out.data(), n);
  return out;
}

// Indices of elements that differ between two decodes.
std::vector<int> changed(const std::vector<float>& a, const std::vector<float>& b) {
  std::vector<int> out;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) out.push_back(static_cast<int>(i));
  }
  return out;
}

TEST(LegacyLayout, Q4_0) {
  BlockQ4_0 block{};
  block.d = kOne;
  for (int j = 0; j < 16; ++j) block.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  const auto y = decode(DType::Q4_0, block);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], static_cast<float>(j - 8)) << j;       // low nibbles: first half
    EXPECT_EQ(y[j + 16], static_cast<float>(7 - j)) << j;  // high nibbles: second half
  }
}

TEST(LegacyLayout, Q4_1) {
  BlockQ4_1 block{};
  block.d = kHalf;
  block.m = kMinusOne;
  for (int j = 0; j < 16; ++j) block.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  const auto y = decode(DType::Q4_1, block);
  EXPECT_EQ(y[0], -1.0f);
  EXPECT_EQ(y[15], 6.5f);
  EXPECT_EQ(y[16], 6.5f);
  EXPECT_EQ(y[31], -1.0f);
}

TEST(LegacyLayout, Q5_0AndQ5_1HighBits) {
  // qh bit j is the fifth bit of element j: set bits 0, 17 and 31 only.
  BlockQ5_0 q5_0{};
  q5_0.d = kOne;
  q5_0.qh[0] = 0x01;
  q5_0.qh[2] = 0x02;
  q5_0.qh[3] = 0x80;
  q5_0.qs[1] = 0x30;  // element 17's nibble = 3
  const auto y0 = decode(DType::Q5_0, q5_0);
  EXPECT_EQ(y0[0], 0.0f);   // 16 - 16
  EXPECT_EQ(y0[1], -16.0f);
  EXPECT_EQ(y0[17], 3.0f);  // (3 | 16) - 16
  EXPECT_EQ(y0[31], 0.0f);
  EXPECT_EQ(y0[30], -16.0f);

  BlockQ5_1 q5_1{};
  q5_1.d = kHalf;
  q5_1.m = kOne;
  q5_1.qh[2] = 0x02;
  q5_1.qs[1] = 0xf0;
  const auto y1 = decode(DType::Q5_1, q5_1);
  EXPECT_EQ(y1[17], 0.5f * 31 + 1);
  EXPECT_EQ(y1[1], 1.0f);
}

TEST(LegacyLayout, Q8_0AndQ8_1) {
  BlockQ8_0 q8_0{};
  q8_0.d = kHalf;
  BlockQ8_1 q8_1{};
  q8_1.d = kHalf;
  q8_1.s = 0x7c00;  // s is a dot-product helper; dequantization must ignore it
  for (int j = 0; j < 32; ++j) {
    q8_0.qs[j] = static_cast<int8_t>(4 * j - 128);
    q8_1.qs[j] = static_cast<int8_t>(4 * j - 128);
  }
  const auto y0 = decode(DType::Q8_0, q8_0);
  const auto y1 = decode(DType::Q8_1, q8_1);
  for (int j = 0; j < 32; ++j) {
    EXPECT_EQ(y0[j], 0.5f * static_cast<float>(4 * j - 128));
    EXPECT_EQ(y1[j], y0[j]);
  }
}

// The scale formed from its bits is std::ldexp's power of two, bit for bit, for every exponent
// byte (the subnormals 2^-128 and 2^-127 included).
TEST(MicroscalingLayout, Mxfp4ScaleIsLdexpsPowerOfTwo) {
  for (int e = 0; e < 256; ++e) {
    const float want = std::ldexp(1.0f, e - 128), got = mxfp4_scale(static_cast<uint8_t>(e));
    EXPECT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(want)) << "e = " << e;
  }
  static_assert(mxfp4_scale(128) == 1.0f && mxfp4_scale(129) == 2.0f && mxfp4_scale(255) == 0x1p127f);
}

// MXFP4: the OCP E2M1 values (0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives) under e = 128 + 1
// (ggml's doubled levels times 2^(e - 128) = 2 gives them exactly, times 2), Q4_0's nibble
// layout, and the exponent's ends: e = 0 is 2^-128 (a subnormal), e = 255 is 2^127.
TEST(MicroscalingLayout, MXFP4) {
  const float e2m1[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, 0, -0.5f, -1, -1.5f, -2, -3, -4, -6};
  BlockMXFP4 block{};
  block.e = 128;  // 2^0 on the doubled levels: each E2M1 value times 2
  for (int j = 0; j < 16; ++j) block.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  auto y = decode(DType::MXFP4, block);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 2.0f * e2m1[j]) << j;            // low nibbles: first half
    EXPECT_EQ(y[j + 16], 2.0f * e2m1[15 - j]) << j;  // high nibbles: second half
  }
  block.e = 127;  // the E2M1 values themselves
  y = decode(DType::MXFP4, block);
  for (int j = 0; j < 16; ++j) EXPECT_EQ(y[j], e2m1[j]) << j;
  block.e = 0;
  y = decode(DType::MXFP4, block);
  EXPECT_EQ(y[1], std::ldexp(1.0f, -128));
  EXPECT_GT(y[1], 0.0f);
  block.e = 255;
  y = decode(DType::MXFP4, block);
  EXPECT_EQ(y[1], std::ldexp(1.0f, 127));
  EXPECT_TRUE(std::isinf(y[7]));  // 12 x 2^127 overflows, in ggml as here

  // Quantizing: the largest magnitude 6.0 gives e = floor(log2 6) - 2 + 127 = 127, and every
  // E2M1 value comes back exactly; the top level (12 x 2^-1 = 6) is the clip point, so 7 clips.
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[j] = e2m1[j % 16];
  std::vector<unsigned char> packed(sizeof(BlockMXFP4));
  quantize_row(DType::MXFP4, x.data(), packed.data(), 32);
  EXPECT_EQ(packed[0], 127);
  std::vector<float> back(32);
  dequantize_row(DType::MXFP4, packed.data(), back.data(), 32);
  EXPECT_EQ(back, x);
  x[3] = 7.0f;  // e = floor(log2 7) - 2 + 127 = 127 still: 7 clips to 6
  quantize_row(DType::MXFP4, x.data(), packed.data(), 32);
  dequantize_row(DType::MXFP4, packed.data(), back.data(), 32);
  EXPECT_EQ(back[3], 6.0f);
}

TEST(Q8_1, SumFieldIsScaleTimesSumOfQuants) {
  std::vector<float> x(64);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7) * 0.3f - 0.5f;
  BlockQ8_1 blocks[2];
  quantize_row(DType::Q8_1, x.data(), blocks, 64);
  for (const BlockQ8_1& block : blocks) {
    int sum = 0;
    for (const int8_t q : block.qs) sum += q;
    std::vector<float> d(1);
    dequantize_row(DType::F16, &block.d, d.data(), 1);
    std::vector<float> s(1);
    dequantize_row(DType::F16, &block.s, s.data(), 1);
    const float expected = d[0] * static_cast<float>(sum);
    EXPECT_NEAR(s[0], expected, std::abs(expected) * 1e-3);
  }
}

TEST(KQuantLayout, Q2_K) {
  BlockQ2_K block{};
  block.d = kOne;
  for (uint8_t& s : block.scales) s = 0x01;  // step 1, min 0
  const auto zero = decode(DType::Q2_K, block);
  for (int byte = 0; byte < 64; ++byte) {
    for (int plane = 0; plane < 4; ++plane) {
      BlockQ2_K probe = block;
      probe.qs[byte] = static_cast<uint8_t>(1 << (2 * plane));
      const auto y = decode(DType::Q2_K, probe);
      // Each 32-byte half holds 128 elements as four 32-element planes of 2 bits.
      const int expected = 128 * (byte / 32) + 32 * plane + byte % 32;
      ASSERT_EQ(changed(zero, y), std::vector<int>{expected}) << byte << "/" << plane;
      EXPECT_EQ(y[expected], 1.0f);
    }
  }
  // Scale byte i belongs to elements 16i..16i+15: low nibble the scale, high nibble the min.
  BlockQ2_K scaled{};
  scaled.d = kHalf;
  scaled.dmin = kOne;
  for (int i = 0; i < 16; ++i) scaled.scales[i] = static_cast<uint8_t>((15 - i) | (i << 4));
  for (uint8_t& q : scaled.qs) q = 0xff;  // every quant 3
  const auto y = decode(DType::Q2_K, scaled);
  for (int e = 0; e < 256; ++e) {
    const int i = e / 16;
    EXPECT_EQ(y[e], 0.5f * static_cast<float>(15 - i) * 3.0f - static_cast<float>(i)) << e;
  }
}

TEST(KQuantLayout, Q3_K) {
  BlockQ3_K block{};
  block.d = kOne;
  // Scale code 33 (value +1) everywhere: low nibbles 1, high 2-bit fields 0b10.
  for (int i = 0; i < 8; ++i) block.scales[i] = 0x11;
  for (int i = 8; i < 12; ++i) block.scales[i] = 0xaa;
  for (uint8_t& h : block.hmask) h = 0xff;  // high bit set: no -4 offset
  const auto zero = decode(DType::Q3_K, block);
  for (float v : zero) ASSERT_EQ(v, 0.0f);
  for (int byte = 0; byte < 64; ++byte) {
    for (int plane = 0; plane < 4; ++plane) {
      BlockQ3_K probe = block;
      probe.qs[byte] = static_cast<uint8_t>(1 << (2 * plane));
      const int expected = 128 * (byte / 32) + 32 * plane + byte % 32;
      const auto y = decode(DType::Q3_K, probe);
      ASSERT_EQ(changed(zero, y), std::vector<int>{expected}) << byte << "/" << plane;
      EXPECT_EQ(y[expected], 1.0f);
    }
  }
  for (int byte = 0; byte < 32; ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      BlockQ3_K probe = block;
      probe.hmask[byte] = static_cast<uint8_t>(0xff ^ (1 << bit));
      const int expected = 32 * bit + byte;  // hmask bit k of byte l: element 32k + l
      const auto y = decode(DType::Q3_K, probe);
      ASSERT_EQ(changed(zero, y), std::vector<int>{expected}) << byte << "/" << bit;
      EXPECT_EQ(y[expected], -4.0f);
    }
  }
  // Sixteen distinct 6-bit codes (value = code - 32) over the whole code range.
  BlockQ3_K scaled = block;
  for (uint8_t& q : scaled.qs) q = 0x55;  // every quant 1
  for (uint8_t& s : scaled.scales) s = 0;
  int codes[16];
  for (int i = 0; i < 16; ++i) {
    codes[i] = (i * 37 + 5) % 64;
    scaled.scales[i % 8] =
        static_cast<uint8_t>(scaled.scales[i % 8] | ((codes[i] & 15) << (4 * (i / 8))));
    scaled.scales[8 + i % 4] =
        static_cast<uint8_t>(scaled.scales[8 + i % 4] | ((codes[i] >> 4) << (2 * (i / 4))));
  }
  const auto y = decode(DType::Q3_K, scaled);
  for (int e = 0; e < 256; ++e) EXPECT_EQ(y[e], static_cast<float>(codes[e / 16] - 32)) << e;
}

// Q4_K and Q5_K share the 12-byte packing of eight 6-bit (scale, min) pairs.
void pack_k4_scales(const int* scales, const int* mins, uint8_t* packed) {
  for (int j = 0; j < 12; ++j) packed[j] = 0;
  for (int j = 0; j < 8; ++j) {
    if (j < 4) {
      packed[j] = static_cast<uint8_t>(packed[j] | scales[j]);
      packed[j + 4] = static_cast<uint8_t>(packed[j + 4] | mins[j]);
    } else {
      packed[j + 4] = static_cast<uint8_t>((scales[j] & 15) | ((mins[j] & 15) << 4));
      packed[j - 4] = static_cast<uint8_t>(packed[j - 4] | ((scales[j] >> 4) << 6));
      packed[j] = static_cast<uint8_t>(packed[j] | ((mins[j] >> 4) << 6));
    }
  }
}

TEST(KQuantLayout, Q4_KAndQ5_K) {
  const int ones[8] = {1, 1, 1, 1, 1, 1, 1, 1};
  const int zeros[8] = {};
  BlockQ4_K q4{};
  q4.d = kOne;
  pack_k4_scales(ones, zeros, q4.scales);
  BlockQ5_K q5{};
  q5.d = kOne;
  pack_k4_scales(ones, zeros, q5.scales);
  const auto zero4 = decode(DType::Q4_K, q4);
  const auto zero5 = decode(DType::Q5_K, q5);
  for (int byte = 0; byte < 128; ++byte) {
    for (int nibble = 0; nibble < 2; ++nibble) {
      // Each 32 bytes hold 64 elements: low nibbles the first 32, high nibbles the next.
      const int expected = 64 * (byte / 32) + 32 * nibble + byte % 32;
      BlockQ4_K p4 = q4;
      p4.qs[byte] = static_cast<uint8_t>(1 << (4 * nibble));
      ASSERT_EQ(changed(zero4, decode(DType::Q4_K, p4)), std::vector<int>{expected});
      BlockQ5_K p5 = q5;
      p5.qs[byte] = static_cast<uint8_t>(1 << (4 * nibble));
      ASSERT_EQ(changed(zero5, decode(DType::Q5_K, p5)), std::vector<int>{expected});
    }
  }
  for (int byte = 0; byte < 32; ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      BlockQ5_K p5 = q5;
      p5.qh[byte] = static_cast<uint8_t>(1 << bit);
      const int expected = 32 * bit + byte;
      const auto y = decode(DType::Q5_K, p5);
      ASSERT_EQ(changed(zero5, y), std::vector<int>{expected});
      EXPECT_EQ(y[expected], 16.0f);
    }
  }
  // Distinct codes over the full 6-bit range: all quants 0 reveals -min, all 15 reveals
  // 15 * scale - min.
  const int scales[8] = {63, 1, 42, 17, 33, 0, 58, 21};
  const int mins[8] = {5, 63, 0, 48, 31, 62, 16, 7};
  BlockQ4_K coded{};
  coded.d = kOne;
  coded.dmin = kHalf;
  pack_k4_scales(scales, mins, coded.scales);
  const auto low = decode(DType::Q4_K, coded);
  for (uint8_t& q : coded.qs) q = 0xff;
  const auto high = decode(DType::Q4_K, coded);
  for (int e = 0; e < 256; ++e) {
    const int j = e / 32;
    EXPECT_EQ(low[e], -0.5f * static_cast<float>(mins[j])) << e;
    EXPECT_EQ(high[e], 15.0f * static_cast<float>(scales[j]) - 0.5f * static_cast<float>(mins[j]))
        << e;
  }
}

TEST(KQuantLayout, Q6_K) {
  BlockQ6_K block{};
  block.d = kOne;
  for (int8_t& s : block.scales) s = 1;
  const auto zero = decode(DType::Q6_K, block);  // every quant -32
  for (float v : zero) ASSERT_EQ(v, -32.0f);
  for (int byte = 0; byte < 128; ++byte) {
    for (int nibble = 0; nibble < 2; ++nibble) {
      BlockQ6_K probe = block;
      probe.ql[byte] = static_cast<uint8_t>(1 << (4 * nibble));
      // 64 ql bytes per 128-element half: bytes 0-31 / 32-63 give quarters 0 / 1 (low
      // nibbles) and 2 / 3 (high nibbles).
      const int expected = 128 * (byte / 64) + 32 * ((byte % 64) / 32 + 2 * nibble) + byte % 32;
      const auto y = decode(DType::Q6_K, probe);
      ASSERT_EQ(changed(zero, y), std::vector<int>{expected}) << byte << "/" << nibble;
      EXPECT_EQ(y[expected], -31.0f);
    }
  }
  for (int byte = 0; byte < 64; ++byte) {
    for (int pair = 0; pair < 4; ++pair) {
      BlockQ6_K probe = block;
      probe.qh[byte] = static_cast<uint8_t>(1 << (2 * pair));
      const int expected = 128 * (byte / 32) + 32 * pair + byte % 32;
      const auto y = decode(DType::Q6_K, probe);
      ASSERT_EQ(changed(zero, y), std::vector<int>{expected}) << byte << "/" << pair;
      EXPECT_EQ(y[expected], -16.0f);
    }
  }
  BlockQ6_K scaled = block;
  for (int i = 0; i < 16; ++i) scaled.scales[i] = static_cast<int8_t>(i * 17 - 128);
  const auto y = decode(DType::Q6_K, scaled);
  for (int e = 0; e < 256; ++e) EXPECT_EQ(y[e], -32.0f * static_cast<float>(e / 16 * 17 - 128));
}

TEST(KQuantLayout, Q8_K) {
  BlockQ8_K block{};
  block.d = 0.25f;
  for (int e = 0; e < 256; ++e) block.qs[e] = static_cast<int8_t>(e - 128);
  block.bsums[3] = 12345;  // a dot-product helper: dequantization ignores it
  const auto y = decode(DType::Q8_K, block);
  for (int e = 0; e < 256; ++e) EXPECT_EQ(y[e], 0.25f * static_cast<float>(e - 128));
}

TEST(Q8_K, QuantizeFillsTheSixteenElementSums) {
  std::vector<float> x(512);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7919) % 1000) / 100.0f - 5;
  BlockQ8_K blocks[2];
  quantize_row(DType::Q8_K, x.data(), blocks, 512);
  for (const BlockQ8_K& block : blocks) {
    int peak = 0;
    for (int i = 0; i < 16; ++i) {
      int sum = 0;
      for (int k = 0; k < 16; ++k) {
        sum += block.qs[16 * i + k];
        peak = std::max(peak, std::abs(static_cast<int>(block.qs[16 * i + k])));
      }
      EXPECT_EQ(block.bsums[i], sum);
    }
    EXPECT_EQ(peak, 127);  // the largest element uses the full 8-bit range
  }
}

}  // namespace
}  // namespace lumen::tensor
