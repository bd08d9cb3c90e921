// The Sampler's behaviour apart from its distributions (sampler_distribution_test.cc): greedy,
// seeds and determinism, reported log-probabilities, masks and min_tokens, errors.
#include "sampling/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <set>
#include <vector>

#include "util/error.h"

namespace lumen::sampling {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

SamplingParams at(float temperature, std::optional<uint64_t> seed = 1) {
  SamplingParams p;
  p.temperature = temperature;
  p.seed = seed;
  return p;
}

std::vector<float> random_logits(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> z(n);
  for (float& v : z) v = normal(rng);
  return z;
}

TEST(Sampler, GreedyIsTheArgmaxWithTheLowestIdAmongEquals) {
  Sampler sampler(at(0.0f));
  const std::vector<float> z = {0.1f, 2.0f, 2.0f, -1.0f};
  EXPECT_EQ(sampler.sample(z).token, 1);
  EXPECT_EQ(argmax(z), 1);
}

TEST(Sampler, GreedyMatchesArgmaxOnLargeRows) {
  Sampler sampler(at(0.0f));
  for (uint64_t seed = 0; seed < 20; ++seed) {
    const std::vector<float> z = random_logits(49152, seed);
    const auto expected = static_cast<int32_t>(std::max_element(z.begin(), z.end()) - z.begin());
    EXPECT_EQ(sampler.sample(z).token, expected);
  }
}

TEST(Sampler, TopKOneIsGreedy) {
  SamplingParams p = at(1.0f, 3);
  p.top_k = 1;
  Sampler sampler(p);
  const std::vector<float> z = {0.5f, 0.1f, 3.0f, 2.9f};
  for (int i = 0; i < 50; ++i) EXPECT_EQ(sampler.sample(z).token, 2);
}

// Draws with feedback: each token is accepted and changes the next row, as in generation.
std::vector<int32_t> generate(Sampler& sampler, int n, SamplerWorkspace* workspace = nullptr) {
  std::vector<int32_t> out;
  std::vector<float> z = random_logits(1000, 99);
  for (int i = 0; i < n; ++i) {
    const int32_t t = workspace ? sampler.sample(z, *workspace).token : sampler.sample(z).token;
    sampler.accept(t);
    out.push_back(t);
    z[static_cast<size_t>(t)] -= 1.0f;
    z[static_cast<size_t>((t * 7 + 3) % 1000)] += 0.5f;
  }
  return out;
}

SamplingParams busy_params(uint64_t seed) {
  SamplingParams p = at(0.9f, seed);
  p.top_k = 50;
  p.top_p = 0.95f;
  p.min_p = 0.01f;
  p.repetition_penalty = 1.1f;
  p.frequency_penalty = 0.2f;
  return p;
}

TEST(Sampler, SameSeedSameSequence) {
  Sampler a(busy_params(42)), b(busy_params(42));
  EXPECT_EQ(generate(a, 300), generate(b, 300));
}

TEST(Sampler, DifferentSeedsDiffer) {
  Sampler a(busy_params(42)), b(busy_params(43));
  EXPECT_NE(generate(a, 300), generate(b, 300));
}

// What else is sampled, and in which workspace, changes nothing: a request sampled alone gives
// the same tokens as when it is sampled in turn with 15 others sharing one workspace (as a
// batch of 16 would be).
TEST(Sampler, ARequestsTokensDoNotDependOnItsNeighbours) {
  Sampler alone(busy_params(7));
  const std::vector<int32_t> expected = generate(alone, 100);

  Sampler watched(busy_params(7));
  std::vector<Sampler> others;
  for (uint64_t i = 0; i < 15; ++i) {
    SamplingParams p = busy_params(100 + i);
    p.top_k = static_cast<int32_t>(i * 10);  // assorted configurations
    p.typical_p = i % 2 ? 0.8f : 1.0f;
    p.logprobs = static_cast<int32_t>(i);
    others.emplace_back(p);
  }
  SamplerWorkspace shared;
  std::vector<float> z = random_logits(1000, 99);
  const std::vector<float> noise = random_logits(1000, 5);
  std::vector<int32_t> got;
  for (int step = 0; step < 100; ++step) {
    for (size_t i = 0; i < others.size(); ++i) {
      others[i].accept(others[i].sample(noise, shared).token);
    }
    const int32_t t = watched.sample(z, shared).token;
    watched.accept(t);
    got.push_back(t);
    z[static_cast<size_t>(t)] -= 1.0f;
    z[static_cast<size_t>((t * 7 + 3) % 1000)] += 0.5f;
  }
  EXPECT_EQ(got, expected);
}

TEST(Sampler, WithoutASeedEachSamplerDrawsItsOwn) {
  SamplingParams p = at(1.0f, std::nullopt);
  Sampler a(p), b(p);
  EXPECT_NE(a.seed(), b.seed());  // 64-bit seeds from std::random_device
  const std::vector<float> flat(1000, 0.0f);
  std::vector<int32_t> da, db;
  for (int i = 0; i < 50; ++i) {
    da.push_back(a.sample(flat).token);
    db.push_back(b.sample(flat).token);
  }
  EXPECT_NE(da, db);
  // And the seed it reports reproduces it.
  Sampler replay(at(1.0f, a.seed()));
  for (int32_t t : da) EXPECT_EQ(replay.sample(flat).token, t);
}

TEST(Sampler, LogprobsAreTheLogSoftmaxOfTheProcessedLogits) {
  SamplingParams p = at(0.7f, 5);
  p.logprobs = 3;
  p.logit_bias = {{1, -kInf}};
  Sampler sampler(p);
  const std::vector<float> z = {1.0f, 4.0f, 2.0f, 2.0f, -1.0f, 0.5f};
  double total = 0.0;
  for (size_t i = 0; i < z.size(); ++i) {
    if (i != 1) total += std::exp(static_cast<double>(z[i]));
  }
  for (int i = 0; i < 100; ++i) {
    const SampleResult r = sampler.sample(z);
    ASSERT_NE(r.token, 1);  // banned
    EXPECT_NEAR(r.logprob, z[static_cast<size_t>(r.token)] - std::log(total), 1e-5);
    // Top 3 of the processed logits (at temperature 1): tokens 2 and 3 (tie: lower id first), then
    // 0.
    ASSERT_EQ(r.top.size(), 3u);
    EXPECT_EQ(r.top[0].token, 2);
    EXPECT_EQ(r.top[1].token, 3);
    EXPECT_EQ(r.top[2].token, 0);
    EXPECT_NEAR(r.top[0].logprob, 2.0 - std::log(total), 1e-5);
    EXPECT_EQ(r.top[0].logprob, r.top[1].logprob);
  }
}

TEST(Sampler, LogprobsZeroGivesTheChosenTokenOnlyAndAbsentGivesNothing) {
  SamplingParams p = at(0.0f);
  p.logprobs = 0;
  const std::vector<float> z = {0.0f, std::log(3.0f)};
  const SampleResult r = Sampler(p).sample(z);
  EXPECT_EQ(r.token, 1);
  EXPECT_NEAR(r.logprob, std::log(0.75), 1e-6);
  EXPECT_TRUE(r.top.empty());
  p.logprobs.reset();
  const SampleResult none = Sampler(p).sample(z);
  EXPECT_TRUE(std::isnan(none.logprob));
  EXPECT_TRUE(none.top.empty());
}

TEST(Sampler, TwentyAlternatives) {
  SamplingParams p = at(1.0f, 9);
  p.logprobs = 20;
  const std::vector<float> z = random_logits(5000, 4);
  const SampleResult r = Sampler(p).sample(z);
  ASSERT_EQ(r.top.size(), 20u);
  std::vector<float> sorted = z;
  std::sort(sorted.begin(), sorted.end(), std::greater<>());
  for (size_t i = 0; i < 20; ++i) {
    EXPECT_EQ(z[static_cast<size_t>(r.top[i].token)], sorted[i]);
    if (i > 0) {
      EXPECT_LE(r.top[i].logprob, r.top[i - 1].logprob);
    }
  }
}

// Bans the even tokens and records what it was told.
class NoEvenTokens : public LogitMask {
 public:
  explicit NoEvenTokens(std::vector<int32_t>* accepted) : accepted_(accepted) {}
  void apply(std::span<float> logits) override {
    for (size_t i = 0; i < logits.size(); i += 2) logits[i] = -kInf;
  }
  void accept(int32_t token) override { accepted_->push_back(token); }

