// gemv_pipelined.cu's kernels (GemvKernels::Pipelined) against gemv.cu's, their reference: the
// same tiles and arithmetic as the tiled kernels, so equal bit for bit, for every quantized type;
// rows of one tile and of several, 1 to 8 tokens, and more rows than the device holds warps (each
// warp then walks several rows, its next tile in flight). Each case checks that the pipelined
// kernels really ran (CudaBackend::pipelined_gemv_launches), or the equality would prove nothing;
// more than 8 tokens and rows that are not whole 16-byte vectors go to the other kernels, and still
// give the same bits. Float weights on the same kernel add their products in another grouping
// than the warp kernels: within 2e-5 B of them (B = sum_c |w[r, c] x[t, c]|), and a token's result
// the same in any batch.
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

// w x on the GEMV kernels `kernels`, and how many launches the pipelined kernels took.
std::vector<float> gemv(const TensorView& w, const DeviceTensor& x, GemvKernels kernels, uint64_t* pipelined) {
  ScopedCudaOptions option([&](CudaBackendOptions& o) {
    o.max_gemv_tokens = 1 << 20;
    o.gemv = kernels;
  });
  DeviceTensor y = device_matrix(w.dims[1], x.view.dims[1], w.dims[1] + 1);
  const uint64_t before = gpu()->pipelined_gemv_launches();
  gpu()->matmul(w, x.view, y.view);
  if (pipelined != nullptr) *pipelined = gpu()->pipelined_gemv_launches() - before;
  return download_f32(y.view);
}

void expect_same_bits(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < want.size() && bad < 5; ++i) {
    if (got[i] != want[i]) {
      ADD_FAILURE() << what << ", output " << i << ": pipelined " << got[i] << ", warp " << want[i];
      ++bad;
    }
  }
}

// Compares the two ways for each token count; `pipelined_takes` says whether the pipelined
// kernels must have run for up to 8 tokens.
void check(DType type, int64_t cols, int64_t rows, uint32_t seed, bool pipelined_takes,
           std::initializer_list<int64_t> token_counts) {
  const TensorView w = upload_random_weights(type, cols, rows, seed);
  for (const int64_t n_tokens : token_counts) {
    const DeviceTensor x = random_device_matrix(cols, n_tokens, cols + 5, seed + 1);
    uint64_t launches = 0;
    const std::vector<float> want = gemv(w, x, GemvKernels::Warp, nullptr);
    const std::vector<float> got = gemv(w, x, GemvKernels::Pipelined, &launches);
    const std::string what = std::string(tensor::dtype_name(type)) + " " + std::to_string(rows) + " x " +
                             std::to_string(cols) + ", " + std::to_string(n_tokens) + " tokens";
    expect_same_bits(got, want, what);
    EXPECT_EQ(launches, pipelined_takes && n_tokens <= 8 ? 1u : 0u) << what;
  }
}

using Case = std::tuple<DType, int>;  // type, column count index (0: short, 1: one tile, 2: 2.5 tiles)

class CudaPipelinedGemv : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override { LUMEN_REQUIRE_CUDA(); }
};

TEST_P(CudaPipelinedGemv, MatchesTheWarpKernelsBitForBit) {
  const auto [type, shape] = GetParam();
  const int64_t cols = shape == 0 ? (is_kquant(type) ? 768 : 288) : (shape == 1 ? 4096 : 10240);
  const bool whole_vectors = *tensor::row_bytes(type, cols) % 16 == 0;
  check(type, cols, 67, 91 + static_cast<uint32_t>(shape), whole_vectors, {1, 3, 8, 11});
}

INSTANTIATE_TEST_SUITE_P(Types, CudaPipelinedGemv,
                         ::testing::Combine(::testing::Values(DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1,
                                                              DType::Q8_0, DType::Q2_K, DType::Q3_K, DType::Q4_K,
                                                              DType::Q5_K, DType::Q6_K, DType::IQ4_NL, DType::IQ4_XS,
                                                              DType::MXFP4),
                                            ::testing::Values(0, 1, 2)));

// More rows than an H200 holds warps of these kernels (about 132 x 28): every warp walks two or
// three rows, of one tile or two, so a wrong stage, row or matrix shows.
TEST(CudaPipelinedGemvLarge, SeveralRowsAWarpMatchTheWarpKernels) {
  LUMEN_REQUIRE_CUDA();
  check(DType::Q4_0, 8192, 9001, 5, true, {1, 8});
  check(DType::Q6_K, 8192, 9001, 6, true, {1});
  check(DType::Q4_K, 4096, 9001, 7, true, {1, 5});
  check(DType::Q8_0, 4096, 9001, 8, true, {1});
}

