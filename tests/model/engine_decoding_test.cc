// Decoding strategies in the serving engine on the real default model: seeded sampling that
// does not depend on the batch, n > 1 and best_of sharing the prompt's blocks, beam search
// sharing blocks and agreeing with a reference search, and prompt log-probabilities.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "engine_fixture.h"
#include "sampling/beam_search.h"
#include "sampling/logprobs.h"
#include "util/error.h"

namespace lumen {
namespace {

using testing::Case;

class EngineDecoding : public testing::EngineModelTest {
 protected:
  static SamplingParams sampled(int64_t max_tokens, uint64_t seed) {
    SamplingParams p;
    p.temperature = 0.9f;
    p.top_p = 0.95f;
    p.top_k = 50;
    p.max_tokens = max_tokens;
    p.ignore_eos = true;
    p.seed = seed;
    return p;
  }

  static std::vector<int32_t> prompt(size_t offset, size_t length) {
    const auto& text = *text_tokens_;
    return {text.begin() + static_cast<std::ptrdiff_t>(offset),
            text.begin() + static_cast<std::ptrdiff_t>(offset + length)};
  }

  static std::vector<int32_t> drain(RequestHandle& h, std::optional<FinishReason>* finish = nullptr,
                                    std::vector<float>* logprobs = nullptr) {
    std::vector<int32_t> tokens;
    StreamChunk chunk;
    while (h.next(chunk)) {
      for (const GeneratedToken& t : chunk.tokens) {
        tokens.push_back(t.token);
        if (logprobs != nullptr) logprobs->push_back(t.logprob);
      }
      if (chunk.finished && finish != nullptr) *finish = chunk.finish_reason;
    }
    return tokens;
  }

  // Steps until every request has ended and returns the most KV blocks in use after any step.
  static int64_t run_to_end(Engine& engine) {
    int64_t peak = 0;
    while (engine.has_unfinished()) {
      engine.step();
      peak = std::max(peak, engine.stats().kv_blocks_used);
    }
    return peak;
  }

  static EngineConfig uncached(int64_t blocks) {
    EngineConfig c = config(blocks);
    c.enable_prefix_caching = false;  // so that only forks can share blocks
    return c;
  }
};

TEST_F(EngineDecoding, SameSeedGivesTheSameTokensWhateverElseIsInTheBatch) {
  const std::vector<int32_t> mine = prompt(10, 40);
  const SamplingParams params = sampled(48, 1234);
  std::vector<std::vector<int32_t>> outputs;
  for (size_t others : {0u, 3u, 15u}) {
    Engine engine(handle(), config(2048));
    std::vector<RequestHandle> crowd;
    const std::vector<Case> cs = cases(others, 100 + others, 80, 30);
    for (size_t i = 0; i < cs.size(); ++i) {
      crowd.push_back(engine.add_request(cs[i].prompt, sampled(cs[i].max_tokens, 77 + i)));
    }
    RequestHandle h = engine.add_request(mine, params);
    run_to_end(engine);
    outputs.push_back(drain(h));
    ASSERT_EQ(outputs.back().size(), 48u);
  }
  EXPECT_EQ(outputs[1], outputs[0]) << "batch of 4";
  EXPECT_EQ(outputs[2], outputs[0]) << "batch of 16";
  // And the same draws as a sampler over the single-sequence generator's logits.
  engine::SingleSequenceForward gen(*model_, *backend_, 1024);
  sampling::Sampler sampler(params, mine);
  std::vector<int32_t> reference;
  std::span<const float> logits = gen.feed(mine);
  while (reference.size() < 48) {
    const int32_t token = sampler.sample(logits).token;
    sampler.accept(token);
    reference.push_back(token);
    logits = gen.feed(std::span(&token, 1));
  }
  EXPECT_EQ(outputs[0], reference);
}

TEST_F(EngineDecoding, NCompletionsUseThePromptBlocksOnce) {
  // 70 prompt tokens: 4 full blocks and a partial one, computed once and shared by the four
  // completions; each then copies the partial block (copy-on-write) as it writes its first
  // token: 5 + 3 blocks at most, where four separate requests would hold 4 x 5.
  const std::vector<int32_t> p = prompt(0, 70);
  SamplingParams params = sampled(10, 7);
  params.n = 4;
  Engine engine(handle(), uncached(256));
  std::vector<RequestHandle> handles = engine.add_request_n(p, params);
  ASSERT_EQ(handles.size(), 4u);
  const int64_t peak = run_to_end(engine);
  EXPECT_EQ(peak, 8);
  const EngineStats stats = engine.stats();
  EXPECT_EQ(stats.kv_blocks_used, 0);
  EXPECT_EQ(stats.computed_tokens, 70u + 4u * 9u);  // the prompt once, then each decode

  // Completion i draws from seed_of_choice(seed, i) (sampling/seed_stream.h): completion 0 as a
  // request of its own with the same seed, and the same request again gives the same four.
  Engine separate(handle(), uncached(256));
  RequestHandle first_alone = separate.add_request(p, sampled(10, 7));
  std::vector<RequestHandle> again = separate.add_request_n(p, params);
  run_to_end(separate);
  std::set<std::vector<int32_t>> distinct;
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(handles[i].id(), handles[0].id());
    EXPECT_EQ(handles[i].index(), static_cast<int32_t>(i));
    const std::vector<int32_t> got = drain(handles[i]);
    if (i == 0) {
      EXPECT_EQ(got, drain(first_alone));
    }
    EXPECT_EQ(got, drain(again[i])) << "completion " << i;
    distinct.insert(got);
  }
  EXPECT_EQ(distinct.size(), 4u);  // different seeds, different samples
}

TEST_F(EngineDecoding, BestOfDeliversTheCompletionsWithTheHighestMeanLogprob) {
  const std::vector<int32_t> p = prompt(30, 25);
  SamplingParams params = sampled(12, 99);
  params.temperature = 1.2f;  // spread the candidates
  params.n = 2;
  params.best_of = 5;
  Engine engine(handle(), uncached(256));
  std::vector<RequestHandle> handles = engine.add_request_n(p, params);
  ASSERT_EQ(handles.size(), 2u);
  run_to_end(engine);
  std::vector<std::vector<int32_t>> got;
  for (RequestHandle& h : handles) {
    std::vector<float> logprobs;
    got.push_back(drain(h, nullptr, &logprobs));
    for (float lp : logprobs) EXPECT_TRUE(std::isnan(lp));  // not asked for, not reported
  }
  EXPECT_EQ(engine.stats().kv_blocks_used, 0);
  // The five candidates: best_of's choice i draws from seed_of_choice(99, i), as choice i of an
  // n = 5 request with the same seed does; that request reports their log-probabilities.
  struct Candidate {
    std::vector<int32_t> tokens;
    double mean;
  };
  std::vector<Candidate> candidates;
  Engine separate(handle(), uncached(256));
  SamplingParams five = sampled(12, 99);
  five.temperature = 1.2f;
  five.logprobs = 0;
  five.n = 5;
  std::vector<RequestHandle> alone = separate.add_request_n(p, five);
  run_to_end(separate);
  for (RequestHandle& h : alone) {
    std::vector<float> logprobs;
    Candidate c{drain(h, nullptr, &logprobs), 0.0};
    for (float lp : logprobs) c.mean += lp;
    c.mean /= static_cast<double>(logprobs.size());
    candidates.push_back(std::move(c));
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) { return a.mean > b.mean; });
  EXPECT_EQ(got[0], candidates[0].tokens);
  EXPECT_EQ(got[1], candidates[1].tokens);
}

