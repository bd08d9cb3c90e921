#include "sampling/sampling_params.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "util/error.h"

namespace lumen::sampling {
namespace {

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(SamplingParams, DefaultsAreValidAndNeutral) {
  SamplingParams p;
  EXPECT_NO_THROW(p.validate());
  EXPECT_FALSE(p.has_penalties());
  EXPECT_EQ(p.temperature, 1.0f);
  EXPECT_EQ(p.top_p, 1.0f);
}

// Each case breaks one field; the error must name it.
TEST(SamplingParams, OutOfRangeValuesAreRefusedWithTheFieldNamed) {
  const std::vector<std::pair<std::string, std::function<void(SamplingParams&)>>> cases = {
      {"temperature", [](SamplingParams& p) { p.temperature = -0.5f; }},
      {"temperature", [](SamplingParams& p) { p.temperature = kNan; }},
      {"temperature", [](SamplingParams& p) { p.temperature = kInf; }},
      {"top_k", [](SamplingParams& p) { p.top_k = -2; }},
      {"top_p", [](SamplingParams& p) { p.top_p = 0.0f; }},
      {"top_p", [](SamplingParams& p) { p.top_p = 1.5f; }},
      {"top_p", [](SamplingParams& p) { p.top_p = kNan; }},
      {"min_p", [](SamplingParams& p) { p.min_p = -0.1f; }},
      {"min_p", [](SamplingParams& p) { p.min_p = 1.1f; }},
      {"typical_p", [](SamplingParams& p) { p.typical_p = 0.0f; }},
      {"repetition_penalty", [](SamplingParams& p) { p.repetition_penalty = 0.0f; }},
      {"repetition_penalty", [](SamplingParams& p) { p.repetition_penalty = kInf; }},
      {"frequency_penalty", [](SamplingParams& p) { p.frequency_penalty = 2.5f; }},
      {"presence_penalty", [](SamplingParams& p) { p.presence_penalty = -3.0f; }},
      {"penalty_last_n", [](SamplingParams& p) { p.penalty_last_n = -2; }},
      {"logit_bias",
       [](SamplingParams& p) {
         p.logit_bias = {{5, 101.0f}};
       }},
      {"logit_bias",
       [](SamplingParams& p) {
         p.logit_bias = {{5, kInf}};
       }},
      {"logit_bias",
       [](SamplingParams& p) {
         p.logit_bias = {{5, kNan}};
       }},
      {"logit_bias",
       [](SamplingParams& p) {
         p.logit_bias = {{-1, 1.0f}};
       }},
      {"max_tokens", [](SamplingParams& p) { p.max_tokens = 0; }},
      {"min_tokens", [](SamplingParams& p) { p.min_tokens = -1; }},
      {"min_tokens", [](SamplingParams& p) { p.min_tokens = p.max_tokens + 1; }},
      {"stop strings",
       [](SamplingParams& p) {
         p.stop = {"ok", ""};
       }},
      {"stop_token_ids", [](SamplingParams& p) { p.stop_token_ids = {-4}; }},
      {"logprobs", [](SamplingParams& p) { p.logprobs = 21; }},
      {"logprobs", [](SamplingParams& p) { p.logprobs = -1; }},
      {"prompt_logprobs", [](SamplingParams& p) { p.prompt_logprobs = 25; }},
      {"n must", [](SamplingParams& p) { p.n = 0; }},
      {"best_of",
       [](SamplingParams& p) {
         p.n = 3;
         p.best_of = 2;
       }},
      {"length_penalty", [](SamplingParams& p) { p.length_penalty = kNan; }},
  };
  for (const auto& [field, breaks] : cases) {
    SamplingParams p;
    breaks(p);
    try {
      p.validate();
      ADD_FAILURE() << field << ": no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  }
}

TEST(SamplingParams, EdgeValuesAreAccepted) {
  SamplingParams p;
  p.temperature = 0.0f;
  p.top_k = -1;
  p.top_p = 1.0f;
  p.min_p = 1.0f;
  p.typical_p = 1.0f;
  p.frequency_penalty = -2.0f;
  p.presence_penalty = 2.0f;
  p.logit_bias = {{0, -100.0f}, {1, 100.0f}, {2, -kInf}};
  p.min_tokens = p.max_tokens;
  p.logprobs = 20;
  p.prompt_logprobs = 0;
  EXPECT_NO_THROW(p.validate());
}

TEST(SamplingParams, TokenIdsAreCheckedAgainstTheVocabulary) {
  SamplingParams p;
  p.logit_bias = {{99, 1.0f}};
  EXPECT_NO_THROW(p.validate_for_vocab(100));
  EXPECT_THROW(p.validate_for_vocab(99), Error);
  p.logit_bias.clear();
  p.stop_token_ids = {100};
  EXPECT_THROW(p.validate_for_vocab(100), Error);
}

TEST(SamplingParams, PenaltiesAreOnlyActiveWithAWindow) {
  SamplingParams p;
  p.presence_penalty = 0.5f;
  EXPECT_TRUE(p.has_penalties());
  p.penalty_last_n = 0;
  EXPECT_FALSE(p.has_penalties());
}

}  // namespace
}  // namespace lumen::sampling