 private:
  std::vector<int32_t>* accepted_;
};

TEST(Sampler, TheMaskHookRemovesTokensAfterBiasAndPenalties) {
  std::vector<int32_t> accepted;
  SamplingParams p = at(1.0f, 2);
  p.logit_bias = {{4, 50.0f}};  // a mask beats any bias
  p.logprobs = 2;
  Sampler sampler(p);
  sampler.set_mask(std::make_unique<NoEvenTokens>(&accepted));
  const std::vector<float> z = random_logits(64, 3);
  for (int i = 0; i < 500; ++i) {
    const SampleResult r = sampler.sample(z);
    ASSERT_EQ(r.token % 2, 1);
    for (const TokenLogprob& t : r.top) ASSERT_EQ(t.token % 2, 1);
    sampler.accept(r.token);
  }
  EXPECT_EQ(accepted.size(), 500u);
  SamplingParams greedy = at(0.0f);
  Sampler g(greedy);
  g.set_mask(std::make_unique<NoEvenTokens>(&accepted));
  EXPECT_EQ(g.sample(std::vector<float>{9.0f, 1.0f, 8.0f, 2.0f}).token, 3);
}

TEST(Sampler, MinTokensMasksStopAndEndTokensUntilReached) {
  SamplingParams p = at(0.0f);
  p.min_tokens = 3;
  p.stop_token_ids = {2};
  const std::vector<int32_t> eos = {0};
  Sampler sampler(p, {}, eos);
  const std::vector<float> z = {5.0f, 1.0f, 4.0f, 3.0f};  // EOS first, then the stop id
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(sampler.sample(z).token, 3) << i;
    sampler.accept(3);
  }
  EXPECT_EQ(sampler.sample(z).token, 0);  // min_tokens reached: EOS is allowed again

