// Each choice of a seeded request draws from its own stream, a mix of (seed, index): choice i
// used to draw from seed + i, so the requests seeded 0 and 1 shared samples.
#include "sampling/seed_stream.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <vector>

#include "sampling/sampler.h"

namespace lumen::sampling {
namespace {

TEST(SeedStream, NoTwoSmallSeedsAndIndicesShareAStream) {
  std::set<uint64_t> seen;
  for (uint64_t seed = 0; seed < 512; ++seed) {
    for (uint64_t index = 0; index < 128; ++index) seen.insert(seed_of_choice(seed, index));
  }
  EXPECT_EQ(seen.size(), 512u * 128u);
  // Neither seed + index nor the seed itself.
  EXPECT_NE(seed_of_choice(0, 1), seed_of_choice(1, 0));
  EXPECT_NE(seed_of_choice(5, 0), 5u);
  // SplitMix64's first output for state 0 (its reference implementation's value).
  EXPECT_EQ(splitmix64(0), 0xe220a8397b1dcdafULL);
}

std::vector<int32_t> draws(uint64_t seed, uint64_t index) {
  SamplingParams p;
  p.temperature = 1.0f;
  p.seed = seed;
  Sampler sampler(std::make_shared<const SamplingSetup>(p), {}, {}, index);
  const std::vector<float> flat(1000, 0.0f);
  std::vector<int32_t> out;
  for (int i = 0; i < 64; ++i) out.push_back(sampler.sample(flat).token);
  return out;
}

TEST(SeedStream, NeighbouringSeedsShareNoChoice) {
  // seed 1's first choice is not seed 0's second, nor any other pair's.
  std::set<std::vector<int32_t>> streams;
  for (uint64_t seed = 0; seed < 4; ++seed) {
    for (uint64_t index = 0; index < 4; ++index) streams.insert(draws(seed, index));
  }
  EXPECT_EQ(streams.size(), 16u);
  // Each is reproducible.
  EXPECT_EQ(draws(1, 0), draws(1, 0));
  EXPECT_EQ(draws(0, 1), draws(0, 1));
}

TEST(SeedStream, TheReportedSeedReplaysAnUnseededChoice) {
  SamplingParams p;
  p.temperature = 1.0f;
  Sampler unseeded(std::make_shared<const SamplingSetup>(p), {}, {}, 3);
  const std::vector<float> flat(1000, 0.0f);
  std::vector<int32_t> got;
  for (int i = 0; i < 64; ++i) got.push_back(unseeded.sample(flat).token);
  EXPECT_EQ(draws(unseeded.seed(), 3), got);
}

}  // namespace
}  // namespace lumen::sampling
