// The CUDA matmul against the CPU backend's for every weight type the CUDA backend has kernels
// for, on odd shapes, strided activations and outputs, and token counts on both paths (the
// GEMV for up to 8 tokens, 8 per pass; dequantize + cuBLAS above); and the int8 GEMM.
//
// Tolerances, per output, in units of B = sum_c |w[r, c]| |x[t, c]| (w dequantized):
//  - GEMV path vs CPU: 2e-5 B. Both quantize the activations identically and form each block's
//    value with the same f32 operations; only the order of the block sums differs.
//  - cuBLAS path vs an exact (double) product of the dequantized weights and the f32
//    activations: 2e-3 B (f16 rounding of both operands, 2^-11 each); vs the CPU, whose 8-bit
//    activations carry up to 1/254 of each block's largest value: 1e-2 B.
// A wrong code, scale or index moves an output by a sizable part of B, so neither can pass.
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

struct Problem {
  DType type;
  int64_t rows, cols, n_tokens;
  std::vector<uint8_t> weights;
  std::vector<float> dequantized;  // rows x cols
  std::vector<float> x;            // n_tokens rows, stride cols + 5
  int64_t x_stride() const { return cols + 5; }
  int64_t y_stride() const { return rows + 3; }
  TensorView host_weights() {
    return {type, {cols, rows, 1, 1}, weights.size() / static_cast<size_t>(rows), weights.data()};
  }
  TensorView host_x() {
    return {DType::F32, {cols, n_tokens, 1, 1}, static_cast<size_t>(x_stride()) * 4, x.data()};
  }
};

Problem make_problem(DType type, int64_t rows, int64_t cols, int64_t n_tokens, uint32_t seed) {
  Problem p{type, rows, cols, n_tokens, {}, {}, {}};
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  const size_t row_bytes = *tensor::row_bytes(type, cols);
  p.weights.resize(row_bytes * static_cast<size_t>(rows));
  p.dequantized.resize(static_cast<size_t>(rows * cols));
  std::vector<float> row(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    const float magnitude = 0.02f * static_cast<float>(1 + r % 5);  // rows of different scales
    for (float& v : row) v = magnitude * uniform(rng);
    uint8_t* dst = p.weights.data() + static_cast<size_t>(r) * row_bytes;
    tensor::quantize_row(type, row.data(), dst, cols);
    tensor::dequantize_row(type, dst, p.dequantized.data() + r * cols, cols);
  }
  p.x.resize(static_cast<size_t>(p.x_stride() * n_tokens));
  for (float& v : p.x) v = uniform(rng);
  return p;
}

using Case = std::tuple<DType, int64_t, int64_t, int64_t>;  // type, rows, cols, tokens

class CudaMatmul : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override { LUMEN_REQUIRE_CUDA(); }
};

