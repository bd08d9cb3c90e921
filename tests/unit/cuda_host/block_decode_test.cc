// The CUDA kernels' block arithmetic (src/backend/cuda/block_decode.h) on the host, against the
// CPU: dequantization bit-exact with tensor::dequantize_row, and each block's dot-product term
// bit-exact with the CPU backend's scalar kernel over that one block, for every weight type the
// CPU reads, on random blocks (random bytes with finite scales, and quantized random floats).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/activation_quant.h"
#include "backend/cpu/matmul_kernels.h"
#include "backend/cuda/block_decode.h"
#include "tensor/block_formats.h"
#include "tensor/fp16.h"
#include "tensor/quantize.h"

namespace lumen::backend::cuda::hd {
namespace {

using tensor::DType;

template <DType... Fs, typename Fn>
void for_types(Fn&& fn) {
  (fn.template operator()<Fs>(), ...);
}

int64_t block_elements(DType t) { return tensor::dtype_info(t).block_elements; }

// Byte offsets of the f16 scales of one block (random bytes there could be inf or NaN, which
// make "bit-exact" meaningless).
std::vector<int> f16_fields(DType t) {
  switch (t) {
    case DType::Q4_0:
    case DType::Q5_0:
    case DType::Q8_0:
    case DType::IQ4_NL:
    case DType::IQ4_XS: return {0};
    case DType::Q4_1:
    case DType::Q5_1:
    case DType::Q8_1:
    case DType::Q4_K:
    case DType::Q5_K: return {0, 2};
    case DType::Q2_K: return {80, 82};
    case DType::Q3_K: return {108};
    case DType::Q6_K: return {208};
    default: return {};
  }
}

// A row of `blocks` blocks: random bytes with random finite scales, or random floats quantized.
std::vector<uint8_t> random_row(DType t, int64_t blocks, bool raw_bytes, std::mt19937& rng) {
  const size_t bytes = tensor::dtype_info(t).block_bytes;
  std::vector<uint8_t> row(bytes * static_cast<size_t>(blocks));
  std::uniform_real_distribution<float> scale(-2.0f, 2.0f);
  if (raw_bytes) {
    for (auto& b : row) b = static_cast<uint8_t>(rng());
    for (int64_t b = 0; b < blocks; ++b) {
      uint8_t* block = row.data() + static_cast<size_t>(b) * bytes;
      for (int at : f16_fields(t)) {
        const uint16_t h = tensor::float_to_fp16(scale(rng));
        std::memcpy(block + at, &h, 2);
      }
      if (t == DType::Q8_K) {
        const float d = scale(rng);
        std::memcpy(block, &d, 4);
      }
      // MXFP4's E8M0 byte: 2^-128 (subnormal) .. 2^31, so a block's dot stays finite.
      if (t == DType::MXFP4) block[0] = static_cast<uint8_t>(rng() % 160);
    }
  } else {
    const int64_t n = blocks * block_elements(t);
    std::vector<float> x(static_cast<size_t>(n));
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const float magnitude = std::exp2(static_cast<float>(static_cast<int>(rng() % 16)) - 8.0f);
    for (auto& v : x) v = normal(rng) * magnitude;
    tensor::quantize_row(t, x.data(), row.data(), n);
  }
  return row;
}

template <DType F>
void check_dequantize(const std::vector<uint8_t>& row, int64_t cols) {
  std::vector<float> want(static_cast<size_t>(cols)), got(static_cast<size_t>(cols));
  tensor::dequantize_row(F, row.data(), want.data(), cols);
  for (int64_t u = 0; u < cols / 32; ++u) dequantize_unit<F>(row.data(), u, got.data() + 32 * u);
  for (int64_t c = 0; c < cols; ++c) {
    uint32_t want_bits, got_bits;
    std::memcpy(&want_bits, &want[static_cast<size_t>(c)], 4);
    std::memcpy(&got_bits, &got[static_cast<size_t>(c)], 4);
    ASSERT_EQ(got_bits, want_bits) << tensor::dtype_name(F) << " element " << c << ": " << got[static_cast<size_t>(c)]
                                   << " vs " << want[static_cast<size_t>(c)];
  }
}

TEST(CudaBlockDecode, DequantizeIsBitExactWithTheReference) {
  std::mt19937 rng(54);
  for_types<DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::Q8_1, DType::Q2_K, DType::Q3_K,
            DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::Q8_K, DType::IQ4_NL, DType::IQ4_XS, DType::MXFP4>(
      [&]<DType F>() {
        for (int trial = 0; trial < 200; ++trial) {
          const int64_t blocks = 1 + static_cast<int64_t>(rng() % 4);
          const auto row = random_row(F, blocks, trial % 2 == 0, rng);
          check_dequantize<F>(row, blocks * block_elements(F));
          if (::testing::Test::HasFatalFailure()) return;
        }
      });
}

// An activation row quantized by the CPU, in the layout the CUDA kernels read (codes apart from
// the scales; backend/cuda/kernels.h's Q8Activations).
struct Activations {
  std::vector<uint8_t> cpu;  // the CPU's blocks
  std::vector<int8_t> codes;
  std::vector<float> d, s;
  std::vector<int> bsums;
};

Activations quantize_activations(DType act, int64_t cols, std::mt19937& rng) {
  std::vector<float> x(static_cast<size_t>(cols));
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (auto& v : x) v = normal(rng);
  Activations a;
  a.cpu.resize(*tensor::row_bytes(act, cols));
  cpu::quantize_activation_row(act, x.data(), a.cpu.data(), cols);
  a.codes.resize(static_cast<size_t>(cols));
  if (act == DType::Q8_K) {
    for (int64_t b = 0; b < cols / 256; ++b) {
      tensor::BlockQ8_K block;
      std::memcpy(&block, a.cpu.data() + b * int64_t{sizeof block}, sizeof block);
      std::memcpy(a.codes.data() + 256 * b, block.qs, 256);
      a.d.push_back(block.d);
      for (int16_t sum : block.bsums) a.bsums.push_back(sum);
    }
  } else {
    for (int64_t b = 0; b < cols / 32; ++b) {
      if (act == DType::Q8_1) {
        tensor::BlockQ8_1 block;
        std::memcpy(&block, a.cpu.data() + static_cast<size_t>(b) * sizeof block, sizeof block);
        std::memcpy(a.codes.data() + 32 * b, block.qs, 32);
        a.d.push_back(tensor::fp16_to_float(block.d));
        a.s.push_back(tensor::fp16_to_float(block.s));
      } else {
        tensor::BlockQ8_0 block;
        std::memcpy(&block, a.cpu.data() + static_cast<size_t>(b) * sizeof block, sizeof block);
        std::memcpy(a.codes.data() + 32 * b, block.qs, 32);
        a.d.push_back(tensor::fp16_to_float(block.d));
        a.s.push_back(0.0f);
      }
    }
  }
  return a;
}

// The CPU scalar kernel's dot product of one weight block with one activation block.
float cpu_block_dot(const cpu::detail::TypeKernels& k, const uint8_t* w, const uint8_t* x, int64_t cols) {
  const uint8_t* w_rows[cpu::detail::kTileRows];
  for (auto& r : w_rows) r = w;
  const uint8_t* x_rows[1] = {x};
  float out[cpu::detail::kTileRows];
  k.tile[0](w_rows, x_rows, cols, out);
  return out[0];
}

template <DType F>
void check_block_dots(std::mt19937& rng, bool raw_bytes) {
  const cpu::detail::TypeKernels* k = cpu::detail::scalar_kernels(F);
  ASSERT_NE(k, nullptr);
  const int64_t per_block = block_elements(F);
  const int64_t blocks = 3;
  const auto w = random_row(F, blocks, raw_bytes, rng);
  const Activations a = quantize_activations(k->act_type, blocks * per_block, rng);
  const size_t w_bytes = tensor::dtype_info(F).block_bytes;
  const size_t x_bytes = tensor::dtype_info(k->act_type).block_bytes;
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* wb = w.data() + static_cast<size_t>(b) * w_bytes;
    const float want = cpu_block_dot(*k, wb, a.cpu.data() + static_cast<size_t>(b) * x_bytes, per_block);
    float got = 0.0f;
    if constexpr (kIsKQuant<F>) {
      int scaled = 0, mins = 0;
      KUnit u;
      for (int j = 0; j < 8; ++j) {
        decode_kunit<F>(wb, j, u);
        int x[8];
        std::memcpy(x, a.codes.data() + 256 * b + 32 * j, 32);
        int unit_scaled, unit_mins;
        kunit_dot(u, x, a.bsums.data() + 16 * b + 2 * j, unit_scaled, unit_mins);
        scaled += unit_scaled;
        mins += unit_mins;
      }
      got = ksuper_value(u.d, u.dmin, a.d[static_cast<size_t>(b)], scaled, mins);
    } else {
      LegacyBlock lb;
      decode_legacy<F>(wb, lb);
      int x[8];
      std::memcpy(x, a.codes.data() + 32 * b, 32);
      got = legacy_dot<F>(lb, x, a.d[static_cast<size_t>(b)], a.s[static_cast<size_t>(b)]);
    }
    ASSERT_EQ(got, want) << tensor::dtype_name(F) << " block " << b << (raw_bytes ? " (random bytes)" : "");
  }
}

TEST(CudaBlockDecode, BlockDotsAreBitExactWithTheCpu) {
  std::mt19937 rng(48);
  for_types<DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::Q2_K, DType::Q3_K, DType::Q4_K,
            DType::Q5_K, DType::Q6_K, DType::IQ4_NL, DType::IQ4_XS, DType::MXFP4>([&]<DType F>() {
    for (int trial = 0; trial < 100; ++trial) {
      check_block_dots<F>(rng, trial % 2 == 0);
      if (::testing::Test::HasFatalFailure()) return;
    }
  });
}

// Every E8M0 byte, the subnormal scales (e = 0, 1) and the largest included, as the CPU's.
TEST(CudaBlockDecode, Mxfp4ScalesAreTheCpusBitForBit) {
  for (int e = 0; e < 256; ++e) {
    const float got = e8m0_half_scale(static_cast<uint8_t>(e)), want = tensor::mxfp4_scale(static_cast<uint8_t>(e));
    ASSERT_EQ(std::memcmp(&got, &want, 4), 0) << "e = " << e << ": " << got << " vs " << want;
  }
}

TEST(CudaBlockDecode, FloatElementsWidenAsTheCpu) {
  std::mt19937 rng(3);
  std::vector<uint8_t> row(64);
  for (auto& b : row) b = static_cast<uint8_t>(rng());
  for (int c = 0; c < 16; ++c) {
    float f32;
    uint16_t h;
    std::memcpy(&f32, row.data() + 4 * c, 4);
    const float got32 = float_element<DType::F32>(row.data(), c);
    EXPECT_EQ(std::memcmp(&got32, &f32, 4), 0);
    std::memcpy(&h, row.data() + 2 * c, 2);
    const float f16 = float_element<DType::F16>(row.data(), c), want16 = tensor::fp16_to_float(h);
    const float bf16 = float_element<DType::BF16>(row.data(), c), want_bf16 = tensor::bf16_to_float(h);
    EXPECT_EQ(std::memcmp(&f16, &want16, 4), 0);
    EXPECT_EQ(std::memcmp(&bf16, &want_bf16, 4), 0);
  }
}

}  // namespace
}  // namespace lumen::backend::cuda::hd
