// The whole model on the CUDA backend against the CPU backend (the model is
// $LUMEN_GPU_TEST_MODEL or the default model, SmolLM2-135M Q4_1; without a CUDA device or the
// model, the tests skip).
//
// Why not "greedy continuations must be identical": both backends quantize each matmul's input
// to 8 bits, and a difference of one float rounding in an input (the order of a sum) moves a
// value across a rounding boundary of that quantization, which changes the product by up to
// 1/254 of its block's range. Measured on an H100 (EachOpMatchesCpu's trace): ops alone agree to
// 1e-7, the residual stream of the whole model to about 0.2%, and first-step logits to 0.5-0.8,
// which flips near-ties, after which the continuations part ways. So the model-level test is teacher-forced: both backends read the same
// tokens (the CPU's greedy continuation), and at every position where the CPU is confident
// (top-2 margin of at least kConfidentMargin) the CUDA backend must pick the same token; the
// logit differences and the mean KL divergence must stay within bounds a real bug (a wrong
// rope, a stale K/V row) exceeds many times over. The op-by-op test says where to look when
// they fail.
//
// Debugging aids for EachOpMatchesCpu: LUMEN_MIRROR_NO_RESYNC=1 lets differences accumulate as
// in a real run; LUMEN_MIRROR_TRACE=1 prints every op's difference.
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
#include "engine/single_sequence_forward.h"
#include "engine/loaded_model.h"
#include "mirror_backend.h"
#include "teacher_forced.h"

namespace lumen {
namespace {

std::string model_path() { return testing::gpu_test_model_path(); }

using testing::greedy_continuation;
using testing::kConfidentMargin;
using testing::kl_divergence;
using testing::kNewTokens;
using testing::kPrompts;
using testing::teacher_forced_logits;
using testing::top2_margin;

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
    double worst_diff = 0.0, kl_sum = 0.0, worst_kl = 0.0;
    int positions = 0, confident = 0;
    for (const char* text : kPrompts) {
      const std::vector<int32_t> prompt = cpu_model.tokenizer.encode(text, {.add_special = true});
      const std::vector<int32_t> continuation = greedy_continuation(cpu_model, cpu, prompt);
      const auto want = teacher_forced_logits(cpu_model, cpu, prompt, continuation);
      const auto got = teacher_forced_logits(gpu_model, gpu, prompt, continuation);
      for (size_t at = 0; at < want.size(); ++at) {
        double diff = 0.0;
        for (size_t i = 0; i < want[at].size(); ++i) {
          diff = std::max(diff, static_cast<double>(std::abs(want[at][i] - got[at][i])));
        }
        worst_diff = std::max(worst_diff, diff);
        const double kl = kl_divergence(want[at], got[at]);
        kl_sum += kl;
        worst_kl = std::max(worst_kl, kl);
        ++positions;
        if (top2_margin(want[at]) < kConfidentMargin) continue;
        ++confident;
        const auto cpu_top = std::max_element(want[at].begin(), want[at].end()) - want[at].begin();
        const auto gpu_top = std::max_element(got[at].begin(), got[at].end()) - got[at].begin();
        EXPECT_EQ(gpu_top, cpu_top) << "prompt \"" << text << "\", position " << at
                                    << ": the CPU is confident (margin " << top2_margin(want[at])
                                    << "), CUDA picks another token";
      }
    }
    const double mean_kl = kl_sum / positions;
    std::printf("%d positions (%d confident): logits differ by at most %.3g, KL mean %.3g max %.3g\n",
                positions, confident, worst_diff, mean_kl, worst_kl);
    // Measured on an H100 with SmolLM2-135M Q4_1: differences up to 2.3, mean KL 0.003-0.004,
    // worst 0.17, every confident position agreeing. The bounds leave room for other GPUs;
    // a real fault (a wrong rope angle, a stale K/V row) puts the mean KL above 0.1.
    EXPECT_LT(worst_diff, 4.0);
    EXPECT_LT(mean_kl, 1e-2);
    EXPECT_LT(worst_kl, 0.5);
  }
};