  p.ignore_eos = true;  // EOS is then an ordinary token: not masked; stop ids still are
  Sampler ignoring(p, {}, eos);
  EXPECT_EQ(ignoring.sample(z).token, 0);
  std::vector<float> z2 = {-kInf, 1.0f, 4.0f, 3.0f};
  EXPECT_EQ(ignoring.sample(z2).token, 3);
}

TEST(Sampler, EverythingMaskedIsAnError) {
  SamplingParams p = at(1.0f);
  p.logit_bias = {{0, -kInf}, {1, -kInf}};
  Sampler sampler(p);
  EXPECT_THROW(sampler.sample(std::vector<float>{1.0f, 2.0f}), Error);
  EXPECT_THROW(sampler.sample(std::vector<float>{}), Error);
  EXPECT_THROW(Sampler(at(0.0f)).sample(std::vector<float>{kInf, 1.0f}), Error);
}

TEST(Sampler, InvalidParamsAreRefused) {
  EXPECT_THROW(Sampler(at(-1.0f)), Error);
  SamplingParams p = at(1.0f);
  p.logit_bias = {{3, 1.0f}};
  Sampler sampler(p);
  EXPECT_THROW(sampler.sample(std::vector<float>{1.0f, 2.0f}), Error);  // bias beyond the row
  EXPECT_THROW(sampler.accept(-1), Error);
}

