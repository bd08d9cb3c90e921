// Losslessness of speculative sampling on the real default model: the first three tokens sampled
// with n-gram drafts follow the same joint distribution as those sampled without, by a
// two-sample chi-square test over disjoint seeds (false-failure probability about 1e-6). The
// synthetic-model test in tests/unit/engine shows the same statistic catches a verifier that
// over-accepts; this one shows the real model's rows, the real sampler chain and the engine's
// verification together keep the distribution.
#include <gtest/gtest.h>

#include <map>

#include "engine_fixture.h"
#include "two_sample_chi_square.h"

namespace lumen {
namespace {

class EngineSpeculativeDistribution : public testing::EngineModelTest {
 protected:
  static constexpr size_t kRuns = 400;      // per arm
  static constexpr size_t kWave = 128;      // requests at once: 128 x (1 + 2) rows fit the step budget
  static constexpr int64_t kOutTokens = 3;  // the first comes from the prompt's row, two from verification

  // A request to repeat a passage whose answer has already begun: the prompt's tail matches the
  // passage, so drafts are proposed from the first generated token on. Its length is 1 mod the
  // block size, so every request but the first reuses all the prompt's blocks from the prefix
  // cache and computes one row.
  static std::vector<int32_t> prompt(int64_t block_size) {
    for (size_t chars = 300;; ++chars) {
      const std::string passage = std::string(testing::kText).substr(0, chars);
      const std::vector<int32_t> tokens = handle().tokenize(
          "<|im_start|>user\nRepeat the following text exactly.\n\n" + passage +
              "<|im_end|>\n<|im_start|>assistant\nThe lighthouse keeper climbed the",
          {.add_special = true, .parse_special = true});
      if (static_cast<int64_t>(tokens.size()) % block_size == 1) return tokens;
    }
  }

  static SamplingParams sampling(uint64_t seed) {
    SamplingParams p;  // every processor of the chain on
    p.temperature = 1.5f;
    p.top_k = 100;
    p.top_p = 0.98f;
    p.min_p = 0.01f;
    p.presence_penalty = 0.2f;
    p.max_tokens = kOutTokens;
    p.ignore_eos = true;
    p.seed = seed;
    return p;
  }

  // The first tokens of kRuns requests, seeds first_seed onwards.
  static std::vector<std::vector<int32_t>> sample(Engine& engine, const std::vector<int32_t>& p, uint64_t first_seed) {
    // One request alone first, so the prompt's blocks are in the prefix cache before a wave
    // arrives (a wave's requests would otherwise each compute the whole prompt).
    engine.add_request(p, sampling(~uint64_t{0}));
    while (engine.has_unfinished()) engine.step();
    std::vector<std::vector<int32_t>> out;
    for (size_t start = 0; start < kRuns; start += kWave) {
      std::vector<RequestHandle> handles;
      for (size_t i = start; i < std::min(kRuns, start + kWave); ++i) {
        handles.push_back(engine.add_request(p, sampling(first_seed + i)));
      }
      while (engine.has_unfinished()) engine.step();
      for (RequestHandle& h : handles) out.push_back(h.collect().tokens);
    }
    return out;
  }
};

TEST_F(EngineSpeculativeDistribution, SampledTokensFollowThePlainDistribution) {
  EngineConfig plain_config = config(1024);
  EngineConfig speculative_config = plain_config;
  speculative_config.speculative.method = SpeculativeMethod::Ngram;
  speculative_config.speculative.num_speculative_tokens = 2;
  speculative_config.speculative.prompt_lookup_max = 4;
  speculative_config.speculative.prompt_lookup_min = 2;
  speculative_config.speculative.disable_by_batch_size = 0;  // every wave speculates
  const std::vector<int32_t> p = prompt(plain_config.block_size);

  Engine plain(handle(), plain_config);
  Engine speculative(handle(), speculative_config);
  const std::vector<std::vector<int32_t>> without = sample(plain, p, 0);
  const std::vector<std::vector<int32_t>> with = sample(speculative, p, kRuns);  // disjoint seeds

  std::map<std::vector<int32_t>, size_t> cells;
  for (const auto* runs : {&without, &with}) {
    for (const std::vector<int32_t>& tokens : *runs) {
      ASSERT_EQ(tokens.size(), static_cast<size_t>(kOutTokens));
      cells.try_emplace(tokens, cells.size());
    }
  }
  std::vector<int64_t> a(cells.size(), 0), b(cells.size(), 0);
  for (const auto& tokens : without) ++a[cells.at(tokens)];
  for (const auto& tokens : with) ++b[cells.at(tokens)];
  int df = 0;
  const double x2 = testing::homogeneity_statistic(b, a, df);
  std::printf("%zu distinct continuations, df %d, chi-square %.1f (threshold %.1f)\n", cells.size(), df, x2,
              testing::chi_square_threshold(df));
  // The sample spreads over several continuations (else the test would say little) ...
  ASSERT_GE(df, 3);
  EXPECT_LT(x2, testing::chi_square_threshold(df));
  // ... and the drafts were verified: most requests had a draft token accepted.
  const EngineStats s = speculative.stats();
  EXPECT_GT(s.spec_accepted_tokens, kRuns / 2);
  EXPECT_EQ(s.kv_blocks_used, plain.stats().kv_blocks_used);
}

}  // namespace
}  // namespace lumen
