// The SIMD activation quantizers must produce exactly the bytes of the scalar
// quantize_activation_row (llama.cpp's run-time semantics), including the rounding of exact
// halves to even and the all-zero block; and those semantics are pinned down by hand below.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/activation_quant.h"
#include "backend/cpu/cpu_features.h"
#include "backend/cpu/matmul_kernels.h"
#include "backend/cpu/matmul_packed.h"
#include "tensor/block_formats.h"
#include "tensor/fp16.h"
#include "tensor/quantize.h"

namespace lumen::backend::cpu {
namespace {

using tensor::DType;

std::vector<float> test_row(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-3.0f, 3.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (auto& v : x) v = uniform(rng);
  // Block 1: amax 127 makes the scale exactly 1, so the halves below are exact ties.
  for (int i = 0; i < 32; ++i) x[32 + i] = static_cast<float>(i) - 15.5f;
  x[32] = 127.0f;
  // Block 2: all zero (scale 0, codes 0).
  for (int i = 0; i < 32; ++i) x[64 + i] = 0.0f;
  // Block 3: tiny values.
  for (int i = 0; i < 32; ++i) x[96 + i] *= 1e-30f;
  return x;
}

void expect_same_as_reference(const detail::TypeKernels* kernels, DType act, const char* level) {
  ASSERT_NE(kernels, nullptr);
  ASSERT_EQ(kernels->act_type, act);
  const int64_t n = 1024;
  for (uint32_t seed = 1; seed <= 4; ++seed) {
    const std::vector<float> x = test_row(n, seed);
    const size_t bytes = *tensor::row_bytes(act, n);
    std::vector<uint8_t> want(bytes), got(bytes, 0xcd);
    quantize_activation_row(act, x.data(), want.data(), n);
    kernels->quantize(x.data(), got.data(), n);
    EXPECT_EQ(got, want) << level << " " << tensor::dtype_name(act) << " seed " << seed;
  }
}

TEST(ActivationQuant, RoundsHalvesToEvenWithInverseFrom127OverAmax) {
  // amax 127: the scale is 1 and x * 127 / 127 is exact, so these are exact halves.
  std::vector<float> x(32, 0.0f);
  x[0] = 127.0f;
  x[1] = 2.5f;   // -> 2 (even), where roundf would give 3
  x[2] = -3.5f;  // -> -4
  x[3] = 0.5f;   // -> 0
  tensor::BlockQ8_1 block;
  quantize_activation_row(DType::Q8_1, x.data(), &block, 32);
  EXPECT_EQ(block.qs[0], 127);
  EXPECT_EQ(block.qs[1], 2);
  EXPECT_EQ(block.qs[2], -4);
  EXPECT_EQ(block.qs[3], 0);
  EXPECT_EQ(tensor::fp16_to_float(block.d), 1.0f);
  EXPECT_EQ(tensor::fp16_to_float(block.s), 127.0f + 2 - 4);
}

TEST(ActivationQuant, Q8KScaleCarriesTheSignOfTheLargestElement) {
  std::vector<float> x(256, 0.25f);
  x[7] = -2.0f;  // largest magnitude, negative: scale -127 / -2 > 0, codes keep their sign
  tensor::BlockQ8_K block;
  quantize_activation_row(DType::Q8_K, x.data(), &block, 256);
  EXPECT_FLOAT_EQ(block.d, -2.0f / -127.0f);
  EXPECT_EQ(block.qs[7], -127);
  x[7] = 2.0f;  // positive: codes come out negated with a negative scale
  quantize_activation_row(DType::Q8_K, x.data(), &block, 256);
  EXPECT_FLOAT_EQ(block.d, -2.0f / 127.0f);
  EXPECT_EQ(block.qs[7], -127);
  EXPECT_EQ(block.qs[0], -16);  // 0.25 * -63.5 = -15.875
  int sum = 0;
  for (int i = 0; i < 16; ++i) sum += block.qs[i];
  EXPECT_EQ(block.bsums[0], sum);
}

TEST(MatmulQuantize, SimdQuantizersAreBitExact) {
  const struct {
    DType weight, act;
  } pairs[] = {{DType::Q4_0, DType::Q8_0}, {DType::Q4_1, DType::Q8_1}, {DType::Q6_K, DType::Q8_K}};
  for (const auto& pair : pairs) {
    expect_same_as_reference(detail::scalar_kernels(pair.weight), pair.act, "scalar");
    if (detected_isa() >= Isa::kAvx2) {
      expect_same_as_reference(detail::avx2_kernels(pair.weight), pair.act, "avx2");
    }
    if (detected_isa() >= Isa::kAvx512) {
      expect_same_as_reference(detail::avx512_kernels(pair.weight), pair.act, "avx512");
    }
  }
}

// A packed activation row (matmul_kernels.h: codes, then f32 scales, then one word per block)
// written straight from f32 values holds exactly what the reference quantizer's Q8_0 / Q8_1 row
// holds: its codes, its f16 d widened, and Q8_1's f16 s widened or -offset x the block's code
// sum (offset 8 for Q4_0, 16 for Q5_0, 128 for Q8_0's sign-flipped codes).
TEST(MatmulQuantize, PackedRowsHoldTheReferenceQuantizersValues) {
  if (detected_isa() < Isa::kAvx512) GTEST_SKIP() << "packed kernels need AVX-512 VNNI";
  const struct {
    DType weight, act;
    int32_t offset;
  } types[] = {{DType::Q4_0, DType::Q8_0, 8}, {DType::Q4_1, DType::Q8_1, 0},
               {DType::Q5_0, DType::Q8_0, 16}, {DType::Q8_0, DType::Q8_0, 128}};
  for (const auto& type : types) {
    const detail::PackedKernels* packed = detail::packed_kernels(type.weight);
    if (packed == nullptr) GTEST_SKIP() << "built without the AVX-512 packed kernels";
    ASSERT_EQ(packed->extra_words, 1);
    for (const int64_t n : {int64_t{128}, int64_t{1024}, int64_t{1536}}) {
      for (uint32_t seed = 1; seed <= 3; ++seed) {
        const std::vector<float> x = test_row(n, seed);
        const int64_t blocks = n / 32;
        std::vector<uint8_t> q(*tensor::row_bytes(type.act, n));
        quantize_activation_row(type.act, x.data(), q.data(), n);
        std::vector<uint8_t> want(static_cast<size_t>(n + 8 * blocks));
        for (int64_t b = 0; b < blocks; ++b) {
          uint8_t* codes = want.data() + 32 * b;
          uint8_t* d = want.data() + n + 4 * b;
          uint8_t* extra = want.data() + n + 4 * blocks + 4 * b;
          if (type.act == DType::Q8_1) {
            tensor::BlockQ8_1 block;
            std::memcpy(&block, q.data() + b * sizeof(block), sizeof(block));
            std::memcpy(codes, block.qs, 32);
            const float widened[2] = {tensor::fp16_to_float(block.d), tensor::fp16_to_float(block.s)};
            std::memcpy(d, &widened[0], 4);
            std::memcpy(extra, &widened[1], 4);
          } else {
            tensor::BlockQ8_0 block;
            std::memcpy(&block, q.data() + b * sizeof(block), sizeof(block));
            std::memcpy(codes, block.qs, 32);
            const float widened = tensor::fp16_to_float(block.d);
            std::memcpy(d, &widened, 4);
            int32_t sum = 0;
            for (const int8_t code : block.qs) sum += code;
            const int32_t correction = -type.offset * sum;
            std::memcpy(extra, &correction, 4);
          }
        }
        std::vector<uint8_t> got(detail::packed_activation_bytes(n, 1), 0xcd);
        packed->quantize_packed(x.data(), got.data(), n);
        got.resize(want.size());
        EXPECT_EQ(got, want) << tensor::dtype_name(type.weight) << " " << n << " values, seed " << seed;
      }
    }
  }
}

// The K-quants' packed activation rows (matmul_packed_kquant_avx512.cc) hold the reference
// quantizer's Q8_K row: its codes, its f32 d in each of a super-block's eight d slots, and per
// super-block Q4_K's and Q5_K's eight 32-element code sums as int16 pairs (then four zero words) or Q6_K's
// sixteen -32 x 16-element sums.
TEST(MatmulQuantize, PackedKQuantRowsHoldTheReferenceQ8KValues) {
  if (detected_isa() < Isa::kAvx512) GTEST_SKIP() << "packed kernels need AVX-512 VNNI";
  for (const DType weight : {DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
    const detail::PackedKernels* packed = detail::packed_kernels(weight);
    if (packed == nullptr) GTEST_SKIP() << "built without the AVX-512 packed kernels";
    const int extra_words = weight == DType::Q6_K ? 2 : 1;
    ASSERT_EQ(packed->extra_words, extra_words);
    for (const int64_t n : {int64_t{256}, int64_t{1024}, int64_t{2560}}) {
      for (uint32_t seed = 1; seed <= 3; ++seed) {
        const std::vector<float> x = test_row(n, seed);
        const int64_t blocks = n / 32;
        std::vector<uint8_t> q(*tensor::row_bytes(DType::Q8_K, n));
        quantize_activation_row(DType::Q8_K, x.data(), q.data(), n);
        std::vector<uint8_t> want(static_cast<size_t>(n + 4 * blocks * (1 + extra_words)));
        for (int64_t s = 0; s < n / 256; ++s) {
          tensor::BlockQ8_K block;
          std::memcpy(&block, q.data() + s * sizeof(block), sizeof(block));
          std::memcpy(want.data() + 256 * s, block.qs, 256);
          for (int i = 0; i < 8; ++i) std::memcpy(want.data() + n + 4 * (8 * s + i), &block.d, 4);
          int32_t words[16] = {};
          for (int j = 0; j < 16; ++j) {
            if (weight == DType::Q6_K) {
              words[j] = -32 * block.bsums[j];
            } else if (j < 4) {
              const auto pair_low = static_cast<uint16_t>(block.bsums[4 * j] + block.bsums[4 * j + 1]);
              const auto pair_high = static_cast<uint16_t>(block.bsums[4 * j + 2] + block.bsums[4 * j + 3]);
              words[j] = static_cast<int32_t>(pair_low | static_cast<uint32_t>(pair_high) << 16);
            }
          }
          std::memcpy(want.data() + n + 4 * blocks + 4 * 8 * extra_words * s, words, 4 * 8 * extra_words);
        }
        std::vector<uint8_t> got(detail::packed_activation_bytes(n, extra_words), 0xcd);
        packed->quantize_packed(x.data(), got.data(), n);
        got.resize(want.size());
        EXPECT_EQ(got, want) << tensor::dtype_name(weight) << " " << n << " values, seed " << seed;
      }
    }
  }
}

TEST(MatmulQuantize, EveryLevelPairsTheSameActivationType) {
  for (const DType type : {DType::F32, DType::F16, DType::BF16, DType::Q4_0, DType::Q4_1,
                           DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::Q2_K, DType::Q3_K,
                           DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
    const detail::TypeKernels* scalar = detail::scalar_kernels(type);
    ASSERT_NE(scalar, nullptr);
    for (const detail::TypeKernels* simd : {detail::avx2_kernels(type), detail::avx512_kernels(type)}) {
      if (simd != nullptr) {
        EXPECT_EQ(simd->act_type, scalar->act_type);
      }
    }
  }
}

}  // namespace
}  // namespace lumen::backend::cpu
