// Decode with the step's kernels queued as programmatic dependent launches
// (CudaBackendOptions::dependent_launch, dependent_launch.cuh) gives the logits of the same steps
// queued plainly, bit for bit: one sequence through the prompt and greedy continuation of every
// test prompt, replayed from CUDA graphs and op by op, and three sequences decoding together. The
// kernels' arithmetic is the same either way; what a dependent launch changes is when a kernel
// starts, so a kernel that read or wrote before its wait for the kernel ahead would show here as
// logits that differ (or differ between runs). Needs compute capability 9.0 (the option does
// nothing before it); without a CUDA device, such a device or the model, skips.
#include <gtest/gtest.h>

#include <filesystem>
#include <vector>

#include <cuda_runtime_api.h>

#include "backend/cuda/cuda_backend.h"
#include "decode_together.h"
#include "engine/loaded_model.h"
#include "teacher_forced.h"

namespace lumen {
namespace {

using testing::gpu_test_model_path;

class CudaDependentLaunch : public ::testing::Test {
 protected:
  void SetUp() override {
    if (backend::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
    if (!std::filesystem::exists(gpu_test_model_path())) GTEST_SKIP() << "no model at " << gpu_test_model_path();
    // The device's own answer, not the backend's: a backend that failed to ask for dependent
    // launches on an sm_90 device must fail below (dependent_launches()), not skip.
    cudaDeviceProp properties{};
    ASSERT_EQ(cudaGetDeviceProperties(&properties, 0), cudaSuccess);
    if (properties.major < 9) GTEST_SKIP() << "dependent launches need compute capability 9.0";
  }

  static backend::CudaBackendOptions with(bool dependent, bool graphs) {
    backend::CudaBackendOptions options;
    options.dependent_launch = dependent;
    options.step_graphs = graphs;
    return options;
  }
  // The constructor applies the LUMEN_CUDA_* variables (gpu_check.sh runs this file with
  // switches set): the two compared options set again after it, the rest kept, so both backends
  // run the same kernels.
  static void pin(backend::CudaBackend& backend, bool dependent, bool graphs) {
    backend::CudaBackendOptions options = backend.options();
    options.dependent_launch = dependent;
    options.step_graphs = graphs;
    backend.set_options(options);
  }

  static void expect_one_sequence_alike(bool graphs) {
    backend::CudaBackend plain(0, with(false, graphs));
    backend::CudaBackend dependent(0, with(true, graphs));
    pin(plain, false, graphs);
    pin(dependent, true, graphs);
    ASSERT_TRUE(dependent.dependent_launches());
    ASSERT_FALSE(plain.dependent_launches());
    engine::LoadedModel plain_model = engine::LoadedModel::load(gpu_test_model_path(), plain);
    engine::LoadedModel dependent_model = engine::LoadedModel::load(gpu_test_model_path(), dependent);
    for (const char* text : testing::kPrompts) {
      const std::vector<int32_t> prompt = plain_model.tokenizer.encode(text, {.add_special = true});
      const std::vector<int32_t> continuation = testing::greedy_continuation(plain_model, plain, prompt);
      const auto want = testing::teacher_forced_logits(plain_model, plain, prompt, continuation);
      // Twice: a race would rarely lose the same way both times.
      for (int run = 0; run < 2; ++run) {
        const auto got = testing::teacher_forced_logits(dependent_model, dependent, prompt, continuation);
        ASSERT_EQ(got.size(), want.size());
        for (size_t at = 0; at < want.size(); ++at) ASSERT_EQ(got[at], want[at]) << text << ", row " << at;
      }
    }
    if (graphs) {
      EXPECT_GE(dependent.step_replay_stats().replayed, 1u);
    }
  }
};

TEST_F(CudaDependentLaunch, OneSequenceFromGraphsDecodesAsPlainLaunches) { expect_one_sequence_alike(true); }

TEST_F(CudaDependentLaunch, OneSequenceOpByOpDecodesAsPlainLaunches) { expect_one_sequence_alike(false); }

TEST_F(CudaDependentLaunch, ThreeSequencesDecodeAsPlainLaunches) {
  backend::CudaBackend plain(0, with(false, true));
  backend::CudaBackend dependent(0, with(true, true));
  pin(plain, false, true);
  pin(dependent, true, true);
  ASSERT_TRUE(dependent.dependent_launches());
  engine::LoadedModel plain_model = engine::LoadedModel::load(gpu_test_model_path(), plain);
  engine::LoadedModel dependent_model = engine::LoadedModel::load(gpu_test_model_path(), dependent);
  constexpr int kSteps = 40;
  const auto want = testing::decode_together(plain_model, plain, 3, kSteps, 480);
  const auto got = testing::decode_together(dependent_model, dependent, 3, kSteps, 480);
  ASSERT_EQ(got.size(), want.size());
  for (size_t step = 0; step < want.size(); ++step) ASSERT_EQ(got[step], want[step]) << "decode step " << step;
}

}  // namespace
}  // namespace lumen
