// The quantized GEMV and GEMM kernels on the simulated device (sim/cuda_sim.h): gemv.cu's one-warp
// kernels, their reference since the first H100 run, against the exact product of the dequantized
// weights and the activations; the tiled (gemv_tiled.cu) and pipelined (gemv_pipelined.cu)
// kernels against the one-warp ones bit for bit, as their contract says, in both thread orders;
// the int8 tensor-core GEMM (gemm_int8.cu, gemm_int8_kquant.cu) against the one-warp kernels
// within the f32 sums' reordering; every quantized weight type.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "backend/cuda/kernels.h"
#include "tensor/dtype.h"
#include "unit/cuda_sim/random_matrix.h"
#include "unit/cuda_sim/sim/cuda_sim.h"

namespace lumen::backend::cuda {
namespace {

using tensor::DType;

using Weights = sim_testing::Matrix;

Weights random_weights(DType type, int64_t cols, int64_t rows, uint32_t seed) {
  return sim_testing::random_matrix(type, cols, rows, seed, 0.05f);
}

// Uniform in [-1, 1], every 97th value 9 times larger (blocks' scales differ).
std::vector<float> random_activations(int64_t cols, int64_t n_tokens, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(cols * n_tokens));
  for (float& v : x) v = uniform(rng);
  for (size_t i = 7; i < x.size(); i += 97) x[i] *= 9.0f;
  return x;
}

struct Quantized {
  std::vector<uint8_t> buffer;
  Q8Activations q;
};

Quantized quantize(DType weight_type, const std::vector<float>& x, int64_t cols, int64_t n_tokens) {
  Quantized out;
  out.buffer.resize(q8_activation_bytes(n_tokens, cols));
  out.q = carve_q8_activations(out.buffer.data(), n_tokens, cols);
  launch_quantize_activations(gemv_activation_type(weight_type), x.data(), cols, n_tokens, cols, out.q, nullptr);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  return out;
}

// y (n_tokens rows of `rows`) on gemv.cu's one-warp kernels, 8 tokens a launch.
std::vector<float> warp_gemv(DType type, const Weights& w, int64_t rows, int64_t cols, const Q8Activations& q,
                             int64_t n_tokens) {
  std::vector<float> y(static_cast<size_t>(rows * n_tokens), NAN);
  for (int64_t t0 = 0; t0 < n_tokens; t0 += kGemvMaxTokens) {
    const int64_t nt = std::min<int64_t>(kGemvMaxTokens, n_tokens - t0);
    launch_gemv_quantized(type, w.bytes.data(), w.row_bytes, rows, cols, q, t0, nt, y.data() + t0 * rows, rows,
                          nullptr);
  }
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  return y;
}

void expect_same_bits(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < want.size() && bad < 5; ++i) {
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0) {
      ADD_FAILURE() << what << ", output " << i << ": " << got[i] << ", one-warp kernel " << want[i];
      ++bad;
    }
  }
}

// |y - W x| against B = sum |w x| per output, W the dequantized weights and x unquantized: the
// activations' quantization carries up to 1/254 of a block's largest value, so 1e-2 B.
void expect_near_exact(const std::vector<float>& y, const Weights& w, const std::vector<float>& x, int64_t rows,
                       int64_t cols, int64_t n_tokens, double relative, const std::string& what) {
  int bad = 0;
  for (int64_t t = 0; t < n_tokens && bad < 5; ++t) {
    for (int64_t r = 0; r < rows && bad < 5; ++r) {
      double exact = 0.0, bound = 0.0;
      for (int64_t c = 0; c < cols; ++c) {
        const double p =
            static_cast<double>(w.values[static_cast<size_t>(r * cols + c)]) * x[static_cast<size_t>(t * cols + c)];
        exact += p;
        bound += std::fabs(p);
      }
      const double got = y[static_cast<size_t>(t * rows + r)];
      if (!(std::fabs(got - exact) <= relative * bound)) {
        ADD_FAILURE() << what << ", token " << t << " row " << r << ": " << got << ", exact " << exact << ", bound "
                      << bound;
        ++bad;
      }
    }
  }
}

