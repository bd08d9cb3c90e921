#include "sampling/stopping.h"

#include <gtest/gtest.h>

#include <vector>

namespace lumen::sampling {
namespace {

SamplingParams params(int64_t max_tokens, int64_t min_tokens = 0) {
  SamplingParams p;
  p.max_tokens = max_tokens;
  p.min_tokens = min_tokens;
  p.stop_token_ids = {7, 9};
  return p;
}

const std::vector<int32_t> kEos = {2};

TEST(TokenStopCondition, StopIdsAndEosStop) {
  TokenStopCondition a(params(10), kEos);
  EXPECT_EQ(a.check(5), std::nullopt);
  EXPECT_EQ(a.check(9), FinishReason::Stop);
  TokenStopCondition b(params(10), kEos);
  EXPECT_EQ(b.check(2), FinishReason::Stop);
}

TEST(TokenStopCondition, IgnoreEosKeepsGoingButStopIdsStillStop) {
  SamplingParams p = params(10);
  p.ignore_eos = true;
  TokenStopCondition c(p, kEos);
  EXPECT_EQ(c.check(2), std::nullopt);
  EXPECT_EQ(c.check(7), FinishReason::Stop);
}

TEST(TokenStopCondition, MaxTokensIsLengthAndStopWinsATie) {
  TokenStopCondition c(params(3), kEos);
  EXPECT_EQ(c.check(1), std::nullopt);
  EXPECT_EQ(c.check(1), std::nullopt);
  EXPECT_EQ(c.check(1), FinishReason::Length);
  TokenStopCondition d(params(1), kEos);
  EXPECT_EQ(d.check(7), FinishReason::Stop);
}

TEST(TokenStopCondition, TheFirstMinTokensNeverStop) {
  TokenStopCondition c(params(10, 2), kEos);
  EXPECT_FALSE(c.past_min_tokens());
  EXPECT_EQ(c.check(2), std::nullopt);  // 1st
  EXPECT_EQ(c.check(7), std::nullopt);  // 2nd
  EXPECT_TRUE(c.past_min_tokens());
  EXPECT_EQ(c.check(2), FinishReason::Stop);  // 3rd
  EXPECT_EQ(c.n_generated(), 3);
}

}  // namespace
}  // namespace lumen::sampling