TEST_F(CudaGreedy, AllGemvAgreesWithCpu) {
  backend::CudaBackendOptions options;
  options.max_gemv_tokens = 1 << 20;
  run(options);
}

TEST_F(CudaGreedy, DefaultOptionsAgreeWithCpu) { run(backend::CudaBackendOptions{}); }

// Op by op: the model on a MirrorBackend (every op on both backends, the CPU's result copied
// over the GPU's after each), a 17-token prefill then 8 greedy steps, with every matmul on the
// GEMV kernels and then with the default cuBLAS path for prefill. Each kind of op must stay
// within its own bound of the CPU; the table printed names the worst call of each kind, which
// is where to look when the greedy tests above fail.
TEST_F(CudaGreedy, EachOpMatchesCpu) {
  for (const int64_t gemv_tokens : {int64_t{1} << 20, int64_t{8}}) {
    backend::CpuBackend cpu(0);
    backend::CudaBackendOptions options;
    options.max_gemv_tokens = gemv_tokens;
    backend::CudaBackend gpu(0, options);
    const bool resync = std::getenv("LUMEN_MIRROR_NO_RESYNC") == nullptr;
    backend::testing::MirrorBackend mirror(cpu, gpu, resync);
    engine::LoadedModel model = engine::LoadedModel::load(model_path(), mirror);
    const std::vector<int32_t> prompt = model.tokenizer.encode(kPrompts[1], {.add_special = true});
    engine::SingleSequenceForward generator(model, mirror, 512);
    std::span<const float> logits = generator.feed(prompt);
    for (int i = 0; i < 8; ++i) {
      const std::vector<int32_t> next = {
          static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin())};
      logits = generator.feed(next);
    }
    std::printf("max_gemv_tokens %lld:\n", static_cast<long long>(gemv_tokens));
    for (const auto& [kind, d] : mirror.departures()) {
      std::printf("  %-10s %5lld calls, worst relative difference %.3g at %s\n", kind.c_str(),
                  static_cast<long long>(d.calls), d.worst_relative, d.worst_call.c_str());
      // Bounds measured with room: attention rounds probabilities to f16 on both sides (2e-4
      // seen); cuBLAS multiplies f16 inputs where the CPU quantizes them to 8 bits (2.4% seen).
      double bound = 1e-5;
      if (kind == "attention") bound = 1e-3;
      // Mamba 2's scan: the CPU takes a prompt in the chunked (SSD) form, the device token by
      // token (bit for bit the CPU's token scan, unit_cuda_host): the two orders of sums over
      // up to 64 tokens differ by f32 rounding, relative to the largest output. A guess with room,
      // not yet measured on a GPU.
      if (kind == "ssm_scan" || kind == "ssm_state") bound = 1e-4;
      // Float weights: both sides add in f32 but in different orders, and a call with one output
      // (qwen2moe's shared-expert gate, 512 products) has no larger element to be relative to,
      // so cancellation shows in full (3.2e-5 seen on an H200). Quantized weights keep 1e-5:
      // both sides sum the same integer products.
      const bool float_weights = d.worst_call.starts_with(kind + " F32[") ||
                                 d.worst_call.starts_with(kind + " F16[") ||
                                 d.worst_call.starts_with(kind + " BF16[");
      if (kind == "matmul" && float_weights) bound = std::max(bound, 1e-3);
      // gpt-oss's experts are compared as whole moe_ffn calls (mirror_backend.h), whose experts
      // of more than 8 rows take cuBLAS's f16 products as matmul does.
      if ((kind == "matmul" || kind == "moe_ffn") && gemv_tokens == 8) bound = 6e-2;
      if (resync) {
        EXPECT_LT(d.worst_relative, bound) << kind << ": " << d.worst_call;
      }
    }
  }
}

}  // namespace
}  // namespace lumen