struct GemvCase {
  DType type;
  int64_t cols;
};

std::string case_name(const ::testing::TestParamInfo<GemvCase>& info) {
  return std::string(tensor::dtype_name(info.param.type)) + "_" + std::to_string(info.param.cols);
}

class SimulatedGemv : public ::testing::TestWithParam<GemvCase> {
 protected:
  void TearDown() override { cuda_sim::set_schedule(cuda_sim::Schedule::Forward); }
};

TEST_P(SimulatedGemv, OneWarpKernelsGiveTheExactProduct) {
  const auto [type, cols] = GetParam();
  const int64_t rows = 24, n_tokens = 3;
  const Weights w = random_weights(type, cols, rows, 11);
  const std::vector<float> x = random_activations(cols, n_tokens, 12);
  const Quantized q = quantize(type, x, cols, n_tokens);
  expect_near_exact(warp_gemv(type, w, rows, cols, q.q, n_tokens), w, x, rows, cols, n_tokens, 1e-2, "one-warp");
}

TEST_P(SimulatedGemv, TiledAndPipelinedKernelsMatchTheOneWarpKernelsBitForBit) {
  const auto [type, cols] = GetParam();
  // Rows of both matrices of a group; more rows than the pipelined grid's warps (132 SMs x 2
  // blocks x 4 warps in the simulation) would take long on fibers, so the walk over several rows
  // per warp is the GPU test's.
  const int64_t rows_a = 40, rows_b = 9;
  const Weights a = random_weights(type, cols, rows_a, 21);
  const Weights b = random_weights(type, cols, rows_b, 22);
  for (const int64_t n_tokens : {1, 5, 8}) {
    const std::vector<float> x = random_activations(cols, n_tokens, 23 + static_cast<uint32_t>(n_tokens));
    const Quantized q = quantize(type, x, cols, n_tokens);
    const std::vector<float> want_a = warp_gemv(type, a, rows_a, cols, q.q, n_tokens);
    const std::vector<float> want_b = warp_gemv(type, b, rows_b, cols, q.q, n_tokens);
    for (const auto schedule : {cuda_sim::Schedule::Forward, cuda_sim::Schedule::Reverse}) {
      cuda_sim::set_schedule(schedule);
      const std::string what = std::string(schedule == cuda_sim::Schedule::Forward ? "forward" : "reverse") +
                               " order, " + std::to_string(n_tokens) + " tokens";
      for (const bool pipelined : {false, true}) {
        std::vector<float> ya(static_cast<size_t>(rows_a * n_tokens), NAN),
            yb(static_cast<size_t>(rows_b * n_tokens), NAN);
        const TiledGemvMatrix group[2] = {{a.bytes.data(), rows_a, ya.data(), rows_a},
                                          {b.bytes.data(), rows_b, yb.data(), rows_b}};
        const bool ran =
            pipelined ? launch_gemv_quantized_pipelined_group(type, a.row_bytes, cols, group, q.q, 0, n_tokens, nullptr)
                      : launch_gemv_quantized_tiled_group(type, a.row_bytes, cols, group, q.q, 0, n_tokens, nullptr);
        ASSERT_TRUE(ran) << what;
        ASSERT_EQ(cudaGetLastError(), cudaSuccess) << what;
        const std::string kernel = pipelined ? "pipelined, " : "tiled, ";
        expect_same_bits(ya, want_a, kernel + what + ", first matrix");
        expect_same_bits(yb, want_b, kernel + what + ", second matrix");
      }
    }
  }
}

