// The whole model on the CUDA backend against the CPU backend: greedy continuations of 64
// tokens after 5 prompts must be the same tokens. The model is $LUMEN_GPU_TEST_MODEL or the
// default model (SmolLM2-135M Q4_1); without a CUDA device or the model, the tests skip.
//
// Two configurations: every matmul on the GEMV kernels (the CPU's arithmetic up to the order of
// float sums), and the default, where prompt matmuls over more than 8 tokens go through f16
// cuBLAS. The first failing token is reported with both backends' top-2 logit margins, which
// tells a real bug (large differences) from a near-tie flipped by rounding.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cuda/cuda_backend.h"
#include "default_model_path.h"
#include "engine/generator.h"
#include "engine/loaded_model.h"

namespace lumen {
namespace {

std::string model_path() {
  const char* given = std::getenv("LUMEN_GPU_TEST_MODEL");
  return given != nullptr && *given != '\0' ? given : testing::default_model_path();
}

const char* const kPrompts[] = {
    "The lighthouse keeper climbed the spiral stairs every evening,",
    "def fibonacci(n):\n    a, b = 0, 1\n",
    "Paris is the capital of",
    "List three uses of copper: 1.",
    "In 1969, the first humans to walk on the Moon were",
};

constexpr int kNewTokens = 64;

struct Continuation {
  std::vector<int32_t> tokens;
  std::vector<float> margins;  // top-1 minus top-2 logit at each step
  std::vector<std::vector<float>> first_logits;
};

Continuation greedy(engine::LoadedModel& model, backend::Backend& backend,
                    const std::vector<int32_t>& prompt) {
  engine::Generator generator(model, backend, 512);
  Continuation c;
  std::span<const float> logits = generator.feed(prompt);
  for (int i = 0; i < kNewTokens; ++i) {
    const auto best = std::max_element(logits.begin(), logits.end());
    float second = -1e30f;
    for (auto it = logits.begin(); it != logits.end(); ++it) {
      if (it != best) second = std::max(second, *it);
    }
    c.margins.push_back(*best - second);
    if (i == 0) c.first_logits.emplace_back(logits.begin(), logits.end());
    const auto token = static_cast<int32_t>(best - logits.begin());
    c.tokens.push_back(token);
    const std::vector<int32_t> next = {token};
    logits = generator.feed(next);
  }
  return c;
}

class CudaGreedy : public ::testing::Test {
 protected:
  void SetUp() override {
    if (backend::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
    if (!std::filesystem::exists(model_path())) GTEST_SKIP() << "no model at " << model_path();
  }

  void run(const backend::CudaBackendOptions& options) {
    backend::CpuBackend cpu(0);
    backend::CudaBackend gpu(0, options);
    engine::LoadedModel cpu_model = engine::LoadedModel::load(model_path(), cpu);
    engine::LoadedModel gpu_model = engine::LoadedModel::load(model_path(), gpu);
    int identical = 0;
    for (const char* text : kPrompts) {
      const std::vector<int32_t> prompt = cpu_model.tokenizer.encode(text, {.add_special = true});
      const Continuation want = greedy(cpu_model, cpu, prompt);
      const Continuation got = greedy(gpu_model, gpu, prompt);
      double first_diff = 0.0;
      for (size_t i = 0; i < want.first_logits[0].size(); ++i) {
        first_diff = std::max(first_diff, static_cast<double>(std::abs(want.first_logits[0][i] -
                                                                       got.first_logits[0][i])));
      }
      const auto mismatch =
          std::mismatch(want.tokens.begin(), want.tokens.end(), got.tokens.begin());
      if (mismatch.first == want.tokens.end()) {
        ++identical;
      } else {
        const auto at = static_cast<size_t>(mismatch.first - want.tokens.begin());
        ADD_FAILURE() << "prompt \"" << text << "\": token " << at << " is " << got.tokens[at]
                      << " on CUDA, " << want.tokens[at] << " on the CPU (top-2 margins "
                      << got.margins[at] << " / " << want.margins[at]
                      << "; largest first-step logit difference " << first_diff << ")";
      }
      std::printf("prompt %zu tokens: first-step logits differ by at most %.3g\n", prompt.size(),
                  first_diff);
    }
    EXPECT_EQ(identical, 5);
  }
};

TEST_F(CudaGreedy, AllGemvMatchesCpu) {
  backend::CudaBackendOptions options;
  options.max_gemv_tokens = 1 << 20;
  run(options);
}

TEST_F(CudaGreedy, DefaultOptionsMatchCpu) { run(backend::CudaBackendOptions{}); }

}  // namespace
}  // namespace lumen