// The same search driven by the single-sequence generator: each live beam's logits from a
// fresh forward pass over prompt + beam.
std::vector<sampling::BeamHypothesis> reference_beam_search(engine::LoadedModel& model,
                                                            backend::Backend& backend,
                                                            const std::vector<int32_t>& prompt,
                                                            sampling::BeamSearchConfig config) {
  sampling::BeamSearch search(std::move(config));
  while (!search.done()) {
    std::vector<std::vector<float>> rows;
    for (size_t b = 0; b < search.n_live(); ++b) {
      std::vector<int32_t> tokens = prompt;
      for (const sampling::BeamToken& t : search.live_tokens(b)) tokens.push_back(t.token);
      engine::SingleSequenceForward gen(model, backend, 512);
      const std::span<const float> logits = gen.feed(tokens);
      rows.emplace_back(logits.begin(), logits.end());
    }
    std::vector<std::span<const float>> views(rows.begin(), rows.end());
    search.step(views);
  }
  return search.results();
}

TEST_F(EngineDecoding, BeamSearchAgreesWithAReferenceAndSharesBlocks) {
  const std::vector<int32_t> p = prompt(5, 40);  // 2 full blocks and a partial one
  SamplingParams params;
  params.use_beam_search = true;
  params.n = 3;
  params.best_of = 4;
  params.max_tokens = 10;
  params.length_penalty = 1.0f;
  params.logprobs = 0;
  Engine engine(handle(), uncached(256));
  std::vector<RequestHandle> handles = engine.add_request_n(p, params);
  const int64_t peak = run_to_end(engine);
  EXPECT_EQ(engine.stats().kv_blocks_used, 0);  // nothing leaks
  EXPECT_EQ(engine.stats().running + engine.stats().waiting, 0);
  // Four beams of up to 50 positions (4 blocks each) held alone would need 16 blocks; sharing
  // the prompt's two full blocks and each other's common prefixes needs far fewer.
  EXPECT_LE(peak, 2 + 4 * 2);
  EXPECT_GE(peak, 3);

  sampling::BeamSearchConfig config;
  config.width = 4;
  config.n_results = 3;
  config.length_penalty = 1.0f;
  config.max_tokens = 10;
  config.end_tokens = model_->tokenizer.vocab().end_of_generation;
  const std::vector<sampling::BeamHypothesis> expected =
      reference_beam_search(*model_, *backend_, p, config);
  ASSERT_EQ(expected.size(), 3u);
  for (size_t j = 0; j < 3; ++j) {
    std::optional<FinishReason> finish;
    std::vector<float> logprobs;
    const std::vector<int32_t> got = drain(handles[j], &finish, &logprobs);
    std::vector<int32_t> want;
    for (const sampling::BeamToken& t : expected[j].tokens) want.push_back(t.token);
    EXPECT_EQ(got, want) << "hypothesis " << j;
    EXPECT_EQ(finish, expected[j].finish);
    ASSERT_EQ(logprobs.size(), expected[j].tokens.size());
    for (size_t k = 0; k < logprobs.size(); ++k) EXPECT_EQ(logprobs[k], expected[j].tokens[k].logprob);
  }
}

