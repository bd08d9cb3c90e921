// A model split between the CPU and the GPU (--n-gpu-layers; model/backend_split.h) against the
// whole model on each: at several N (the output head alone, one layer more, half the layers,
// every layer but the embedding), teacher-forced along the CPU's greedy continuation as
// cuda_greedy_model_test.cc compares CUDA with the CPU, and held to the same bounds against
// both. A split's logits lie between the two backends' (its layers are some of each), so a
// seam that copies the wrong rows, K/V in the wrong memory or a layer run twice shows as a
// mean KL many times the bound. On the CPU the split is checked bit for bit between two CPU
// backends (tests/unit/split); this is the same split with a real device on one side.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cuda/cuda_backend.h"
#include "engine/loaded_model.h"
#include "model/gpu_layers.h"
#include "teacher_forced.h"

namespace lumen {
namespace {

using testing::gpu_test_model_path;

struct Agreement {
  double worst_diff = 0.0, mean_kl = 0.0, worst_kl = 0.0;
  int confident = 0, disagreeing = 0;
};

Agreement compare(const std::vector<std::vector<float>>& want, const std::vector<std::vector<float>>& got) {
  Agreement a;
  double kl_sum = 0.0;
  for (size_t at = 0; at < want.size(); ++at) {
    for (size_t i = 0; i < want[at].size(); ++i) {
      a.worst_diff = std::max(a.worst_diff, static_cast<double>(std::abs(want[at][i] - got[at][i])));
    }
    const double kl = testing::kl_divergence(want[at], got[at]);
    kl_sum += kl;
    a.worst_kl = std::max(a.worst_kl, kl);
    if (testing::top2_margin(want[at]) < testing::kConfidentMargin) continue;
    ++a.confident;
    const auto top = [](const std::vector<float>& row) {
      return std::max_element(row.begin(), row.end()) - row.begin();
    };
    if (top(want[at]) != top(got[at])) ++a.disagreeing;
  }
  a.mean_kl = want.empty() ? 0.0 : kl_sum / static_cast<double>(want.size());
  return a;
}

// The bounds cuda_greedy_model_test.cc holds CUDA to against the CPU.
void expect_close(const Agreement& a, const std::string& what) {
  std::printf("%s: logits differ by at most %.3g, KL mean %.3g max %.3g, %d of %d confident positions disagree\n",
              what.c_str(), a.worst_diff, a.mean_kl, a.worst_kl, a.disagreeing, a.confident);
  EXPECT_LT(a.worst_diff, 4.0) << what;
  EXPECT_LT(a.mean_kl, 1e-2) << what;
  EXPECT_LT(a.worst_kl, 0.5) << what;
  EXPECT_EQ(a.disagreeing, 0) << what;
}

TEST(CudaSplit, SplitsAgreeWithTheCpuAndWithCuda) {
  if (backend::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const std::string path = gpu_test_model_path();
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no model at " << path;
  backend::CpuBackend cpu(0);
  backend::CudaBackend gpu(0, {});
  engine::LoadedModel cpu_model = engine::LoadedModel::load(path, cpu);
  engine::LoadedModel gpu_model = engine::LoadedModel::load(path, gpu);
  const auto layers = static_cast<int64_t>(cpu_model.hparams.block_count);
  const std::vector<int32_t> prompt = cpu_model.tokenizer.encode(testing::kPrompts[0], {.add_special = true});
  const std::vector<int32_t> continuation = testing::greedy_continuation(cpu_model, cpu, prompt);
  const auto on_cpu = testing::teacher_forced_logits(cpu_model, cpu, prompt, continuation);
  const auto on_gpu = testing::teacher_forced_logits(gpu_model, gpu, prompt, continuation);
  for (const int64_t n_gpu_layers : {int64_t{1}, int64_t{2}, layers / 2 + 1, layers, layers + 1}) {
    backend::CpuBackend host(0);
    engine::ModelPart part;
    part.split = [&](const gguf::GgufFile&, const model::HParams& hp) {
      return model::BackendSplit{&gpu, model::first_gpu_layer(hp.block_count, n_gpu_layers)};
    };
    engine::LoadedModel split = engine::LoadedModel::load(path, host, part);
    const auto got = testing::teacher_forced_logits(split, host, prompt, continuation);
    const std::string what = "--n-gpu-layers " + std::to_string(n_gpu_layers);
    expect_close(compare(on_cpu, got), what + " vs the CPU");
    expect_close(compare(on_gpu, got), what + " vs CUDA");
  }
}

}  // namespace
}  // namespace lumen
