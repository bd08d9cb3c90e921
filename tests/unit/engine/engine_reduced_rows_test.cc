// Rows that come back reduced (engine/reduced_rows.h): a greedy row as its argmax alone, a
// sampled draw (plain, or confined by top-k, top-p or min-p) as its 64 leading candidates. On the CPU the runner
// reduces the rows itself; with the rows poisoned after the step (NaN, as a device that never
// copied them back leaves them) every request still gets the tokens it gets through whole rows,
// so nothing reads a reduced row's logits but through ModelRunner::whole_row (which brings the
// real row back, as from a device, when the nucleus reaches past the candidates).
#include "engine/engine_test_access.h"
#include "engine/reduced_rows.h"
#include "synth_engine.h"

#include <cmath>
#include <iostream>
#include <limits>

#include "sampling/dense_ops.h"

namespace lumen::testing {
namespace {

// The requests of one batch, each a different way of sampling: greedy, greedy with n = 3,
// seeded sampling, greedy with logprobs and with a logit bias (those two need whole rows),
// greedy with prompt log-probabilities (whole prompt rows, an argmax sampling row), then seeded
// draws confined by top-k, top-p (a narrow nucleus, and one so wide it reaches past the
// candidates), min-p, top-p with n = 2, and plain draws (no filter) with n = 2.
struct MixedBatch {
  std::vector<std::vector<int32_t>> tokens;  // each request's choices, one after another
  std::vector<std::vector<float>> prompt_logprobs;
};

class EngineReducedRows : public SynthEngineTest {
 protected:
  static MixedBatch run_mixed(Engine& engine);
};

MixedBatch EngineReducedRows::run_mixed(Engine& engine) {
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
  SamplingParams top_k = plain;
  top_k.temperature = 0.9f;
  top_k.top_k = 20;
  top_k.seed = 11;
  requests.push_back({engine.add_request(prompt(6, 7), top_k)});
  SamplingParams nucleus = plain;
  nucleus.temperature = 0.7f;
  nucleus.top_p = 0.6f;
  nucleus.seed = 12;
  requests.push_back({engine.add_request(prompt(7, 8), nucleus)});
  SamplingParams wide = plain;
  wide.temperature = 1.0f;
  wide.top_p = 0.999f;
  wide.seed = 13;
  requests.push_back({engine.add_request(prompt(8, 9), wide)});
  SamplingParams min_p = plain;
  min_p.temperature = 1.0f;
  min_p.min_p = 0.2f;
  min_p.seed = 14;
  requests.push_back({engine.add_request(prompt(5, 10), min_p)});
  SamplingParams two = nucleus;
  two.n = 2;
  two.seed = 15;
  requests.push_back(engine.add_request_n(prompt(9, 11), two));
  SamplingParams plain_two = sampled;  // plain draws whose forks settle by their own generators
  plain_two.temperature = 1.0f;
  plain_two.n = 2;
  plain_two.seed = 16;
  requests.push_back(engine.add_request_n(prompt(7, 12), plain_two));
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

TEST_F(EngineReducedRows, PoisonedReducedRowsChangeNoRequestsTokens) {
  // Whole rows: a logits hook turns the shortcut off (it sees every row).
  Engine whole(handle(), config(256));
  engine::EngineTestAccess::set_logits_hook(whole, [](uint64_t, std::span<float>) {});
  const MixedBatch expected = run_mixed(whole);
  EXPECT_EQ(engine::EngineTestAccess::argmax_rows(whole), 0u);
  EXPECT_EQ(engine::EngineTestAccess::leading_rows(whole), 0u);

  Engine reduced(handle(), config(256));
  engine::EngineTestAccess::set_poison_reduced_rows(reduced, true);
  const MixedBatch got = run_mixed(reduced);
  // Every greedy step of the plain, n = 3 and prompt-scored requests: 9 tokens each, less the
  // rows that forked choices share.
  EXPECT_GE(engine::EngineTestAccess::argmax_rows(reduced), 3u * 9u);
  // Every step of the seeded plain draw and the five confined ones (an n = 2 pair shares its
  // first row); the wide nucleus needs its whole row back, the narrow ones do not, and a plain
  // draw when it lands past the candidates (often: the synthetic model is flat).
  const uint64_t leading = engine::EngineTestAccess::leading_rows(reduced);
  const uint64_t brought_back = engine::EngineTestAccess::rows_brought_back(reduced);
  EXPECT_GE(leading, 7u * 9u);
  EXPECT_GT(brought_back, 0u);
  EXPECT_LT(brought_back, leading);
  ASSERT_EQ(got.tokens.size(), expected.tokens.size());
  for (size_t i = 0; i < expected.tokens.size(); ++i) {
    EXPECT_EQ(got.tokens[i], expected.tokens[i]) << "request " << i;
    EXPECT_EQ(got.prompt_logprobs[i], expected.prompt_logprobs[i]) << "request " << i;
  }
  EXPECT_EQ(expected.tokens[1].size(), 27u);  // three choices of 9
  EXPECT_EQ(expected.prompt_logprobs[5].size(), 9u);
  EXPECT_EQ(expected.tokens[10].size(), 18u);
  EXPECT_EQ(expected.tokens[11].size(), 18u);
  std::cout << "leading rows " << leading << ", brought back whole " << brought_back << "\n";
}

TEST(ReducedRows, TheHostReductionIsTheSamplersArgmaxAndSeesNonFiniteValues) {
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

TEST(ReducedRows, TheHostsLeadingCandidatesAreSelectTopsWithTheSamplersTotal) {
  std::vector<float> row(1000);
  for (size_t i = 0; i < row.size(); ++i) row[i] = std::sin(static_cast<float>(i) * 0.37f) * 4.0f;
  row[900] = row[100] = 10.0f;  // a tie at the top: the lower id first
  backend::RowLeading leading;
  engine::host_row_leading(row, 1.25f, leading);
  ASSERT_EQ(leading.count, backend::kLeadingCandidates);
  std::vector<sampling::Candidate> top;
  sampling::select_top(row, static_cast<size_t>(backend::kLeadingCandidates), top);
  for (size_t i = 0; i < top.size(); ++i) {
    EXPECT_EQ(leading.ids[i], top[i].id);
    EXPECT_EQ(leading.logits[i], top[i].logit);
  }
  EXPECT_EQ(leading.ids[0], 100);
  EXPECT_EQ(leading.ids[1], 900);
  EXPECT_EQ(leading.total, sampling::sum_exp(row, 10.0f, 1.25f));
  EXPECT_EQ(leading.finite, 1);
  engine::host_row_leading(row, 0.0f, leading);
  EXPECT_EQ(leading.total, 0.0);  // no scale: no total
  // A row shorter than the list: all of it.
  engine::host_row_leading(std::span(row).first(10), 0.0f, leading);
  EXPECT_EQ(leading.count, 10);
  row[5] = std::numeric_limits<float>::infinity();
  engine::host_row_leading(row, 0.0f, leading);
  EXPECT_EQ(leading.finite, 0);
}

}  // namespace
}  // namespace lumen::testing
