// Greedy rows through the CUDA step boundary (StepMetadata::row_forms, row_argmax.cu): with
// device_argmax on, a flagged row comes back as its argmax alone, the sampler's greedy choice,
// and its logits are never copied; the other rows come back whole. Off, every row comes back.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "cuda_test_util.h"
#include "sampling/sampler.h"

namespace lumen::backend::testing {
namespace {

constexpr int64_t kWidth = 49157;  // not a multiple of the block's threads
constexpr float kUntouched = -12345.0f;

struct GreedyStep {
  std::vector<float> rows;  // what the step's output projection wrote
  std::vector<float> host;  // where end_step left the logits
  std::vector<RowArgmax> argmax;
};

GreedyStep run_step(const std::vector<uint8_t>& flags, bool device_argmax) {
  const auto n = static_cast<int64_t>(flags.size());
  CudaBackendOptions options = gpu()->options();
  const CudaBackendOptions saved = options;
  options.device_argmax = device_argmax;
  gpu()->set_options(options);
  std::mt19937_64 rng(3);
  std::normal_distribution<float> normal(0.0f, 4.0f);
  GreedyStep s;
  s.rows.resize(static_cast<size_t>(n * kWidth));
  for (float& v : s.rows) v = normal(rng);
  s.rows[2 * kWidth + 100] = s.rows[2 * kWidth + 40000] = 90.0f;  // a tie in row 2
  s.rows[kWidth - 1] = 95.0f;                                     // row 0's last value
  s.rows[3 * kWidth + 7] = std::numeric_limits<float>::quiet_NaN();
  s.host.assign(s.rows.size(), kUntouched);
  s.argmax.assign(static_cast<size_t>(n), RowArgmax{});
  std::vector<int32_t> tokens(static_cast<size_t>(n), 1), positions(static_cast<size_t>(n), 0), logit_rows;
  for (int32_t r = 0; r < n; ++r) logit_rows.push_back(r);
  StepMetadata step;
  step.tokens = tokens;
  step.positions = positions;
  step.logit_rows = logit_rows;
  step.logits = s.host.data();
  step.logit_width = kWidth;
  step.row_forms = flags;  // 1: RowForm::Argmax
  step.argmax = s.argmax.data();
  gpu()->begin_step(step);
  TensorView out = gpu()->step_logits();
  gpu()->copy_from_host(s.rows.data(), out);
  gpu()->end_step();
  gpu()->set_options(saved);
  return s;
}

TEST(CudaRowArgmax, GreedyRowsComeBackAsTheirArgmaxAndTheOthersWhole) {
  LUMEN_REQUIRE_CUDA();
  const std::vector<uint8_t> flags = {1, 0, 1, 1, 0, 0, 1};
  const GreedyStep s = run_step(flags, true);
  for (size_t r = 0; r < flags.size(); ++r) {
    const std::span<const float> row(s.rows.data() + r * kWidth, kWidth);
    const std::span<const float> host(s.host.data() + r * kWidth, kWidth);
    if (flags[r] != 0) {
      EXPECT_EQ(s.argmax[r].token, sampling::argmax(row)) << r;
      EXPECT_EQ(s.argmax[r].value, row[static_cast<size_t>(s.argmax[r].token)]) << r;
      EXPECT_EQ(s.argmax[r].finite, r == 3 ? 0 : 1) << r;
      EXPECT_TRUE(std::all_of(host.begin(), host.end(), [](float v) { return v == kUntouched; })) << r;
    } else {
      EXPECT_TRUE(std::equal(host.begin(), host.end(), row.begin())) << r;
    }
  }
  EXPECT_EQ(s.argmax[0].token, kWidth - 1);
  EXPECT_EQ(s.argmax[2].token, 100);
}

TEST(CudaRowArgmax, WithTheOptionOffEveryRowComesBackWhole) {
  LUMEN_REQUIRE_CUDA();
  const std::vector<uint8_t> flags = {1, 0, 1, 1};
  const GreedyStep s = run_step(flags, false);
  for (size_t r = 0; r < flags.size(); ++r) EXPECT_EQ(s.argmax[r].token, -1) << r;  // not reduced
  for (size_t i = 0; i < s.rows.size(); ++i) {
    if (std::isnan(s.rows[i])) continue;
    ASSERT_EQ(s.host[i], s.rows[i]) << i;
  }
}

// Where the engine's logits land (Backend::allocate_host): page-locked, so the step's copy back
// runs at the link's speed; and a step's logits reach it.
TEST(CudaHostMemory, IsPageLockedAndTakesTheStepsLogits) {
  LUMEN_REQUIRE_CUDA();
  const std::unique_ptr<Buffer> host = gpu()->allocate_host(3 * kWidth * sizeof(float));
  ASSERT_GE(host->size(), 3 * kWidth * sizeof(float));
  cudaPointerAttributes attributes{};
  ASSERT_EQ(cudaPointerGetAttributes(&attributes, host->data()), cudaSuccess);
  EXPECT_EQ(attributes.type, cudaMemoryTypeHost);
  std::vector<float> rows(3 * kWidth);
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<float>(i % 1000) * 0.5f;
  std::vector<int32_t> tokens(3, 1), positions(3, 0), logit_rows = {0, 1, 2};
  StepMetadata step;
  step.tokens = tokens;
  step.positions = positions;
  step.logit_rows = logit_rows;
  step.logits = static_cast<float*>(host->data());
  step.logit_width = kWidth;
  gpu()->begin_step(step);
  TensorView out = gpu()->step_logits();
  gpu()->copy_from_host(rows.data(), out);
  gpu()->end_step();
  EXPECT_TRUE(std::equal(rows.begin(), rows.end(), static_cast<const float*>(host->data())));
}

}  // namespace
}  // namespace lumen::backend::testing
