// Greedy sampling's shortcut (engine/greedy_rows.h): a greedy row comes back as its argmax
// alone. On the CPU the runner reduces the row itself; with the rows poisoned after the step
// (NaN, as a device that never copied them back leaves them) every request still gets the
// tokens it gets through whole rows, so nothing reads a reduced row's logits.
#include "engine/engine_test_access.h"
#include "engine/greedy_rows.h"
#include "synth_engine.h"

#include <cmath>
#include <limits>

namespace lumen::testing {
namespace {

// The requests of one batch, each a different way of sampling: greedy, greedy with n = 3,
// seeded sampling, greedy with logprobs and with a logit bias (those two need whole rows), and
// greedy with prompt log-probabilities (whole prompt rows, an argmax sampling row).
struct MixedBatch {
  std::vector<std::vector<int32_t>> tokens;  // each request's choices, one after another
  std::vector<std::vector<float>> prompt_logprobs;
};

class EngineGreedyRows : public SynthEngineTest {
 protected:
  static MixedBatch run_mixed(Engine& engine);
};

MixedBatch EngineGreedyRows::run_mixed(Engine& engine) {
  std::vector<std::vector<RequestHandle>> requests;
  SamplingParams plain = greedy(9);
  requests.push_back({engine.add_request(prompt(6, 1), plain)});
  SamplingParams three = plain;
  three.n = 3;
  requests.push_back(engine.add_request_n(prompt(8, 2), three));
  SamplingParams sampled = plain;
  sampled.temperature = 0.8f;
  sampled.seed = 7;
  requests.push_back({engine.add_request(prompt(5, 3), sampled)});
  SamplingParams logprobs = plain;
  logprobs.logprobs = 2;
  requests.push_back({engine.add_request(prompt(7, 4), logprobs)});
  SamplingParams biased = plain;
  biased.logit_bias = {{400, 3.0f}};
  requests.push_back({engine.add_request(prompt(9, 5), biased)});
  SamplingParams scored = plain;
  scored.prompt_logprobs = 1;
  requests.push_back({engine.add_request(prompt(10, 6), scored)});
  while (engine.has_unfinished()) engine.step();
  MixedBatch out;
  for (auto& choices : requests) {
    std::vector<int32_t> all;
    std::vector<float> prompt;
    for (RequestHandle& h : choices) {
      GenerationResult r = h.collect();
      EXPECT_EQ(r.finish, FinishReason::Length);
      all.insert(all.end(), r.tokens.begin(), r.tokens.end());
      // The first prompt token has no log-probability (NaN): the others do.
      for (size_t p = 1; p < r.prompt_logprobs.size(); ++p) prompt.push_back(r.prompt_logprobs[p].logprob);
    }
    out.tokens.push_back(std::move(all));
    out.prompt_logprobs.push_back(std::move(prompt));
  }
  return out;
}

TEST_F(EngineGreedyRows, PoisonedArgmaxRowsChangeNoRequestsTokens) {
  // Whole rows: a logits hook turns the shortcut off (it sees every row).
  Engine whole(handle(), config(256));
  engine::EngineTestAccess::set_logits_hook(whole, [](uint64_t, std::span<float>) {});
  const MixedBatch expected = run_mixed(whole);
  EXPECT_EQ(engine::EngineTestAccess::argmax_rows(whole), 0u);

  Engine reduced(handle(), config(256));
  engine::EngineTestAccess::set_poison_argmax_rows(reduced, true);
  const MixedBatch got = run_mixed(reduced);
  // Every greedy step of the plain, n = 3 and prompt-scored requests: 9 tokens each, less the
  // rows that forked choices share.
  EXPECT_GE(engine::EngineTestAccess::argmax_rows(reduced), 3u * 9u);
  ASSERT_EQ(got.tokens.size(), expected.tokens.size());
  for (size_t i = 0; i < expected.tokens.size(); ++i) {
    EXPECT_EQ(got.tokens[i], expected.tokens[i]) << "request " << i;
    EXPECT_EQ(got.prompt_logprobs[i], expected.prompt_logprobs[i]) << "request " << i;
  }
  EXPECT_EQ(expected.tokens[1].size(), 27u);  // three choices of 9
  EXPECT_EQ(expected.prompt_logprobs[5].size(), 9u);
}

TEST(GreedyRows, TheHostReductionIsTheSamplersArgmaxAndSeesNonFiniteValues) {
  const std::vector<float> row = {0.5f, 3.0f, -1.0f, 3.0f, 2.0f};
  const backend::RowArgmax a = engine::host_row_argmax(row);
  EXPECT_EQ(a.token, 1);
  EXPECT_EQ(a.value, 3.0f);
  EXPECT_EQ(a.finite, 1);
  std::vector<float> bad = row;
  bad[4] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(engine::host_row_argmax(bad).finite, 0);
  bad[4] = -std::numeric_limits<float>::infinity();
  EXPECT_EQ(engine::host_row_argmax(bad).finite, 0);
  EXPECT_EQ(engine::host_row_argmax(bad).token, 1);
  EXPECT_TRUE(engine::all_finite(row));
}

}  // namespace
}  // namespace lumen::testing
