// The kernels that turn weights and activations into what cuBLAS and the other kernels read, on the
// simulated device (sim/cuda_sim.h): dequantize_to_f16 (the prefill's and the batched decode's
// GEMM path) and get_rows for every weight type, bit for bit against tensor::dequantize_row; and
// the activations' conversion to f16 with its power-of-two scale.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/cuda/kernels.h"
#include "tensor/dtype.h"
#include "tensor/fp16.h"
#include "unit/cuda_sim/random_matrix.h"
#include "unit/cuda_sim/sim/cuda_sim.h"

namespace lumen::backend::cuda {
namespace {

using tensor::DType;

using sim_testing::Matrix;

Matrix random_matrix(DType type, int64_t cols, int64_t rows, uint32_t seed) {
  return sim_testing::random_matrix(type, cols, rows, seed, 2.0f);
}

class SimulatedWeightPrep : public ::testing::TestWithParam<DType> {};

TEST_P(SimulatedWeightPrep, DequantizeToF16RoundsEachValueOfEveryRowOnce) {
  const DType type = GetParam();
  const int64_t cols = 512, rows = 7;
  const Matrix m = random_matrix(type, cols, rows, 5);
  std::vector<uint16_t> out(static_cast<size_t>(rows * cols), 0xffff);
  launch_dequantize_to_f16(type, m.bytes.data(), m.row_bytes, rows, cols, out.data(), nullptr);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  int bad = 0;
  for (size_t i = 0; i < out.size() && bad < 5; ++i) {
    const uint16_t want = tensor::float_to_fp16(m.values[i]);
    if (out[i] != want) {
      ADD_FAILURE() << "value " << i << " (row " << i / cols << "): " << out[i] << ", want " << want;
      ++bad;
    }
  }
}

TEST_P(SimulatedWeightPrep, GetRowsGivesTheDequantizedRowsItIsAskedFor) {
  const DType type = GetParam();
  const int64_t cols = 512, rows = 9;
  const Matrix m = random_matrix(type, cols, rows, 6);
  const std::vector<int32_t> ids = {8, 0, 3, 3, 7};
  const int64_t stride = cols + 3;
  std::vector<float> out(static_cast<size_t>(stride) * ids.size(), NAN);
  launch_get_rows(type, m.bytes.data(), m.row_bytes, cols, ids.data(), static_cast<int64_t>(ids.size()), out.data(),
                  stride, nullptr);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  for (size_t i = 0; i < ids.size(); ++i) {
    EXPECT_EQ(0, std::memcmp(out.data() + i * static_cast<size_t>(stride),
                             m.values.data() + static_cast<size_t>(ids[i]) * static_cast<size_t>(cols),
                             static_cast<size_t>(cols) * sizeof(float)))
        << "output row " << i << " (table row " << ids[i] << ")";
  }
}

INSTANTIATE_TEST_SUITE_P(Types, SimulatedWeightPrep,
                         ::testing::Values(DType::F32, DType::F16, DType::BF16, DType::Q4_0, DType::Q4_1, DType::Q5_0,
                                           DType::Q5_1, DType::Q8_0, DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K,
                                           DType::Q6_K, DType::IQ4_NL, DType::IQ4_XS, DType::MXFP4),
                         [](const ::testing::TestParamInfo<DType>& type) {
                           return std::string(tensor::dtype_name(type.param));
                         });

// MXFP4's 17-byte blocks leave most rows at odd addresses (gpt-oss's 2880 values: 1530 bytes a
// row): both kernels read them byte by byte, bit for bit with the reference.
TEST(SimulatedWeightPrepUnaligned, Mxfp4RowsAtOddAddresses) {
  const int64_t cols = 2880, rows = 5;
  const Matrix m = random_matrix(DType::MXFP4, cols, rows, 7);
  ASSERT_EQ(m.row_bytes, 1530u);
  std::vector<uint16_t> half(static_cast<size_t>(rows * cols), 0xffff);
  launch_dequantize_to_f16(DType::MXFP4, m.bytes.data(), m.row_bytes, rows, cols, half.data(), nullptr);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  for (size_t i = 0; i < half.size(); ++i) {
    ASSERT_EQ(half[i], tensor::float_to_fp16(m.values[i])) << "value " << i;
  }
  const std::vector<int32_t> ids = {3, 1, 4};
  std::vector<float> out(static_cast<size_t>(cols) * ids.size(), NAN);
  launch_get_rows(DType::MXFP4, m.bytes.data(), m.row_bytes, cols, ids.data(), static_cast<int64_t>(ids.size()),
                  out.data(), cols, nullptr);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  for (size_t i = 0; i < ids.size(); ++i) {
    EXPECT_EQ(0, std::memcmp(out.data() + i * static_cast<size_t>(cols),
                             m.values.data() + static_cast<size_t>(ids[i]) * static_cast<size_t>(cols),
                             static_cast<size_t>(cols) * sizeof(float)))
        << "output row " << i << " (table row " << ids[i] << ")";
  }
}

// Values past f16's range are scaled by a power of two into it (max |x| under 2^14), alpha
// undoes it; small ones are not scaled.
TEST(SimulatedActivationsToF16, ScaleByAPowerOfTwoOnlyWhatF16CannotHold) {
  for (const float largest : {3.5f, 70000.0f}) {
    const int64_t n_tokens = 3, cols = 300, stride = 310;
    std::mt19937 rng(9);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    std::vector<float> x(static_cast<size_t>(stride * n_tokens));
    for (float& v : x) v = uniform(rng);
    x[static_cast<size_t>(stride + 17)] = -largest;
    std::vector<float> state(4, NAN);
    std::vector<uint16_t> out(static_cast<size_t>(n_tokens * cols));
    launch_convert_activations_f16(x.data(), stride, n_tokens, cols, state.data(), out.data(), nullptr);
    ASSERT_EQ(cudaGetLastError(), cudaSuccess);
    const float scale = largest < 16384.0f ? 1.0f : 0.125f;  // 70000 / 8 < 2^14
    EXPECT_EQ(state[1], scale) << largest;
    EXPECT_EQ(state[2], 1.0f / scale) << largest;
    EXPECT_EQ(state[3], 0.0f);
    for (int64_t t = 0; t < n_tokens; ++t) {
      for (int64_t c = 0; c < cols; ++c) {
        ASSERT_EQ(out[static_cast<size_t>(t * cols + c)],
                  tensor::float_to_fp16(x[static_cast<size_t>(t * stride + c)] * scale))
            << largest << ", token " << t << " column " << c;
      }
    }
  }
}

}  // namespace
}  // namespace lumen::backend::cuda
