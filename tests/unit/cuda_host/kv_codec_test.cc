// src/backend/cuda/kv_codec.h on the host against the CPU backend: every cache type's stored
// bytes equal cpu::store_kv_row's (ggml's reference quantizers for q8_0 / q4_0, nearest-even
// for bf16, Lumen's saturating FP8), and every element widens to tensor::dequantize_row's value,
// bit for bit. The inputs include what trips a rounding rule: zero blocks, exact halves of the
// quantization step (round-half-away vs truncate + 0.5), a block's largest element negative,
// values past FP8's range, subnormals.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/kv_store.h"
#include "backend/cuda/kv_codec.h"
#include "tensor/dtype.h"
#include "tensor/fp8.h"
#include "tensor/quantize.h"

namespace lumen::backend::cuda::hd {
namespace {

using tensor::DType;

std::vector<float> awkward_values(uint32_t seed, int64_t n) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-3.0f, 3.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (float& v : x) v = uniform(rng);
  // Block 1 all zeros; block 2 multiples of its step (127 * k / 127 and halves between codes);
  // block 3's largest magnitude negative and repeated; block 4 tiny and huge values.
  for (int j = 0; j < 32; ++j) {
    x[32 + j] = 0.0f;
    x[64 + j] = (static_cast<float>(j) - 15.5f) * 0.25f;
    x[96 + j] = j % 7 == 0 ? -2.5f : 0.1f * static_cast<float>(j % 5);
    x[128 + j] = j % 2 == 0 ? 1e-7f * static_cast<float>(j) : 700.0f * static_cast<float>(j - 16);
  }
  x[160] = std::ldexp(1.0f, -9) * 1.5f;  // half-way between two FP8 subnormals
  x[161] = 448.0f;
  x[162] = 464.0f;
  return x;
}

template <DType T>
std::vector<uint8_t> hd_row(const std::vector<float>& x) {
  std::vector<uint8_t> row(*tensor::row_bytes(T, static_cast<int64_t>(x.size())));
  store_kv_values<T>(x.data(), static_cast<int64_t>(x.size()), row.data());
  return row;
}

template <DType T>
void check_type() {
  for (uint32_t seed : {1u, 2u, 3u}) {
    const std::vector<float> x = awkward_values(seed, 256);
    const auto n = static_cast<int64_t>(x.size());
    std::vector<uint8_t> want(*tensor::row_bytes(T, n));
    cpu::store_kv_row(x.data(), n, T, want.data());
    const std::vector<uint8_t> got = hd_row<T>(x);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i], want[i]) << tensor::dtype_name(T) << " seed " << seed << ": byte " << i << " of the row";
    }
    std::vector<float> widened(static_cast<size_t>(n));
    tensor::dequantize_row(T, want.data(), widened.data(), n);
    for (int64_t e = 0; e < n; ++e) {
      const float v = kv_element<T>(want.data(), e);
      uint32_t a, b;
      std::memcpy(&a, &v, 4);
      std::memcpy(&b, &widened[static_cast<size_t>(e)], 4);
      ASSERT_EQ(a, b) << tensor::dtype_name(T) << " element " << e << ": " << v << " vs " << widened[e];
    }
  }
}

TEST(KvCodec, F32RowsAreCopies) { check_type<DType::F32>(); }
TEST(KvCodec, F16MatchesTheCpuStore) { check_type<DType::F16>(); }
TEST(KvCodec, Bf16MatchesTheCpuStore) { check_type<DType::BF16>(); }
TEST(KvCodec, Q8_0MatchesGgmlsReferenceQuantizer) { check_type<DType::Q8_0>(); }
TEST(KvCodec, Q4_0MatchesGgmlsReferenceQuantizer) { check_type<DType::Q4_0>(); }
TEST(KvCodec, Fp8MatchesTheCpuStore) { check_type<DType::FP8_E4M3>(); }

// Every FP8 code widens as tensor/fp8.h widens it, and every float in a sweep of magnitudes
// (normals, subnormals, past the range) narrows to the same code.
TEST(KvCodec, Fp8ConversionsAgreeEverywhere) {
  for (int code = 0; code < 256; ++code) {
    const float want = tensor::fp8_e4m3_to_float(static_cast<uint8_t>(code));
    const float got = fp8_to_float(static_cast<uint8_t>(code));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << code;
    } else {
      EXPECT_EQ(got, want) << code;
    }
  }
  for (float v = 1e-4f; v < 2000.0f; v *= 1.0013f) {
    for (float s : {v, -v}) ASSERT_EQ(float_to_fp8(s), tensor::float_to_fp8_e4m3(s)) << s;
  }
}

}  // namespace
}  // namespace lumen::backend::cuda::hd
