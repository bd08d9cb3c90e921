// Engine::embed shares the loop with generation: a request of many inputs is answered over
// several steps, one pass per step, while a generation request beside it keeps streaming (a
// client's thousands of inputs cannot stall the others), and every vector is the one its input
// gets alone.
#include <chrono>
#include <future>

#include "synth_engine.h"

namespace lumen::testing {
namespace {

class EngineEmbeddings : public SynthEngineTest {};

TEST_F(EngineEmbeddings, ManyInputsRunOnePassPerStepBesideGeneration) {
  EngineConfig c = config(256);
  c.max_num_batched_tokens = 32;  // 40 inputs of 8 tokens: at least 10 passes
  std::vector<std::vector<int32_t>> inputs;
  for (int i = 0; i < 40; ++i) inputs.push_back(prompt(8, i));

  Engine engine(handle(), c);
  std::future<std::vector<std::vector<float>>> many = engine.embed(inputs);
  RequestHandle text = engine.add_request(prompt(6, 99), greedy(8));
  int steps = 0;
  size_t streamed_before_embeddings_done = 0;
  StreamChunk chunk;
  while (many.wait_for(std::chrono::seconds(0)) != std::future_status::ready && steps < 1000) {
    engine.step();
    ++steps;
    while (text.try_next(chunk)) streamed_before_embeddings_done += chunk.tokens.size();
  }
  ASSERT_LT(steps, 1000);
  EXPECT_GE(steps, 10);
  EXPECT_GT(streamed_before_embeddings_done, 0u) << "generation waited for every embedding pass";
  const std::vector<std::vector<float>> got = many.get();
  size_t streamed = streamed_before_embeddings_done;
  while (engine.has_unfinished()) engine.step();
  while (text.try_next(chunk)) streamed += chunk.tokens.size();
  EXPECT_EQ(streamed, 8u);

  ASSERT_EQ(got.size(), inputs.size());
  for (size_t i = 0; i < inputs.size(); i += 13) {
    std::future<std::vector<std::vector<float>>> alone = engine.embed({inputs[i]});
    while (alone.wait_for(std::chrono::seconds(0)) != std::future_status::ready) engine.step();
    const std::vector<float> v = alone.get().at(0);
    ASSERT_EQ(v.size(), got[i].size());
    for (size_t k = 0; k < v.size(); ++k) EXPECT_NEAR(v[k], got[i][k], 1e-5f) << "input " << i << ", element " << k;
  }
  EXPECT_EQ(engine.stats().kv_blocks_used, 0);
}

}  // namespace
}  // namespace lumen::testing
