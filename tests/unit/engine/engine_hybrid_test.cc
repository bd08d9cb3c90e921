// A hybrid model (granite-hybrid: `lumen synth granite-hybrid-mini` cut to 2 blocks, a Mamba 2
// layer then an attention layer) through the serving engine: its attention layer's K/V lives in
// the paged cache and its Mamba 2 layer's state in a slot, in one forward pass. The state-model
// rules hold for it as for Mamba 2 (engine_ssm_test.cc): 16 requests batched together and
// prefilled in chunks, preempted (recompute), or forked each produce the greedy tokens of the
// bare single-sequence forward pass alone, and speculation is refused.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lumen/engine.h"
#include "model/kv_cache.h"
#include "model/state_cache.h"
#include "ssm_engine.h"
#include "util/error.h"

namespace lumen::testing {
namespace {

class EngineHybrid : public SsmEngineTest {
 protected:
  static void SetUpTestSuite() { set_up_state_model("granite-hybrid-mini"); }
};

TEST_F(EngineHybrid, TheModelHasBothKindsOfLayer) {
  const model::HParams& hp = model_->hparams;
  ASSERT_EQ(hp.block_count, 2u);
  EXPECT_TRUE(model::is_ssm_layer(hp, 0));
  EXPECT_FALSE(model::is_ssm_layer(hp, 1));
  EXPECT_EQ(hp.head_count_kv, 2u);
}

// Sixteen streams of different lengths, the longer prompts longer than a step's token budget
// (64), so they prefill in chunks beside the others' decodes.
TEST_F(EngineHybrid, SixteenConcurrentStreamsMatchEachAlone) {
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

// Too few blocks for every sequence: preempted sequences drop their K/V blocks and state slot
// and compute both again when they come back.
TEST_F(EngineHybrid, PreemptedSequencesRecomputeTheirState) {
  std::vector<std::vector<int32_t>> prompts, expected;
  for (int i = 0; i < 4; ++i) {
    prompts.push_back(prompt(20 + 3 * i, 10 + i));
    expected.push_back(alone(prompts.back(), 24));
  }
  Engine engine(handle(), config(14));
  std::vector<RequestHandle> handles;
  for (const auto& p : prompts) handles.push_back(engine.add_request(p, greedy(24)));
  drain(engine);
  EXPECT_GT(engine.stats().preemptions, 0u) << "the pool was large enough for all: nothing was tested";
  for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(handles[i].collect().tokens, expected[i]) << "request " << i;
}

// n > 1: the forks share the prompt's K/V blocks and each continues from a copy of the state.
TEST_F(EngineHybrid, ForksCopyTheState) {
  Engine engine(handle(), config(128));
  SamplingParams p = greedy(10);
  p.n = 3;
  std::vector<RequestHandle> handles = engine.add_request_n(prompt(17, 4), p);
  drain(engine);
  const std::vector<int32_t> expected = alone(prompt(17, 4), 10);
  ASSERT_EQ(handles.size(), 3u);
  for (RequestHandle& h : handles) EXPECT_EQ(h.collect().tokens, expected);
}

TEST_F(EngineHybrid, SpeculativeDecodingIsRefused) {
  EngineConfig c = config(128);
  c.speculative.method = SpeculativeMethod::Ngram;
  c.speculative.num_speculative_tokens = 3;
  try {
    Engine engine(handle(), c);
    FAIL() << "an engine with n-gram speculation was built for a hybrid model";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot be rolled back"), std::string::npos) << e.what();
  }
}

// A slot holds the Mamba 2 layers' states only: the attention layer keeps none.
TEST_F(EngineHybrid, StateBytesCountTheMambaLayersOnly) {
  const size_t one_layer = (3 * (512 + 2 * 2 * 64) + 64 * 512) * sizeof(float);
  EXPECT_EQ(model::StateCache::bytes_per_slot(model_->hparams), one_layer);
}

// The paged KV keeps the attention layer only: a block costs half what it would with K/V for both.
TEST_F(EngineHybrid, KvBlocksHoldTheAttentionLayersOnly) {
  model::HParams every_layer = model_->hparams;
  every_layer.ssm_layers.clear();  // as if both layers kept K/V
  EXPECT_EQ(2 * model::KvCache::bytes_per_block(model_->hparams, 8), model::KvCache::bytes_per_block(every_layer, 8));
}

}  // namespace
}  // namespace lumen::testing