TEST_P(SimulatedGemv, Int8GemmMatchesTheOneWarpKernels) {
  const auto [type, cols] = GetParam();
  if (!int8_gemm_takes(type)) GTEST_SKIP() << "the int8 GEMM does not take " << tensor::dtype_name(type);
  const int64_t rows = 72;  // a row tile and a part of one
  const Weights w = random_weights(type, cols, rows, 31);
  for (const int64_t n_tokens : {9, 40}) {
    const std::vector<float> x = random_activations(cols, n_tokens, 32);
    const Quantized q = quantize(type, x, cols, n_tokens);
    const std::vector<float> want = warp_gemv(type, w, rows, cols, q.q, n_tokens);
    std::vector<float> y(static_cast<size_t>(rows * n_tokens), NAN);
    ASSERT_TRUE(
        launch_gemm_int8(type, w.bytes.data(), w.row_bytes, rows, cols, q.q, n_tokens, y.data(), rows, nullptr));
    ASSERT_EQ(cudaGetLastError(), cudaSuccess);
    int bad = 0;
    for (int64_t t = 0; t < n_tokens && bad < 5; ++t) {
      for (int64_t r = 0; r < rows && bad < 5; ++r) {
        double bound = 0.0;
        for (int64_t c = 0; c < cols; ++c) {
          bound += std::fabs(static_cast<double>(w.values[static_cast<size_t>(r * cols + c)]) *
                             x[static_cast<size_t>(t * cols + c)]);
        }
        const size_t i = static_cast<size_t>(t * rows + r);
        if (!(std::fabs(y[i] - want[i]) <= 2e-5 * bound)) {
          ADD_FAILURE() << n_tokens << " tokens, token " << t << " row " << r << ": int8 GEMM " << y[i]
                        << ", one-warp kernel " << want[i] << ", bound " << bound;
          ++bad;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, SimulatedGemv,
                         // Rows of whole 16-byte vectors, which the tiled kernels need.
                         ::testing::Values(GemvCase{DType::Q4_0, 512}, GemvCase{DType::Q4_1, 512},
                                           GemvCase{DType::Q5_0, 1024}, GemvCase{DType::Q5_1, 512},
                                           GemvCase{DType::Q8_0, 512}, GemvCase{DType::Q2_K, 1024},
                                           GemvCase{DType::Q3_K, 2048}, GemvCase{DType::Q4_K, 768},
                                           GemvCase{DType::Q5_K, 512}, GemvCase{DType::Q6_K, 2048},
                                           GemvCase{DType::IQ4_NL, 512}, GemvCase{DType::IQ4_XS, 512},
                                           GemvCase{DType::MXFP4, 512}),
                         case_name);

// MXFP4's blocks are 17 bytes, so most of its rows start at an odd address (gpt-oss's width,
// 2880 values, is 1530 bytes a row): the one-warp kernel reads them byte by byte and gives the
// exact product; the tiled and pipelined kernels, which stage 16-byte vectors, refuse them, so
// the backend runs the one-warp kernel.
TEST(SimulatedGemvUnaligned, Mxfp4RowsOfAnyLengthRunOnTheOneWarpKernel) {
  const int64_t cols = 2880, rows = 20, n_tokens = 3;
  const Weights w = random_weights(DType::MXFP4, cols, rows, 41);
  ASSERT_EQ(w.row_bytes, 1530u);
  const std::vector<float> x = random_activations(cols, n_tokens, 42);
  const Quantized q = quantize(DType::MXFP4, x, cols, n_tokens);
  expect_near_exact(warp_gemv(DType::MXFP4, w, rows, cols, q.q, n_tokens), w, x, rows, cols, n_tokens, 1e-2,
                    "one-warp, odd row bytes");
  std::vector<float> y(static_cast<size_t>(rows * n_tokens), NAN);
  const TiledGemvMatrix group[1] = {{w.bytes.data(), rows, y.data(), rows}};
  EXPECT_FALSE(launch_gemv_quantized_tiled_group(DType::MXFP4, w.row_bytes, cols, group, q.q, 0, n_tokens, nullptr));
  EXPECT_FALSE(
      launch_gemv_quantized_pipelined_group(DType::MXFP4, w.row_bytes, cols, group, q.q, 0, n_tokens, nullptr));
}

}  // namespace
}  // namespace lumen::backend::cuda