// Q/K/V and gate/up in one pipelined launch (CudaBackendOptions::grouped_gemv): every output the
// bits of its own matmul on the warp kernels, matrices of different row counts in one launch.
TEST(CudaPipelinedGemvGroup, EachOutputEqualsTheWarpKernels) {
  LUMEN_REQUIRE_CUDA();
  struct Layer {
    DType type;
    std::vector<int64_t> rows;
    int64_t cols;
  };
  for (const Layer& layer : {Layer{DType::Q4_0, {2048, 512, 512}, 2048}, Layer{DType::Q4_K, {5000, 5000}, 1024},
                             Layer{DType::Q5_1, {33, 1, 64, 5}, 8192}}) {
    std::vector<TensorView> weights;
    for (size_t i = 0; i < layer.rows.size(); ++i)
      weights.push_back(upload_random_weights(layer.type, layer.cols, layer.rows[i], static_cast<uint32_t>(60 + i)));
    for (const int64_t tokens : {int64_t{1}, int64_t{6}}) {
      const DeviceTensor x = random_device_matrix(layer.cols, tokens, layer.cols + 8, 61);
      std::vector<DeviceTensor> ys;
      std::vector<Backend::MatmulOutput> outputs;
      for (size_t i = 0; i < weights.size(); ++i) ys.push_back(device_matrix(layer.rows[i], tokens, layer.rows[i] + 3));
      for (size_t i = 0; i < weights.size(); ++i) outputs.push_back({&weights[i], &ys[i].view});
      const uint64_t before = gpu()->pipelined_gemv_launches();
      {
        ScopedCudaOptions option([&](CudaBackendOptions& o) {
          o.grouped_gemv = true;
          o.gemv = GemvKernels::Pipelined;
        });
        gpu()->matmul_same_input(x.view, outputs);
      }
      const std::string what = std::string(tensor::dtype_name(layer.type)) + ", " + std::to_string(tokens) + " tokens";
      EXPECT_EQ(gpu()->pipelined_gemv_launches() - before, 1u) << what << ": one grouped launch";
      for (size_t i = 0; i < weights.size(); ++i) {
        expect_same_bits(download_f32(ys[i].view), gemv(weights[i], x, GemvKernels::Warp, nullptr),
                         what + ", output " + std::to_string(i));
      }
    }
  }
}

// Float rows: 67 rows or more than the device holds warps; a row of part of one tile (F32 100
// values: 25 vectors), of one tile and of several with a partial last one (5 000 values); F16 rows
// of 100 values are not whole vectors and fall back. 11 tokens run as 8 + 3 (two launches).
TEST(CudaPipelinedGemvFloat, WithinRoundingOfTheWarpKernelsAndTheSameInAnyBatch) {
  LUMEN_REQUIRE_CUDA();
  struct Shape {
    int64_t cols, rows;
  };
  for (const DType type : {DType::F32, DType::F16, DType::BF16}) {
    for (const Shape shape : {Shape{100, 67}, Shape{2048, 67}, Shape{5000, 67}, Shape{2048, 9001}}) {
      const int64_t cols = shape.cols, rows = shape.rows;
      std::mt19937 rng(17 + static_cast<uint32_t>(cols + rows));
      std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
      const size_t row_bytes = *tensor::row_bytes(type, cols);
      std::vector<uint8_t> weights(row_bytes * static_cast<size_t>(rows));
      std::vector<float> widened(static_cast<size_t>(rows * cols)), row(static_cast<size_t>(cols));
      for (int64_t r = 0; r < rows; ++r) {
        for (float& v : row) v = 0.02f * static_cast<float>(1 + r % 5) * uniform(rng);
        tensor::quantize_row(type, row.data(), weights.data() + r * row_bytes, cols);
        tensor::dequantize_row(type, weights.data() + r * row_bytes, widened.data() + r * cols, cols);
      }
      const TensorView w = gpu()->upload_weights(type, {cols, rows, 1, 1}, weights.data());
      const bool takes = row_bytes % 16 == 0;
      const int64_t xs = cols + 5;
      std::vector<float> x(static_cast<size_t>(xs * 11));
      for (float& v : x) v = uniform(rng);
      const DeviceTensor all = to_device({DType::F32, {cols, 11, 1, 1}, static_cast<size_t>(xs) * 4, x.data()});
      uint64_t launches = 0;
      const std::vector<float> want = gemv(w, all, GemvKernels::Warp, nullptr);
      const std::vector<float> got = gemv(w, all, GemvKernels::Pipelined, &launches);
      const std::string what =
          std::string(tensor::dtype_name(type)) + " " + std::to_string(rows) + " x " + std::to_string(cols);
      EXPECT_EQ(launches, takes ? 2u : 0u) << what;
      int bad = 0;
      for (int64_t t = 0; t < 11 && bad < 5; ++t) {
        for (int64_t r = 0; r < rows && bad < 5; ++r) {
          double bound = 0.0;
          for (int64_t c = 0; c < cols; ++c) bound += std::fabs(widened[r * cols + c] * x[t * xs + c]);
          const float g = got[t * rows + r], v = want[t * rows + r];
          const bool ok = takes ? std::fabs(static_cast<double>(g) - v) <= 2e-5 * bound : g == v;
          if (!ok) {
            ADD_FAILURE() << what << " token " << t << " row " << r << ": pipelined " << g << ", warp " << v
                          << ", bound " << bound;
            ++bad;
          }
        }
      }
      // Tokens 0, 7 and 10 alone: the bits they had in the batch.
      for (const int64_t t : {0, 7, 10}) {
        const DeviceTensor one =
            to_device({DType::F32, {cols, 1, 1, 1}, static_cast<size_t>(xs) * 4, x.data() + t * xs});
        const std::vector<float> alone = gemv(w, one, GemvKernels::Pipelined, nullptr);
        const std::vector<float> in_batch(got.begin() + t * rows, got.begin() + (t + 1) * rows);
        EXPECT_EQ(alone, in_batch) << what << " token " << t;
      }
    }
  }
}

}  // namespace
}  // namespace lumen::backend::testing