TEST_P(CudaMatmul, MatchesCpuWithinTheStatedBound) {
  const auto [type, rows, cols, n_tokens] = GetParam();
  Problem p = make_problem(type, rows, cols, n_tokens, 7);
  const TensorView hw = p.host_weights();
  const TensorView dw = gpu()->upload_weights(type, {cols, rows, 1, 1}, p.weights.data());
  const TensorView hx = p.host_x();
  DeviceTensor dx = to_device(hx);

  std::vector<float> cpu_y(static_cast<size_t>(p.y_stride() * n_tokens));
  TensorView hy{
      DType::F32, {rows, n_tokens, 1, 1}, static_cast<size_t>(p.y_stride()) * 4, cpu_y.data()};
  cpu().matmul(hw, hx, hy);
  DeviceTensor dy = device_matrix(rows, n_tokens, p.y_stride());
  gpu()->matmul(dw, dx.view, dy.view);
  const std::vector<float> gpu_y = download_f32(dy.view);

  // And with y in host memory (how the model receives logits): the same numbers, up to rounding.
  std::vector<float> host_y(static_cast<size_t>(p.y_stride() * n_tokens), -1.0f);
  TensorView hy2{
      DType::F32, {rows, n_tokens, 1, 1}, static_cast<size_t>(p.y_stride()) * 4, host_y.data()};
  gpu()->matmul(dw, dx.view, hy2);

  const bool gemv = n_tokens <= gpu()->options().max_gemv_tokens;
  const std::string what = std::string(tensor::dtype_name(type)) + (gemv ? " gemv" : " gemm");
  int bad = 0;
  for (int64_t t = 0; t < n_tokens && bad < 5; ++t) {
    for (int64_t r = 0; r < rows && bad < 5; ++r) {
      double bound = 0.0, exact = 0.0;
      for (int64_t c = 0; c < cols; ++c) {
        const double w = p.dequantized[static_cast<size_t>(r * cols + c)];
        const double x = p.x[static_cast<size_t>(t * p.x_stride() + c)];
        bound += std::fabs(w * x);
        exact += w * x;
      }
      const double got = gpu_y[static_cast<size_t>(t * rows + r)];
      const double want = cpu_y[static_cast<size_t>(t * p.y_stride() + r)];
      const double tolerance = (gemv ? 2e-5 : 1e-2) * bound;
      if (std::fabs(got - want) > tolerance || (!gemv && std::fabs(got - exact) > 2e-3 * bound)) {
        ADD_FAILURE() << what << " token " << t << " row " << r << ": cuda " << got << ", cpu "
                      << want << ", exact " << exact << ", bound " << bound;
        ++bad;
      }
      // cuBLAS may pick another algorithm for the other output stride: rounding may differ.
      const double from_host = host_y[static_cast<size_t>(t * p.y_stride() + r)];
      if (std::fabs(from_host - got) > 1e-5 * bound) {
        ADD_FAILURE() << what << " token " << t << " row " << r << ": " << from_host
                      << " with y in host memory, " << got << " in device memory";
        ++bad;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Legacy, CudaMatmul,
                         ::testing::Combine(::testing::Values(DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1,
                                                              DType::Q8_0, DType::IQ4_NL, DType::MXFP4),
                                            ::testing::Values(67, 300), ::testing::Values(96, 2048),
                                            ::testing::Values(1, 3, 8, 9, 40)));
INSTANTIATE_TEST_SUITE_P(KQuants, CudaMatmul,
                         ::testing::Combine(::testing::Values(DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K,
                                                              DType::Q6_K, DType::IQ4_XS),
                                            ::testing::Values(67, 300), ::testing::Values(256, 2304),
                                            ::testing::Values(1, 3, 8, 9, 40)));
INSTANTIATE_TEST_SUITE_P(Floats, CudaMatmul,
                         ::testing::Combine(::testing::Values(DType::F32, DType::F16, DType::BF16),
                                            ::testing::Values(67), ::testing::Values(100, 1030),
                                            ::testing::Values(1, 8, 9, 40)));

// The int8 tensor-core GEMM (CudaBackendOptions::int8_gemm) for batches past the GEMV, on whole
// and ragged tiles of tokens (64) and rows (64), legacy and K-quant weights: the GEMV's block
// (or super-block) arithmetic in another order of
// the f32 sums, so the GEMV's bound against the CPU (2e-5 B) holds, and it must have run. x in
// host memory and y in host memory (staged through the same scratch as the GEMV's) as well.
class CudaInt8Gemm : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override { LUMEN_REQUIRE_CUDA(); }
};

TEST_P(CudaInt8Gemm, MatchesCpuWithinTheGemvBound) {
  const auto [type, rows, cols, n_tokens] = GetParam();
  const ScopedCudaOptions int8([](CudaBackendOptions& o) {
    o.int8_gemm = true;
    o.max_gemv_tokens = 8;
  });
  Problem p = make_problem(type, rows, cols, n_tokens, 19);
  const TensorView hw = p.host_weights();
  const TensorView dw = gpu()->upload_weights(type, {cols, rows, 1, 1}, p.weights.data());
  const TensorView hx = p.host_x();
  DeviceTensor dx = to_device(hx);
  std::vector<float> cpu_y(static_cast<size_t>(p.y_stride() * n_tokens));
  TensorView hy{DType::F32, {rows, n_tokens, 1, 1}, static_cast<size_t>(p.y_stride()) * 4, cpu_y.data()};
  cpu().matmul(hw, hx, hy);

  const uint64_t before = gpu()->int8_gemm_launches();
  DeviceTensor dy = device_matrix(rows, n_tokens, p.y_stride());
  gpu()->matmul(dw, dx.view, dy.view);
  const std::vector<float> gpu_y = download_f32(dy.view);
  std::vector<float> host_y(static_cast<size_t>(p.y_stride() * n_tokens), -1.0f);
  TensorView hy2{DType::F32, {rows, n_tokens, 1, 1}, static_cast<size_t>(p.y_stride()) * 4, host_y.data()};
  gpu()->matmul(dw, hx, hy2);  // x and y both in host memory
  ASSERT_EQ(gpu()->int8_gemm_launches(), before + 2) << "the int8 GEMM did not take the matmuls";

  int bad = 0;
  for (int64_t t = 0; t < n_tokens && bad < 5; ++t) {
    for (int64_t r = 0; r < rows && bad < 5; ++r) {
      double bound = 0.0;
      for (int64_t c = 0; c < cols; ++c) {
        bound += std::fabs(static_cast<double>(p.dequantized[static_cast<size_t>(r * cols + c)]) *
                           p.x[static_cast<size_t>(t * p.x_stride() + c)]);
      }
      const double got = gpu_y[static_cast<size_t>(t * rows + r)];
      const double want = cpu_y[static_cast<size_t>(t * p.y_stride() + r)];
      const double from_host = host_y[static_cast<size_t>(t * p.y_stride() + r)];
      if (std::fabs(got - want) > 2e-5 * bound || from_host != got) {
        ADD_FAILURE() << tensor::dtype_name(type) << " token " << t << " row " << r << ": int8 GEMM " << got << " ("
                      << from_host << " through host memory), cpu " << want << ", bound " << bound;
        ++bad;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Legacy, CudaInt8Gemm,
    ::testing::Combine(::testing::Values(DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0),
                       ::testing::Values(67, 300), ::testing::Values(96, 2048), ::testing::Values(9, 64, 65, 200)));
// The K-quants (gemm_int8_kquant.cu): Q8_K activations, 256-value super-blocks.
INSTANTIATE_TEST_SUITE_P(
    KQuant, CudaInt8Gemm,
    ::testing::Combine(::testing::Values(DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K),
                       ::testing::Values(67, 300), ::testing::Values(256, 2048), ::testing::Values(9, 64, 65, 200)));

// With every matmul on the GEMV kernels, a token's result is bit for bit the same whatever
// the batch it comes in (the property the serving core's exactness tests rely on).
TEST(CudaMatmulInvariance, GemvResultOfATokenDoesNotDependOnItsBatch) {
  LUMEN_REQUIRE_CUDA();
  const CudaBackendOptions saved = gpu()->options();
  CudaBackendOptions all_gemv = saved;
  all_gemv.max_gemv_tokens = 1 << 20;
  gpu()->set_options(all_gemv);
  for (DType type : {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::Q2_K, DType::Q3_K,
                     DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::IQ4_NL, DType::IQ4_XS, DType::MXFP4, DType::F16}) {
    Problem p = make_problem(type, 129, 512, 21, 3);
    const TensorView dw = gpu()->upload_weights(type, {512, 129, 1, 1}, p.weights.data());
    DeviceTensor dx = to_device(p.host_x());
    DeviceTensor all = device_matrix(129, 21, 129);
    gpu()->matmul(dw, dx.view, all.view);
    const std::vector<float> batch = download_f32(all.view);
    for (int64_t t : {0, 7, 8, 20}) {
      TensorView one_x = dx.view;
      one_x.data = static_cast<float*>(dx.view.data) + t * p.x_stride();
      one_x.dims[1] = 1;
      DeviceTensor one = device_matrix(129, 1, 129);
      gpu()->matmul(dw, one_x, one.view);
      const std::vector<float> alone = download_f32(one.view);
      const std::vector<float> in_batch(batch.begin() + t * 129, batch.begin() + (t + 1) * 129);
      EXPECT_EQ(alone, in_batch) << tensor::dtype_name(type) << " token " << t;
    }
  }
  gpu()->set_options(saved);
}

// matmul_same_input quantizes its input once for all outputs whose weights take the same
// activation type: each output must equal its own matmul bit for bit, with the types of a
// Q4_K_M layer mixed in one call (K-quant and legacy activations alternate, so the reuse key has
// to change and change back), on the GEMV path and on the cuBLAS path, with x on the device
// and in host memory.
TEST(CudaMatmulSameInput, EachOutputEqualsItsOwnMatmul) {
  LUMEN_REQUIRE_CUDA();
  const DType types[] = {DType::Q4_K, DType::Q6_K, DType::Q8_0, DType::Q4_K, DType::Q5_0, DType::F16};
  const int64_t cols = 512, rows = 96;
  for (const int64_t n_tokens : {int64_t{1}, int64_t{5}, int64_t{12}}) {
    std::vector<Problem> problems;
    std::vector<TensorView> weights;
    for (size_t i = 0; i < std::size(types); ++i) {
      problems.push_back(make_problem(types[i], rows, cols, n_tokens, 11));  // same seed: same x
      weights.push_back(gpu()->upload_weights(types[i], {cols, rows, 1, 1}, problems.back().weights.data()));
    }
    const TensorView host_x = problems[0].host_x();
    DeviceTensor device_x = to_device(host_x);
    for (const bool x_on_host : {false, true}) {
      const TensorView& x = x_on_host ? host_x : device_x.view;
      std::vector<DeviceTensor> fused, alone;
      std::vector<Backend::MatmulOutput> outputs;
      for (size_t i = 0; i < std::size(types); ++i) {
        fused.push_back(device_matrix(rows, n_tokens, rows));
        alone.push_back(device_matrix(rows, n_tokens, rows));
      }
      for (size_t i = 0; i < std::size(types); ++i) outputs.push_back({&weights[i], &fused[i].view});
      gpu()->matmul_same_input(x, outputs);
      for (size_t i = 0; i < std::size(types); ++i) {
        gpu()->matmul(weights[i], x, alone[i].view);
        EXPECT_EQ(download_f32(fused[i].view), download_f32(alone[i].view))
            << tensor::dtype_name(types[i]) << " output " << i << ", " << n_tokens << " tokens, x on "
            << (x_on_host ? "host" : "device");
      }
    }
  }
}

}  // namespace
}  // namespace lumen::backend::testing
