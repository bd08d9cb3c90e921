// An ALiBi model (BLOOM: `lumen synth bloom-mini` cut to 2 blocks, 6 heads with ALiBi, LayerNorm
// blocks) through the serving engine: the bias counts positions in the paged cache, so 16
// requests batched together and prefilled in chunks, sequences preempted and recomputed, forks,
// and a prompt whose blocks come from the prefix cache each produce the greedy tokens of the bare
// single-sequence forward pass alone.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lumen/engine.h"
#include "ssm_engine.h"

namespace lumen::testing {
namespace {

class EngineAlibi : public SsmEngineTest {
 protected:
  static void SetUpTestSuite() { set_up_state_model("bloom-mini"); }
};

TEST_F(EngineAlibi, TheModelIsBloom) {
  ASSERT_EQ(model_->hparams.architecture, "bloom");
  EXPECT_EQ(model_->hparams.head_count, 6u);
}

// Sixteen streams of different lengths, the longer prompts longer than a step's token budget
// (64), so they prefill in chunks beside the others' decodes.
TEST_F(EngineAlibi, SixteenConcurrentStreamsMatchEachAlone) {
  std::vector<std::vector<int32_t>> prompts, expected;
  std::vector<int64_t> lengths;
  for (int i = 0; i < 16; ++i) {
    prompts.push_back(prompt(5 + 5 * i, i));
    lengths.push_back(16 + 2 * (i % 5));
    expected.push_back(alone(prompts.back(), lengths.back()));
  }
  EngineConfig c = config(256);
  c.max_num_batched_tokens = 64;
  Engine engine(handle(), c);
  std::vector<RequestHandle> handles;
  for (size_t i = 0; i < prompts.size(); ++i) handles.push_back(engine.add_request(prompts[i], greedy(lengths[i])));
  int64_t most_running = 0;
  while (engine.has_unfinished()) {
    engine.step();
    most_running = std::max(most_running, engine.stats().running);
  }
  EXPECT_GE(most_running, 12) << "the requests did not share steps";
  for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(handles[i].collect().tokens, expected[i]) << "request " << i;
}

// Too few blocks for every sequence: preempted sequences compute their K/V again.
TEST_F(EngineAlibi, PreemptedSequencesRecompute) {
  std::vector<std::vector<int32_t>> prompts, expected;
  for (int i = 0; i < 4; ++i) {
    prompts.push_back(prompt(20 + 3 * i, 10 + i));
    expected.push_back(alone(prompts.back(), 24));
  }
  EngineConfig c = config(14);
  c.enable_prefix_caching = false;
  Engine engine(handle(), c);
  std::vector<RequestHandle> handles;
  for (const auto& p : prompts) handles.push_back(engine.add_request(p, greedy(24)));
  drain(engine);
  EXPECT_GT(engine.stats().preemptions, 0u) << "the pool was large enough for all: nothing was tested";
  for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(handles[i].collect().tokens, expected[i]) << "request " << i;
}

// The same prompt again: its full blocks come from the prefix cache, the tokens do not change.
TEST_F(EngineAlibi, APrefixCacheHitChangesNoToken) {
  const std::vector<int32_t> p = prompt(43, 9);
  const std::vector<int32_t> expected = alone(p, 12);
  Engine engine(handle(), config(128));
  RequestHandle first = engine.add_request(p, greedy(12));
  drain(engine);
  EXPECT_EQ(first.collect().tokens, expected);
  const uint64_t hits = engine.stats().prefix_hit_blocks;
  RequestHandle again = engine.add_request(p, greedy(12));
  drain(engine);
  EXPECT_EQ(again.collect().tokens, expected);
  EXPECT_GE(engine.stats().prefix_hit_blocks - hits, 5u);  // 43 tokens: 5 full blocks of 8
}

// n > 1: the forks share the prompt's K/V blocks.
TEST_F(EngineAlibi, ForksMatchAlone) {
  Engine engine(handle(), config(128));
  SamplingParams p = greedy(10);
  p.n = 3;
  std::vector<RequestHandle> handles = engine.add_request_n(prompt(17, 4), p);
  drain(engine);
  const std::vector<int32_t> expected = alone(prompt(17, 4), 10);
  ASSERT_EQ(handles.size(), 3u);
  for (RequestHandle& h : handles) EXPECT_EQ(h.collect().tokens, expected);
}

}  // namespace
}  // namespace lumen::testing