TEST_F(EngineDecoding, BeamSearchUnderMemoryPressureGivesTheSameHypotheses) {
  const std::vector<int32_t> p = prompt(60, 50);
  SamplingParams params;
  params.use_beam_search = true;
  params.n = 2;
  params.best_of = 3;
  params.max_tokens = 24;
  params.ignore_eos = true;
  auto run = [&](Engine& engine) {
    // Greedy neighbours compete for the blocks.
    for (const Case& c : cases(6, 8, 100, 30)) engine.add_request(c.prompt, greedy(c.max_tokens));
    std::vector<RequestHandle> handles = engine.add_request_n(p, params);
    run_to_end(engine);
    std::vector<std::vector<int32_t>> out;
    for (RequestHandle& h : handles) out.push_back(drain(h));
    return out;
  };
  Engine roomy(handle(), config(1024));
  const auto expected = run(roomy);
  EXPECT_EQ(expected[0].size(), 24u);
  for (const PreemptionMode mode : {PreemptionMode::Recompute, PreemptionMode::Swap}) {
    EngineConfig c = config(30);
    c.preemption_mode = mode;
    Engine tight(handle(), c);
    EXPECT_EQ(run(tight), expected) << (mode == PreemptionMode::Swap ? "swap" : "recompute");
    EXPECT_GT(tight.stats().preemptions, 0u);
    EXPECT_EQ(tight.stats().kv_blocks_used, 0);
  }
}

TEST_F(EngineDecoding, PromptLogprobsMatchTheModelAndAreNeverTakenFromTheCache) {
  const std::vector<int32_t> p = prompt(12, 37);
  SamplingParams params = greedy(2);
  params.prompt_logprobs = 3;
  Engine engine(handle(), config(256));
  // The prompt is in the prefix cache after the first request; the second must still compute
  // (not adopt) every position to have its logits.
  engine.generate({p}, greedy(2));
  const uint64_t computed_before = engine.stats().computed_tokens;
  const std::vector<GenerationResult> results = engine.generate({p}, params);
  EXPECT_EQ(engine.stats().computed_tokens - computed_before, 37u + 1u);
  const std::vector<PromptLogprob>& got = results[0].prompt_logprobs;
  ASSERT_EQ(got.size(), p.size());
  EXPECT_EQ(got[0].token, p[0]);
  EXPECT_TRUE(std::isnan(got[0].logprob));
  // Reference: the generator fed one token at a time.
  engine::SingleSequenceForward gen(*model_, *backend_, 512);
  std::vector<sampling::TokenLogprob> top;
  std::vector<sampling::Candidate> scratch;
  for (size_t i = 1; i < p.size(); ++i) {
    const std::span<const float> logits = gen.feed(std::span(&p[i - 1], 1));
    const float want = sampling::token_logprobs(logits, p[i], 3, top, scratch);
    EXPECT_EQ(got[i].token, p[i]);
    EXPECT_NEAR(got[i].logprob, want, 1e-4f) << "position " << i;
    ASSERT_EQ(got[i].top.size(), 3u);
    for (size_t k = 0; k < 3; ++k) EXPECT_EQ(got[i].top[k].token, top[k].token) << "position " << i;
  }
  // And the generated tokens are those of a request without prompt_logprobs.
  EXPECT_EQ(results[0].tokens, engine.generate({p}, greedy(2))[0].tokens);
}

TEST_F(EngineDecoding, MalformedDecodingRequestsAreRefused) {
  Engine engine(handle(), config(64));
  SamplingParams p = greedy(4);
  p.n = 2;
  EXPECT_THROW(engine.add_request({1, 2}, p), Error);  // one handle cannot carry two
  p.best_of = 1;
  EXPECT_THROW(engine.add_request_n({1, 2}, p), Error);  // best_of < n
  p.best_of.reset();
  p.n = 1000;
  EXPECT_THROW(engine.add_request_n({1, 2}, p), Error);
  SamplingParams beam = greedy(4);
  beam.use_beam_search = true;
  beam.stop = {"\n"};
  EXPECT_THROW(engine.add_request_n({1, 2}, beam), Error);
  EXPECT_FALSE(engine.has_unfinished());
}

}  // namespace
}  // namespace lumen
