// Statistical tests: each sampler, and the whole chain, draws tokens with the probabilities its
// definition gives (reference_chain.h computes them independently, in double precision with full
// sorts). Fixed seeds; Pearson's chi-square at p = 1e-4 (chi_square.h); and every token the
// definition excludes must never be drawn.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "chi_square.h"
#include "reference_chain.h"
#include "sampling/sampler.h"

namespace lumen::sampling {
namespace {

using testing::chi_square_fit;
using testing::reference_distribution;
using testing::reference_processed;
using testing::to_double;

struct Case {
  std::vector<float> logits;
  SamplingParams params;
  std::vector<int32_t> prompt = {};
  std::vector<int32_t> output = {};  // accepted before drawing (for the penalties)
  int draws = 20000;
};

// Draws `draws` tokens from one sampler (without accepting them, so that the distribution stays
// fixed) and checks them against the reference.
void expect_follows_definition(const Case& c) {
  Sampler sampler(c.params, c.prompt);
  for (int32_t t : c.output) sampler.accept(t);
  const std::vector<double> expected = reference_distribution(
      reference_processed(to_double(c.logits), c.params, c.prompt, c.output), c.params);
  std::vector<int64_t> counts(c.logits.size(), 0);
  for (int i = 0; i < c.draws; ++i) {
    const int32_t token = sampler.sample(c.logits).token;
    ASSERT_GE(token, 0);
    ASSERT_LT(static_cast<size_t>(token), c.logits.size());
    ++counts[static_cast<size_t>(token)];
  }
  size_t excluded = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    if (expected[i] == 0.0) {
      ++excluded;
      EXPECT_EQ(counts[i], 0) << "token " << i << " is excluded by the definition but was drawn";
    }
  }
  const testing::FitResult fit = chi_square_fit(counts, expected);
  EXPECT_TRUE(fit.passes()) << fit.describe();
  // The test must be able to see something: at least two tokens in play.
  EXPECT_GE(fit.dof, 1);
  ::testing::Test::RecordProperty("excluded_tokens", static_cast<int>(excluded));
}

const std::vector<float> kTwelve = {1.0f, 2.0f,  0.5f, -1.0f, 3.0f, 2.5f,
                                    0.0f, -0.5f, 1.5f, -2.0f, 0.8f, 2.2f};

std::vector<float> twenty_distinct() {
  std::vector<float> z;
  for (int i = 0; i < 20; ++i)
    z.push_back(std::sin(static_cast<float>(i) * 1.7f) * 2.5f + 0.05f * static_cast<float>(i));
  return z;
}

// A language-model-like row: Gaussian body, a few peaks; `vocab` not a multiple of the block.
std::vector<float> big_row(size_t vocab, float sd, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> body(0.0f, sd);
  std::vector<float> z(vocab);
  for (float& v : z) v = body(rng);
  for (size_t i = 0; i < 5; ++i) z[(i * 977 + 13) % vocab] += 3.0f + static_cast<float>(i);
  return z;
}

SamplingParams with_temperature(float t, uint64_t seed) {
  SamplingParams p;
  p.temperature = t;
  p.seed = seed;
  return p;
}

TEST(SamplerDistribution, TemperatureOnly) {
  for (float t : {0.5f, 1.0f, 1.7f}) {
    SCOPED_TRACE(t);
    expect_follows_definition({kTwelve, with_temperature(t, 11)});
  }
}

TEST(SamplerDistribution, TemperatureOverManyBlocks) {
  // 601 tokens: the draw walks block sums, then a block, and the last block is partial.
  Case c{big_row(601, 1.0f, 5), with_temperature(1.3f, 12)};
  c.draws = 20000;
  expect_follows_definition(c);
}

TEST(SamplerDistribution, TopK) {
  SamplingParams p = with_temperature(0.6f, 13);
  p.top_k = 5;
  expect_follows_definition({twenty_distinct(), p});
  p.temperature = 1.5f;
  expect_follows_definition({twenty_distinct(), p});
}

TEST(SamplerDistribution, TopKLargerThanTheVocabularyKeepsEverything) {
  SamplingParams p = with_temperature(1.0f, 14);
  p.top_k = 100;
  expect_follows_definition({kTwelve, p});
}

TEST(SamplerDistribution, TopP) {
  SamplingParams p = with_temperature(0.6f, 15);
  p.top_p = 0.9f;
  expect_follows_definition({twenty_distinct(), p});
  p.temperature = 1.5f;
  p.top_p = 0.75f;
  expect_follows_definition({twenty_distinct(), p});
}

TEST(SamplerDistribution, TopPWithANucleusOfHundreds) {
  // A flat row: the nucleus holds hundreds of tokens, so the partial selection needs several
  // rounds, and the early drop of tokens below (1 - p) / vocab has work to do.
  SamplingParams p = with_temperature(1.0f, 16);
  p.top_p = 0.9f;
  Case c{big_row(601, 0.5f, 6), p};
  c.draws = 20000;
  expect_follows_definition(c);
}

TEST(SamplerDistribution, MinP) {
  SamplingParams p = with_temperature(0.6f, 17);
  p.min_p = 0.08f;
  expect_follows_definition({twenty_distinct(), p});
  // Temperature comes first: at T = 2 the same min_p keeps more tokens.
  p.temperature = 2.0f;
  expect_follows_definition({twenty_distinct(), p});
}

TEST(SamplerDistribution, MinPOverALargeRow) {
  SamplingParams p = with_temperature(1.0f, 18);
  p.min_p = 0.02f;
  Case c{big_row(601, 1.0f, 7), p};
  c.draws = 20000;
  expect_follows_definition(c);
}

TEST(SamplerDistribution, Typical) {
  SamplingParams p = with_temperature(0.7f, 19);
  p.typical_p = 0.8f;
  expect_follows_definition({twenty_distinct(), p});
  p.temperature = 1.5f;
  p.typical_p = 0.6f;
  expect_follows_definition({twenty_distinct(), p});
}

TEST(SamplerDistribution, TypicalOverALargeRow) {
  SamplingParams p = with_temperature(1.0f, 20);
  p.typical_p = 0.5f;
  Case c{big_row(601, 1.0f, 8), p};
  c.draws = 20000;
  expect_follows_definition(c);
}

TEST(SamplerDistribution, LogitBias) {
  SamplingParams p = with_temperature(1.0f, 21);
  p.logit_bias = {{0, 2.0f}, {4, -3.0f}, {9, -std::numeric_limits<float>::infinity()}, {7, 1.5f}};
  expect_follows_definition({kTwelve, p});
}

TEST(SamplerDistribution, Penalties) {
  SamplingParams p = with_temperature(1.0f, 22);
  p.repetition_penalty = 1.6f;
  p.frequency_penalty = 0.4f;
  p.presence_penalty = 0.3f;
  expect_follows_definition({kTwelve, p, {4, 5, 6, 3}, {4, 4, 11, 2}});
  p.penalty_last_n = 3;  // only the last three of prompt + output (4, 11, 2) count
  p.seed = 23;
  expect_follows_definition({kTwelve, p, {4, 5, 6, 3}, {4, 4, 11, 2}});
}

TEST(SamplerDistribution, TheWholeChain) {
  SamplingParams p = with_temperature(0.8f, 24);
  p.logit_bias = {{3, 1.0f}, {17, -2.0f}};
  p.repetition_penalty = 1.3f;
  p.frequency_penalty = 0.2f;
  p.presence_penalty = 0.1f;
  p.top_k = 12;
  p.top_p = 0.92f;
  p.min_p = 0.03f;
  p.typical_p = 0.9f;
  std::vector<float> z = twenty_distinct();
  for (int i = 0; i < 10; ++i) z.push_back(std::cos(static_cast<float>(i)) * 2.0f);
  expect_follows_definition({z, p, {1, 2, 3, 9}, {9, 12, 9}});
}

TEST(SamplerDistribution, TheWholeChainOverALargeRow) {
  SamplingParams p = with_temperature(1.1f, 25);
  p.top_p = 0.8f;
  p.min_p = 0.01f;
  p.typical_p = 0.9f;
  p.repetition_penalty = 1.2f;
  Case c{big_row(601, 0.9f, 9), p, {13, 590, 300}, {13}};
  c.draws = 20000;
  expect_follows_definition(c);
}

}  // namespace
}  // namespace lumen::sampling
