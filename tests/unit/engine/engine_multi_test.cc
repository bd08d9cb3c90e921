// Several completions per request on the synthetic model: n with seeds, best_of, beam search.
#include <cmath>

#include "synth_engine.h"

namespace lumen::testing {
namespace {

using EngineMulti = SynthEngineTest;

SamplingParams sampled(int32_t n, int32_t best_of, int64_t max_tokens) {
  SamplingParams p;
  p.temperature = 1.0f;
  p.seed = 42;
  p.n = n;
  p.best_of = best_of;
  p.max_tokens = max_tokens;
  p.ignore_eos = true;
  p.logprobs = 0;
  return p;
}

double mean(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += x;
  return s / static_cast<double>(v.size());
}

// n completions with a seed: reproducible run to run, and not all the same (completion i draws
// from seed_of_choice(seed, i), so they are independent samples).
TEST_F(EngineMulti, NCompletionsAreSeededAndDistinct) {
  auto run = [&] {
    Engine engine(handle(), config(256));
    std::vector<RequestHandle> hs = engine.add_request_n(prompt(6, 4), sampled(4, 4, 10));
    drain(engine);
    std::vector<std::vector<int32_t>> out;
    for (RequestHandle& h : hs) out.push_back(tokens(h));
    return out;
  };
  std::vector<std::vector<int32_t>> a = run(), b = run();
  ASSERT_EQ(a.size(), 4u);
  EXPECT_EQ(a, b);
  for (const auto& t : a) EXPECT_EQ(t.size(), 10u);
  bool any_differ = false;
  for (size_t i = 1; i < a.size(); ++i) any_differ |= a[i] != a[0];
  EXPECT_TRUE(any_differ);
}

// best_of = 4, n = 1 delivers, of the 4 candidates (the same as n = 4 with the same seed),
// the one with the highest mean log-probability.
TEST_F(EngineMulti, BestOfPicksTheLikeliestCandidate) {
  Engine all(handle(), config(256));
  std::vector<RequestHandle> hs = all.add_request_n(prompt(6, 5), sampled(4, 4, 8));
  drain(all);
  std::vector<GenerationResult> candidates;
  for (RequestHandle& h : hs) candidates.push_back(h.collect());
  size_t best = 0;
  for (size_t i = 1; i < candidates.size(); ++i) {
    if (mean(candidates[i].logprobs) > mean(candidates[best].logprobs)) best = i;
  }

  Engine one(handle(), config(256));
  std::vector<RequestHandle> picked = one.add_request_n(prompt(6, 5), sampled(1, 4, 8));
  ASSERT_EQ(picked.size(), 1u);
  drain(one);
  GenerationResult r = picked[0].collect();
  EXPECT_EQ(r.tokens, candidates[best].tokens);
  EXPECT_EQ(r.finish, FinishReason::Length);
}

SamplingParams beam(int32_t width, int64_t max_tokens) {
  SamplingParams p;
  p.use_beam_search = true;
  p.n = width;
  p.best_of = width;
  p.temperature = 0.0f;
  p.max_tokens = max_tokens;
  p.ignore_eos = true;
  p.logprobs = 0;
  return p;
}

// Width W gives W distinct hypotheses, best first by sum(logprob) / length^length_penalty.
TEST_F(EngineMulti, BeamSearchReturnsWidthHypothesesBestFirst) {
  Engine engine(handle(), config(256));
  SamplingParams p = beam(3, 6);
  std::vector<RequestHandle> hs = engine.add_request_n(prompt(7, 6), p);
  ASSERT_EQ(hs.size(), 3u);
  drain(engine);
  std::vector<GenerationResult> rs;
  for (RequestHandle& h : hs) rs.push_back(h.collect());
  std::vector<double> scores;
  for (const GenerationResult& r : rs) {
    ASSERT_FALSE(r.tokens.empty());
    ASSERT_EQ(r.logprobs.size(), r.tokens.size());
    double sum = 0;
    for (float x : r.logprobs) sum += x;
    scores.push_back(sum / std::pow(static_cast<double>(r.tokens.size()), p.length_penalty));
  }
  EXPECT_GE(scores[0], scores[1] - 1e-4);
  EXPECT_GE(scores[1], scores[2] - 1e-4);
  EXPECT_NE(rs[0].tokens, rs[1].tokens);
  EXPECT_NE(rs[1].tokens, rs[2].tokens);
}

// Width 1 keeps the single most likely token each round: exactly greedy decoding.
TEST_F(EngineMulti, BeamWidthOneIsGreedy) {
  Engine engine(handle(), config(256));
  std::vector<RequestHandle> b = engine.add_request_n(prompt(8, 7), beam(1, 9));
  RequestHandle g = engine.add_request(prompt(8, 7), greedy(9));
  drain(engine);
  EXPECT_EQ(b[0].collect().tokens, tokens(g));
}

}  // namespace
}  // namespace lumen::testing