TEST(Sampler, ATinyTemperatureActsLikeGreedyWithoutNan) {
  SamplingParams p = at(1e-30f, 8);
  Sampler sampler(p);
  const std::vector<float> z = {1.0f, 3.0f, 2.999f, -kInf};
  for (int i = 0; i < 100; ++i) EXPECT_EQ(sampler.sample(z).token, 1);
}

}  // namespace
}  // namespace lumen::sampling

namespace lumen::sampling {
namespace {

// Greedy sampling's shortcut (engine/reduced_rows.h): a sampler that needs only the argmax says
// so, and sample_argmax then answers exactly as sample() would from the whole row.
TEST(SamplerArgmax, OnlyAPlainGreedySamplerNeedsJustTheArgmax) {
  EXPECT_TRUE(Sampler(at(0.0f)).needs_only_argmax());
  EXPECT_FALSE(Sampler(at(0.7f)).needs_only_argmax());
  SamplingParams biased = at(0.0f);
  biased.logit_bias = {{3, 1.0f}};
  EXPECT_FALSE(Sampler(biased).needs_only_argmax());
  SamplingParams penalized = at(0.0f);
  penalized.repetition_penalty = 1.1f;
  EXPECT_FALSE(Sampler(penalized).needs_only_argmax());
  SamplingParams with_logprobs = at(0.0f);
  with_logprobs.logprobs = 0;
  EXPECT_FALSE(Sampler(with_logprobs).needs_only_argmax());
  std::vector<int32_t> accepted;
  Sampler masked(at(0.0f));
  masked.set_mask(std::make_unique<NoEvenTokens>(&accepted));
  EXPECT_FALSE(masked.needs_only_argmax());

  // min_tokens bans the end-of-generation ids until reached: the whole row until then.
  SamplingParams min_tokens = at(0.0f);
  min_tokens.min_tokens = 2;
  const std::vector<int32_t> eos = {0};
  Sampler banning(min_tokens, {}, eos);
  EXPECT_FALSE(banning.needs_only_argmax());
  banning.accept(5);
  EXPECT_FALSE(banning.needs_only_argmax());
  banning.accept(6);
  EXPECT_TRUE(banning.needs_only_argmax());
  // With nothing to ban (ignore_eos and no stop ids) min_tokens changes no logit.
  min_tokens.ignore_eos = true;
  EXPECT_TRUE(Sampler(min_tokens, {}, eos).needs_only_argmax());
}

TEST(SamplerArgmax, TheArgmaxGivesWhatTheRowGives) {
  Sampler sampler(at(0.0f));
  for (uint64_t seed = 0; seed < 20; ++seed) {
    std::vector<float> z = random_logits(4096, seed);
    if (seed % 2 == 0) z[17] = z[4000] = 100.0f;  // a tie: the lower id
    const int32_t token = argmax(z);
    const SampleResult shortcut = sampler.sample_argmax(token, z[static_cast<size_t>(token)]);
    const SampleResult whole = sampler.sample(z);
    EXPECT_EQ(shortcut.token, whole.token);
    EXPECT_TRUE(std::isnan(shortcut.logprob));
    EXPECT_TRUE(shortcut.top.empty());
  }
}

TEST(SamplerArgmax, RefusesWhatSampleRefusesAndSamplersThatNeedTheRow) {
  Sampler sampler(at(0.0f));
  EXPECT_THROW(sampler.sample_argmax(0, -kInf), Error);  // every token masked
  EXPECT_THROW(sampler.sample_argmax(2, kInf), Error);   // +inf in the row
  EXPECT_THROW(sampler.sample_argmax(-1, 1.0f), Error);
  Sampler sampling(at(1.0f));
  EXPECT_THROW(sampling.sample_argmax(0, 1.0f), Error);
}

}  // namespace
}  // namespace lumen::sampling
