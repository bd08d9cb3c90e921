// CudaBackend::time_ops: ops are timed by events on the device, each step's work held back until
// the host first waits for it, so that ops run back to back whatever the host's pace; marks are
// kept only while timing is on; the device's limits measure as plausible.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "cuda_test_util.h"
#include "util/error.h"

namespace lumen::backend::testing {
namespace {

constexpr int64_t kCols = 4096;
constexpr int64_t kRows = 4096;  // 64 MiB of f32: a scale takes the device tens of microseconds

// A step of two scales of a device matrix with a mark before, between and after them; the host
// sleeps `host_pause` between queueing the first mark and the first scale.
std::vector<double> timed_step(std::chrono::milliseconds host_pause) {
  std::unique_ptr<Buffer> buffer = gpu()->allocate(static_cast<size_t>(kCols * kRows) * sizeof(float));
  TensorView x = f32_matrix(static_cast<float*>(buffer->data()), kCols, kRows);
  std::vector<int32_t> tokens = {1}, positions = {0};
  StepMetadata step;
  step.tokens = tokens;
  step.positions = positions;
  gpu()->begin_step(step);
  gpu()->mark_op_time();
  std::this_thread::sleep_for(host_pause);
  gpu()->scale(x, 0.5f);
  gpu()->mark_op_time();
  gpu()->scale(x, 2.0f);
  gpu()->mark_op_time();
  gpu()->end_step();
  return gpu()->take_op_times();
}

TEST(CudaOpTimer, OpsRunBackToBackWhateverTheHostsPace) {
  LUMEN_REQUIRE_CUDA();
  ASSERT_TRUE(gpu()->time_ops(true));
  const std::vector<double> marks = timed_step(std::chrono::milliseconds(30));
  gpu()->time_ops(false);
  ASSERT_EQ(marks.size(), 3u);
  EXPECT_EQ(marks[0], 0.0);
  EXPECT_GT(marks[1], 0.0);
  EXPECT_GE(marks[2], marks[1]);
  // Held back, the first scale ran right after the first mark, not 30 ms later when the host
  // queued it (64 MiB read and written: well under a millisecond on any recent GPU).
  EXPECT_LT(marks[1], 10e6);
  EXPECT_LT(marks[2] - marks[1], 10e6);
}

TEST(CudaOpTimer, KeepsMarksOnlyWhileOnAndCannotBeSwitchedInsideAStep) {
  LUMEN_REQUIRE_CUDA();
  EXPECT_TRUE(timed_step(std::chrono::milliseconds(0)).empty());  // off
  std::vector<int32_t> tokens = {1}, positions = {0};
  StepMetadata step;
  step.tokens = tokens;
  step.positions = positions;
  gpu()->begin_step(step);
  EXPECT_THROW(gpu()->time_ops(true), Error);
  EXPECT_THROW(gpu()->take_op_times(), Error);
  gpu()->end_step();
}

// A step that waits for the device part way (a copy back to the host) is released there, not
// stalled until the hold's timeout.
TEST(CudaOpTimer, AWaitInsideAStepReleasesTheHold) {
  LUMEN_REQUIRE_CUDA();
  std::vector<float> host(static_cast<size_t>(kCols), 3.0f), back(host.size());
  std::unique_ptr<Buffer> buffer = gpu()->allocate(host.size() * sizeof(float));
  TensorView x = f32_matrix(static_cast<float*>(buffer->data()), kCols, 1);
  ASSERT_TRUE(gpu()->time_ops(true));
  std::vector<int32_t> tokens = {1}, positions = {0};
  StepMetadata step;
  step.tokens = tokens;
  step.positions = positions;
  const auto start = std::chrono::steady_clock::now();
  gpu()->begin_step(step);
  gpu()->mark_op_time();
  gpu()->copy_from_host(host.data(), x);
  gpu()->copy_to_host(x, back.data());
  gpu()->mark_op_time();
  gpu()->end_step();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(gpu()->take_op_times().size(), 2u);
  gpu()->time_ops(false);
  EXPECT_EQ(back, host);
  EXPECT_LT(wall, 0.15);  // the hold's timeout is 0.2 s
}

TEST(CudaDeviceCeilings, MeasureAsPlausible) {
  LUMEN_REQUIRE_CUDA();
  const std::optional<DeviceCeilings> c = gpu()->measure_device_ceilings();
  ASSERT_TRUE(c.has_value());
  EXPECT_FALSE(c->device.empty());
  // Any GPU this backend runs on (sm_80 and up) copies faster than 100 GB/s and multiplies f16
  // faster than 10 TFLOP/s; an H100 or H200 near 4 TB/s and 600+ TFLOP/s.
  EXPECT_GT(c->copy_gbps, 100.0);
  EXPECT_LT(c->copy_gbps, 20'000.0);
  EXPECT_GT(c->f16_tflops, 10.0);
  EXPECT_LT(c->f16_tflops, 5'000.0);
  EXPECT_GE(c->int8_tops, 0.0);
  std::printf("%s: copy %.0f GB/s, f16 %.0f TFLOP/s, int8 %.0f TOP/s\n", c->device.c_str(), c->copy_gbps, c->f16_tflops,
              c->int8_tops);
}

}  // namespace
}  // namespace lumen::backend::testing
