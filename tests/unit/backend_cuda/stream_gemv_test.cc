// gemv_stream.cu's kernels against gemv.cu's, their reference: every GEMV weight type, rows of
// one tile, of several with a partial last one, and short rows (some of which are not whole
// 16-byte vectors and must fall back to gemv.cu, bit for bit), 1 to 11 tokens (two passes).
//
// Both form each block's term identically; only the order of adding them differs, so outputs
// agree within 2e-5 B, B = sum_c |w[r, c]| |x[t, c]| (w dequantized): a wrong code, scale or
// index moves an output by a sizable part of B.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "cuda_test_util.h"
#include "tensor/quantize.h"

namespace lumen::backend::testing {
namespace {

using tensor::DType;

bool is_kquant(DType t) {
  return t == DType::Q2_K || t == DType::Q3_K || t == DType::Q4_K || t == DType::Q5_K || t == DType::Q6_K ||
         t == DType::IQ4_XS;
}

// Runs w x on the GEMV kernels only, streaming or not.
std::vector<float> gemv(const TensorView& w, const DeviceTensor& x, GemvKernels kernels) {
  const CudaBackendOptions saved = gpu()->options();
  CudaBackendOptions options = saved;
  options.max_gemv_tokens = 1 << 20;
  options.gemv = kernels;
  gpu()->set_options(options);
  DeviceTensor y = device_matrix(w.dims[1], x.view.dims[1], w.dims[1] + 1);
  gpu()->matmul(w, x.view, y.view);
  gpu()->set_options(saved);
  return download_f32(y.view);
}

using Case = std::tuple<DType, int>;  // type, column count index (0: short, 1: one tile, 2: 1.25 tiles)

class CudaStreamGemv : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override { LUMEN_REQUIRE_CUDA(); }
};

TEST_P(CudaStreamGemv, MatchesTheWarpKernels) {
  const auto [type, shape] = GetParam();
  const int64_t short_cols = is_kquant(type)                                                     ? 768
                             : (type == DType::F32 || type == DType::F16 || type == DType::BF16) ? 100
                                                                                                 : 288;
  const int64_t cols = shape == 0 ? short_cols : (shape == 1 ? 8192 : 10240);
  const int64_t rows = 67;
  std::mt19937 rng(54 + static_cast<uint32_t>(shape));
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  const size_t row_bytes = *tensor::row_bytes(type, cols);
  std::vector<uint8_t> weights(row_bytes * rows);
  std::vector<float> dequantized(static_cast<size_t>(rows * cols)), row(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (float& v : row) v = 0.02f * static_cast<float>(1 + r % 5) * uniform(rng);
    tensor::quantize_row(type, row.data(), weights.data() + r * row_bytes, cols);
    tensor::dequantize_row(type, weights.data() + r * row_bytes, dequantized.data() + r * cols, cols);
  }
  const TensorView w = gpu()->upload_weights(type, {cols, rows, 1, 1}, weights.data());
  for (int64_t n_tokens : {1, 3, 8, 11}) {
    const int64_t xs = cols + 5;
    std::vector<float> x(static_cast<size_t>(xs * n_tokens));
    for (float& v : x) v = uniform(rng);
    const DeviceTensor dx = to_device({DType::F32, {cols, n_tokens, 1, 1}, static_cast<size_t>(xs) * 4, x.data()});
    const std::vector<float> want = gemv(w, dx, GemvKernels::Warp), got = gemv(w, dx, GemvKernels::Stream);
    const bool streams = row_bytes % 16 == 0;
    int bad = 0;
    for (int64_t t = 0; t < n_tokens && bad < 5; ++t) {
      for (int64_t r = 0; r < rows && bad < 5; ++r) {
        double bound = 0.0;
        for (int64_t c = 0; c < cols; ++c) bound += std::fabs(dequantized[r * cols + c] * x[t * xs + c]);
        const float g = got[t * rows + r], v = want[t * rows + r];
        const bool ok = streams ? std::fabs(static_cast<double>(g) - v) <= 2e-5 * bound : g == v;
        if (!ok) {
          ADD_FAILURE() << tensor::dtype_name(type) << " cols " << cols << " tokens " << n_tokens << " token " << t
                        << " row " << r << ": streaming " << g << ", warp " << v << ", bound " << bound
                        << (streams ? "" : " (should have fallen back to the warp kernels)");
          ++bad;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, CudaStreamGemv,
                         ::testing::Combine(::testing::Values(DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1,
                                                              DType::Q8_0, DType::Q2_K, DType::Q3_K, DType::Q4_K,
                                                              DType::Q5_K, DType::Q6_K, DType::IQ4_NL, DType::IQ4_XS,
                                                              DType::MXFP4, DType::F32, DType::F16, DType::BF16),
                                            ::testing::Values(0, 1, 2)));

// gemv_tiled.cu's kernels add gemv.cu's terms in gemv.cu's order: equal bit for bit, for every
// quantized type, rows of one tile, of several with a partial last one, and short rows (some not
// whole 16-byte vectors: those fall back to gemv.cu), 1 to 64 tokens, a row count that leaves the
// last block of 4 rows partial.
class CudaTiledGemv : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override { LUMEN_REQUIRE_CUDA(); }
};

TEST_P(CudaTiledGemv, MatchesTheWarpKernelsBitForBit) {
  const auto [type, shape] = GetParam();
  const int64_t cols = shape == 0 ? (is_kquant(type) ? 768 : 288) : (shape == 1 ? 4096 : 10240);
  const int64_t rows = 67;
  std::mt19937 rng(77 + static_cast<uint32_t>(shape));
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  const size_t row_bytes = *tensor::row_bytes(type, cols);
  std::vector<uint8_t> weights(row_bytes * rows);
  std::vector<float> row(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (float& v : row) v = 0.02f * static_cast<float>(1 + r % 5) * uniform(rng);
    tensor::quantize_row(type, row.data(), weights.data() + r * row_bytes, cols);
  }
  const TensorView w = gpu()->upload_weights(type, {cols, rows, 1, 1}, weights.data());
  // 17 and 64 tokens: one tiled launch of groups of 8 (the warp kernels: a launch per 8).
  for (int64_t n_tokens : {1, 3, 8, 11, 17, 64}) {
    const int64_t xs = cols + 5;
    std::vector<float> x(static_cast<size_t>(xs * n_tokens));
    for (float& v : x) v = uniform(rng);
    const DeviceTensor dx = to_device({DType::F32, {cols, n_tokens, 1, 1}, static_cast<size_t>(xs) * 4, x.data()});
    const std::vector<float> want = gemv(w, dx, GemvKernels::Warp), got = gemv(w, dx, GemvKernels::Tiled);
    ASSERT_EQ(want.size(), got.size());
    int bad = 0;
    for (size_t i = 0; i < want.size() && bad < 5; ++i) {
      if (got[i] != want[i]) {
        ADD_FAILURE() << tensor::dtype_name(type) << " cols " << cols << " tokens " << n_tokens << " output " << i
                      << ": tiled " << got[i] << ", warp " << want[i];
        ++bad;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, CudaTiledGemv,
                         ::testing::Combine(::testing::Values(DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1,
                                                              DType::Q8_0, DType::Q2_K, DType::Q3_K, DType::Q4_K,
                                                              DType::Q5_K, DType::Q6_K, DType::IQ4_NL, DType::IQ4_XS,
                                                              DType::MXFP4),
                                            ::testing::Values(0, 1, 2)));

// A token's result does not depend on the batch it comes in (what the serving core's exactness
// tests assume of the GEMV path), with the streaming kernels too.
TEST(CudaStreamGemvInvariance, ResultOfATokenDoesNotDependOnItsBatch) {
  LUMEN_REQUIRE_CUDA();
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  const int64_t rows = 129, cols = 2048, n = 21;
  for (DType type : {DType::Q4_0, DType::Q5_1, DType::Q8_0, DType::Q3_K, DType::Q4_K, DType::Q6_K, DType::BF16}) {
    const size_t row_bytes = *tensor::row_bytes(type, cols);
    std::vector<uint8_t> weights(row_bytes * rows);
    std::vector<float> values(static_cast<size_t>(cols));
    for (int64_t r = 0; r < rows; ++r) {
      for (float& v : values) v = 0.05f * uniform(rng);
      tensor::quantize_row(type, values.data(), weights.data() + r * row_bytes, cols);
    }
    const TensorView w = gpu()->upload_weights(type, {cols, rows, 1, 1}, weights.data());
    std::vector<float> x(static_cast<size_t>(cols * n));
    for (float& v : x) v = uniform(rng);
    const DeviceTensor all = to_device({DType::F32, {cols, n, 1, 1}, static_cast<size_t>(cols) * 4, x.data()});
    const std::vector<float> batch = gemv(w, all, GemvKernels::Stream);
    for (int64_t t : {0, 7, 8, 20}) {
      const DeviceTensor one =
          to_device({DType::F32, {cols, 1, 1, 1}, static_cast<size_t>(cols) * 4, x.data() + t * cols});
      const std::vector<float> alone = gemv(w, one, GemvKernels::Stream);
      const std::vector<float> in_batch(batch.begin() + t * rows, batch.begin() + (t + 1) * rows);
      EXPECT_EQ(alone, in_batch) << tensor::dtype_name(type) << " token " << t;
    }
  }
}

}  // namespace
}  // namespace lumen::backend::testing
