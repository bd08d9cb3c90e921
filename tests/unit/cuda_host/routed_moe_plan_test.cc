// Which way moe_ffn_routed runs a batch's experts on CUDA (backend/cuda/routed_moe_plan.h): the
// expert GEMV for every decode-sized batch and for prompts of small experts, the host's grouping
// and the GEMMs for prompts of large experts, float experts, too many experts or too many pairs;
// the device GEMM for prompts past the GEMV where it is on.
#include <gtest/gtest.h>

#include <climits>

#include "backend/cuda/routed_moe_plan.h"

namespace lumen::backend::cuda {
namespace {

RoutedExpertsBatch batch(int64_t tokens, int64_t used, int64_t n_experts, int64_t cols, int64_t ff) {
  return {tokens, used, n_experts, cols, ff, true, true};
}

constexpr auto kGemv = RoutedExpertsPath::ExpertGemv;
constexpr auto kHost = RoutedExpertsPath::HostGrouped;
constexpr auto kGemm = RoutedExpertsPath::ExpertGemm;

TEST(RoutedExpertsPath, DecodeSizedBatchesAlwaysRunOnTheExpertGemv) {
  // Mixtral-sized experts, where a prompt would take the GEMMs; and a budget of 0.
  for (const int64_t tokens : {int64_t{1}, int64_t{8}, kMaxDeviceMoeTokens}) {
    EXPECT_EQ(choose_routed_experts_path(batch(tokens, 2, 8, 4096, 14336), 0), kGemv) << tokens;
  }
  EXPECT_EQ(choose_routed_experts_path(batch(kMaxDeviceMoeTokens + 1, 2, 8, 4096, 14336), 0), kHost);
}

TEST(RoutedExpertsPath, PromptsChooseByEachExpertsShareOfTheMultiplyAdds) {
  // Qwen3-30B-A3B: 128 experts of 2048 x 768, 8 a token. 4.72 M multiply-adds a pair, so about
  // 113 pairs an expert fit the default budget (2^29): a 512-token prompt (32 an expert) runs on
  // the GEMV, a 2048-token one (128 an expert) on the GEMMs.
  EXPECT_EQ(choose_routed_experts_path(batch(512, 8, 128, 2048, 768), kDefaultMoeGemvMacsPerExpert), kGemv);
  EXPECT_EQ(choose_routed_experts_path(batch(2048, 8, 128, 2048, 768), kDefaultMoeGemvMacsPerExpert), kHost);
  // Mixtral 8x7B: 8 experts of 4096 x 14336, 2 a token: any prompt on the GEMMs.
  EXPECT_EQ(choose_routed_experts_path(batch(65, 2, 8, 4096, 14336), kDefaultMoeGemvMacsPerExpert), kHost);
  // The boundary itself: 100 tokens x 2 x 3 x 64 x 64 / 8 = 307 200 multiply-adds an expert.
  EXPECT_EQ(choose_routed_experts_path(batch(100, 2, 8, 64, 64), 307200), kGemv);
  EXPECT_EQ(choose_routed_experts_path(batch(100, 2, 8, 64, 64), 307199), kHost);
  // A budget of 0 sends every prompt the host way; the largest budget none.
  EXPECT_EQ(choose_routed_experts_path(batch(65, 8, 128, 16, 16), 0), kHost);
  EXPECT_EQ(choose_routed_experts_path(batch(100000, 8, 8, 8192, 32768), INT64_MAX), kGemv);
}

TEST(RoutedExpertsPath, WhatTheDeviceCannotRunGoesTheHostWay) {
  RoutedExpertsBatch floats = batch(4, 2, 8, 64, 64);
  floats.gemv_types = false;  // float experts, gate and up of two types, or rows not packed
  EXPECT_EQ(choose_routed_experts_path(floats, INT64_MAX), kHost);
  EXPECT_EQ(choose_routed_experts_path(batch(4, 2, kMaxDeviceRoutedExperts, 64, 64), 0), kGemv);
  EXPECT_EQ(choose_routed_experts_path(batch(4, 2, kMaxDeviceRoutedExperts + 1, 64, 64), INT64_MAX), kHost);
  EXPECT_EQ(choose_routed_experts_path(batch(4, 2, 0, 64, 64), INT64_MAX), kHost);
  // Pairs numbered in int32 on the device: one pair more than that fits is refused.
  const int64_t most_tokens = int64_t{INT32_MAX} / 8;
  EXPECT_EQ(choose_routed_experts_path(batch(most_tokens, 8, 8, 1, 1), INT64_MAX), kGemv);
  EXPECT_EQ(choose_routed_experts_path(batch(most_tokens + 1, 8, 8, 1, 1), INT64_MAX), kHost);
  EXPECT_EQ(choose_routed_experts_path(batch(4, 0, 8, 64, 64), INT64_MAX), kHost);
}

TEST(RoutedExpertsPath, TheDeviceGemmTakesPromptsPastTheGemvWhereItIsOn) {
  // Mixtral's prompts: the host way without it, the device GEMM with it; decode stays on the GEMV.
  EXPECT_EQ(choose_routed_experts_path(batch(65, 2, 8, 4096, 14336), kDefaultMoeGemvMacsPerExpert, false), kHost);
  EXPECT_EQ(choose_routed_experts_path(batch(65, 2, 8, 4096, 14336), kDefaultMoeGemvMacsPerExpert, true), kGemm);
  EXPECT_EQ(choose_routed_experts_path(batch(64, 2, 8, 4096, 14336), 0, true), kGemv);
  // Under the GEMV's budget the GEMV still runs a prompt.
  EXPECT_EQ(choose_routed_experts_path(batch(512, 8, 128, 2048, 768), kDefaultMoeGemvMacsPerExpert, true), kGemv);
  EXPECT_EQ(choose_routed_experts_path(batch(512, 8, 128, 2048, 768), 0, true), kGemm);
  // Float experts the GEMM stages (F16, BF16) take it for prompts, not for decode-sized batches
  // (the host way's float GEMV keeps their f32 activations there).
  RoutedExpertsBatch halves = batch(200, 2, 8, 64, 64);
  halves.gemv_types = false;
  EXPECT_EQ(choose_routed_experts_path(halves, INT64_MAX, true), kGemm);
  EXPECT_EQ(choose_routed_experts_path(halves, INT64_MAX, false), kHost);
  halves.tokens = 8;
  EXPECT_EQ(choose_routed_experts_path(halves, INT64_MAX, true), kHost);
  // Experts it does not stage (F32, or widths not a multiple of 32), and too many experts.
  RoutedExpertsBatch unstaged = batch(200, 2, 8, 64, 64);
  unstaged.gemm_types = false;
  EXPECT_EQ(choose_routed_experts_path(unstaged, 0, true), kHost);
  EXPECT_EQ(choose_routed_experts_path(batch(200, 2, kMaxDeviceRoutedExperts + 1, 64, 64), 0, true), kHost);
}

}  // namespace
}  // namespace lumen::backend::cuda
