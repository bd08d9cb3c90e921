// A state-space model (Mamba 2, `lumen synth mamba2-mini` cut to 2 blocks) through the serving
// engine: each sequence's recurrent state lives in its own slot beside the paged KV, so
// requests batched together, prefilled in chunks across steps, preempted (recompute: the slot
// is dropped and the state computed again), aborted or forked (n > 1 copies the state) must
// each produce the greedy tokens the bare single-sequence forward pass produces alone.
// Speculative decoding is refused with a sentence (a state cannot be rolled back).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lumen/engine.h"
#include "model/state_cache.h"
#include "ssm_engine.h"
#include "util/error.h"

namespace lumen::testing {
namespace {

using EngineSsm = SsmEngineTest;

TEST_F(EngineSsm, ConcurrentRequestsMatchEachAlone) {
  std::vector<std::vector<int32_t>> prompts, expected;
  std::vector<int64_t> lengths;
  for (int i = 0; i < 6; ++i) {
    prompts.push_back(prompt(5 + 9 * i, i));
    lengths.push_back(6 + 3 * i);
    expected.push_back(alone(prompts.back(), lengths.back()));
  }
  Engine engine(handle(), config(128));
  std::vector<RequestHandle> handles;
  for (size_t i = 0; i < prompts.size(); ++i) handles.push_back(engine.add_request(prompts[i], greedy(lengths[i])));
  int64_t most_running = 0;
  while (engine.has_unfinished()) {
    engine.step();
    most_running = std::max(most_running, engine.stats().running);
  }
  EXPECT_GE(most_running, 4) << "the requests did not share steps";
  for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(handles[i].collect().tokens, expected[i]) << "request " << i;
}

// Too few blocks for every sequence at once: sequences are preempted, drop their state slot and
// compute their tokens again from a zero state when they come back.
TEST_F(EngineSsm, PreemptedSequencesRecomputeTheirState) {
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

// An aborted request gives its slot back: later requests (more than there are slots left
// otherwise) still run, and the others' tokens are unchanged.
TEST_F(EngineSsm, AbortFreesTheStateSlot) {
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

// n > 1: the prompt is computed once and forked; each fork continues from a copy of the
// state, so greedy completions all equal the sequence alone.
TEST_F(EngineSsm, ForksCopyTheState) {
  Engine engine(handle(), config(128));
  SamplingParams p = greedy(10);
  p.n = 3;
  std::vector<RequestHandle> handles = engine.add_request_n(prompt(17, 4), p);
  drain(engine);
  const std::vector<int32_t> expected = alone(prompt(17, 4), 10);
  ASSERT_EQ(handles.size(), 3u);
  for (RequestHandle& h : handles) EXPECT_EQ(h.collect().tokens, expected);
}

TEST_F(EngineSsm, SpeculativeDecodingIsRefused) {
  EngineConfig c = config(128);
  c.speculative.method = SpeculativeMethod::Ngram;
  c.speculative.num_speculative_tokens = 3;
  try {
    Engine engine(handle(), c);
    FAIL() << "an engine with n-gram speculation was built for a state-space model";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot be rolled back"), std::string::npos) << e.what();
  }
}

// What one sequence's state costs: every layer's convolution window and SSM state, in f32.
TEST_F(EngineSsm, StateBytesPerSequence) {
  const model::HParams& hp = model_->hparams;
  const size_t per_layer =
      ((hp.ssm_conv_kernel - 1) * (hp.ssm_inner_size + 2 * hp.ssm_group_count * hp.ssm_state_size) +
       hp.ssm_state_size * hp.ssm_inner_size) *
      sizeof(float);
  EXPECT_EQ(model::StateCache::bytes_per_slot(hp), per_layer * hp.block_count);
  EXPECT_EQ(per_layer, (3 * (512 + 2 * 2 * 64) + 64 * 512) * 4u);
}

}  // namespace
}  // namespace lumen::testing
