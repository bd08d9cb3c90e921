// CudaBackend::time_steps: a step that waits for the device at its end is timed on the device
// (CUDA events around it), never longer than its wall time; steps that bring nothing back, or
// run while timing is off, are not counted; timing cannot be switched inside a step.
#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "cuda_test_util.h"
#include "util/error.h"

namespace lumen::backend::testing {
namespace {

constexpr int64_t kWidth = 4096;
constexpr int64_t kRows = 2048;  // 32 MiB of logits: their copies take the device a while

// One step whose logits are copied in and brought back whole; its wall time in seconds.
double run_step(bool bring_back) {
  std::vector<float> rows(static_cast<size_t>(kWidth * kRows), 1.5f), host(rows.size());
  std::vector<int32_t> tokens(kRows, 1), positions(kRows, 0), logit_rows;
  for (int32_t r = 0; r < kRows; ++r) logit_rows.push_back(r);
  StepMetadata step;
  step.tokens = tokens;
  step.positions = positions;
  step.logit_rows = logit_rows;
  step.logits = bring_back ? host.data() : nullptr;
  step.logit_width = kWidth;
  const auto start = std::chrono::steady_clock::now();
  gpu()->begin_step(step);
  if (bring_back) {  // a step without logits has none to write (step_logits refuses)
    TensorView out = gpu()->step_logits();
    gpu()->copy_from_host(rows.data(), out);
  }
  gpu()->end_step();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (bring_back) {
    EXPECT_EQ(host[host.size() - 1], 1.5f);
  }
  return wall;
}

TEST(CudaStepTimer, TimesStepsThatWaitAndOnlyWhileOn) {
  LUMEN_REQUIRE_CUDA();
  const auto before = gpu()->step_device_time();
  run_step(true);  // off: not counted
  EXPECT_EQ(gpu()->step_device_time().steps, before.steps);

  gpu()->time_steps(true);
  const double wall = run_step(true);
  const auto one = gpu()->step_device_time();
  EXPECT_EQ(one.steps, before.steps + 1);
  const double device = one.seconds - before.seconds;
  EXPECT_GT(device, 0.0);
  EXPECT_LE(device, wall);
  run_step(false);  // nothing comes back, no wait: not counted
  EXPECT_EQ(gpu()->step_device_time().steps, one.steps);
  gpu()->time_steps(false);
  run_step(true);
  EXPECT_EQ(gpu()->step_device_time().steps, one.steps);
}

TEST(CudaStepTimer, CannotBeSwitchedInsideAStep) {
  LUMEN_REQUIRE_CUDA();
  std::vector<int32_t> tokens = {1}, positions = {0};
  StepMetadata step;
  step.tokens = tokens;
  step.positions = positions;
  gpu()->begin_step(step);
  EXPECT_THROW(gpu()->time_steps(true), Error);
  gpu()->end_step();
}

}  // namespace
}  // namespace lumen::backend::testing
