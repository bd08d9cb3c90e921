// The byte tricks of src/backend/cuda/hd_math.h, exhaustively where the domain is small.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>

#include "backend/cuda/hd_math.h"

namespace lumen::backend::cuda::hd {
namespace {

int byte_of(uint32_t word, int k) { return static_cast<int8_t>(word >> (8 * k)); }

TEST(HdMath, SubBytesSubtractsEachByteWithoutBorrow) {
  for (uint32_t bias : {4u, 8u, 16u, 32u}) {
    for (uint32_t a = 0; a < 128; ++a) {
      for (uint32_t b = 0; b < 128; b += 3) {
        const uint32_t codes = a | (b << 8) | ((127 - a) << 16) | (((a + b) % 128) << 24);
        const uint32_t out = sub_bytes(codes, bias);
        for (int k = 0; k < 4; ++k) {
          ASSERT_EQ(byte_of(out, k), static_cast<int>((codes >> (8 * k)) & 255) - static_cast<int>(bias))
              << "codes " << codes << " bias " << bias << " byte " << k;
        }
      }
    }
  }
}

TEST(HdMath, SpreadBitsPutsBitKAtBit4OfByteK) {
  for (uint32_t bits = 0; bits < 16; ++bits) {
    const uint32_t out = spread_bits_to_bit4(bits);
    for (int k = 0; k < 4; ++k) EXPECT_EQ((out >> (8 * k)) & 255, ((bits >> k) & 1) << 4) << bits;
  }
}

TEST(HdMath, Dp4aAddsSignedByteProducts) {
  std::mt19937 rng(7);
  for (int i = 0; i < 10000; ++i) {
    const auto a = static_cast<uint32_t>(rng()), b = static_cast<uint32_t>(rng());
    const int acc = static_cast<int>(rng() % 100000) - 50000;
    int expected = acc;
    for (int k = 0; k < 4; ++k) expected += byte_of(a, k) * byte_of(b, k);
    ASSERT_EQ(dp4a(static_cast<int>(a), static_cast<int>(b), acc), expected);
  }
}

TEST(HdMath, HalfAndBf16WidenExactly) {
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    const auto h = static_cast<uint16_t>(bits);
    const float f = half_to_float(h);
    if (f == f) {
      ASSERT_EQ(f, tensor::fp16_to_float(h)) << bits;
    }
    const float g = bf16_to_float(h);
    if (g == g) {
      ASSERT_EQ(g, tensor::bf16_to_float(h)) << bits;
    }
  }
}

}  // namespace
}  // namespace lumen::backend::cuda::hd
