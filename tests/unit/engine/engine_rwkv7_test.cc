// An RWKV 7 model (`lumen synth rwkv7-mini` cut to 2 blocks) through the serving engine: its
// per-sequence state (two token-shift rows and a wkv matrix per head, per layer) lives in a slot
// beside the paged KV as Mamba 2's does (engine_ssm_test.cc), so 16 requests batched together
// and prefilled in chunks, preempted (recompute), aborted or forked (n > 1 copies the state)
// each produce the greedy tokens of the bare single-sequence forward pass alone, and
// speculation is refused.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lumen/engine.h"
#include "model/state_cache.h"
#include "ssm_engine.h"
#include "util/error.h"

namespace lumen::testing {
namespace {

class EngineRwkv7 : public SsmEngineTest {
 protected:
  static void SetUpTestSuite() { set_up_state_model("rwkv7-mini"); }
};

// Sixteen streams of different lengths, the longer prompts longer than a step's token budget
// (64), so they prefill in chunks beside the others' decodes.
TEST_F(EngineRwkv7, SixteenConcurrentStreamsMatchEachAlone) {
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

// Too few blocks for every sequence at once: sequences are preempted, drop their state slot and
// compute their tokens again from a zero state when they come back.
TEST_F(EngineRwkv7, PreemptedSequencesRecomputeTheirState) {
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

// An aborted request gives its slot back: a later request (with no slot left otherwise) still
// runs, and the other's tokens are unchanged.
TEST_F(EngineRwkv7, AbortFreesTheStateSlot) {
  EngineConfig c = config(128);
  c.max_num_seqs = 2;  // two state slots
  Engine engine(handle(), c);
  RequestHandle victim = engine.add_request(prompt(9, 1), greedy(40));
  RequestHandle other = engine.add_request(prompt(11, 2), greedy(8));
  for (int i = 0; i < 3; ++i) engine.step();
  engine.abort(victim.id());
  RequestHandle later = engine.add_request(prompt(13, 3), greedy(8));
  drain(engine);
  EXPECT_EQ(victim.collect().finish, FinishReason::Abort);
  EXPECT_EQ(other.collect().tokens, alone(prompt(11, 2), 8));
  EXPECT_EQ(later.collect().tokens, alone(prompt(13, 3), 8));
}

// n > 1: the prompt is computed once and forked; each fork continues from a copy of the state.
TEST_F(EngineRwkv7, ForksCopyTheState) {
  Engine engine(handle(), config(128));
  SamplingParams p = greedy(10);
  p.n = 3;
  std::vector<RequestHandle> handles = engine.add_request_n(prompt(17, 4), p);
  drain(engine);
  const std::vector<int32_t> expected = alone(prompt(17, 4), 10);
  ASSERT_EQ(handles.size(), 3u);
  for (RequestHandle& h : handles) EXPECT_EQ(h.collect().tokens, expected);
}

TEST_F(EngineRwkv7, SpeculativeDecodingIsRefused) {
  EngineConfig c = config(128);
  c.speculative.method = SpeculativeMethod::Ngram;
  c.speculative.num_speculative_tokens = 3;
  try {
    Engine engine(handle(), c);
    FAIL() << "an engine with n-gram speculation was built for an RWKV model";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot be rolled back"), std::string::npos) << e.what();
  }
}

// What one sequence's state costs: per layer, two token-shift rows of 256 and 4 heads' 64 x 64
// wkv matrices, in f32, whatever the sequence's length.
TEST_F(EngineRwkv7, StateBytesPerSequence) {
  const model::HParams& hp = model_->hparams;
  ASSERT_EQ(hp.block_count, 2u);
  EXPECT_EQ(model::StateCache::bytes_per_slot(hp), 2 * (2 * 256 + 4 * 64 * 64) * sizeof(float));
}

}  // namespace
}  // namespace lumen::testing
