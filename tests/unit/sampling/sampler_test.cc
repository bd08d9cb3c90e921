#include "sampling/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace lumen::sampling {
namespace {

TEST(Sampler, GreedyAtTemperatureZero) {
  Sampler sampler({.temperature = 0.0f});
  std::vector<float> logits = {0.1f, 2.0f, 2.0f, -1.0f};
  EXPECT_EQ(sampler.sample(logits), 1);  // the lowest index among equals
}

TEST(Sampler, TopKOneIsGreedy) {
  Sampler sampler({.temperature = 1.0f, .top_k = 1, .top_p = 1.0f, .seed = 3});
  std::vector<float> logits = {0.5f, 0.1f, 3.0f, 2.9f};
  for (int i = 0; i < 50; ++i) EXPECT_EQ(sampler.sample(logits), 2);
}

TEST(Sampler, SameSeedSameDraws) {
  std::vector<float> logits = {1.0f, 1.1f, 0.9f, 1.2f, 0.3f};
  Sampler a({.temperature = 1.0f, .top_k = 0, .top_p = 1.0f, .seed = 42});
  Sampler b({.temperature = 1.0f, .top_k = 0, .top_p = 1.0f, .seed = 42});
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.sample(logits), b.sample(logits));
}

// Draw frequencies follow softmax(logits / T) restricted to the nucleus: a chi-square test with a
// fixed seed (the statistic is deterministic; the bound is the 99.9% point for 3 degrees).
TEST(Sampler, DrawsFollowTheTruncatedSoftmax) {
  std::vector<float> logits = {2.0f, 1.0f, 0.5f, 0.0f, -3.0f};
  const float t = 0.7f;
  Sampler sampler({.temperature = t, .top_k = 4, .top_p = 1.0f, .seed = 7});
  std::vector<double> p(4);
  double total = 0;
  for (size_t i = 0; i < 4; ++i) total += p[i] = std::exp(logits[i] / t);
  std::vector<int> counts(5, 0);
  const int n = 20000;
  for (int i = 0; i < n; ++i) counts[static_cast<size_t>(sampler.sample(logits))]++;
  EXPECT_EQ(counts[4], 0);  // outside the top 4
  double chi2 = 0;
  for (size_t i = 0; i < 4; ++i) {
    double expected = n * p[i] / total;
    chi2 += (counts[i] - expected) * (counts[i] - expected) / expected;
  }
  EXPECT_LT(chi2, 16.27);
}

TEST(Sampler, TopPKeepsTheSmallestNucleus) {
  // Probabilities ~0.64, 0.24, 0.09, 0.03: top_p 0.8 keeps the first two.
  std::vector<float> logits = {3.0f, 2.0f, 1.0f, 0.0f};
  Sampler sampler({.temperature = 1.0f, .top_k = 0, .top_p = 0.8f, .seed = 1});
  for (int i = 0; i < 2000; ++i) EXPECT_LT(sampler.sample(logits), 2);
}

}  // namespace
}  // namespace lumen::sampling
