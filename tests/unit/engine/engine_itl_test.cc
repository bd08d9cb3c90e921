// ITL-aware scheduling through the engine on the synthetic model: it changes which step computes
// what (prefill cut to small chunks beside decodes), never what is computed.
#include <limits>

#include "synth_engine.h"

namespace lumen::testing {
namespace {

class EngineItl : public SynthEngineTest {
 protected:
  struct Outcome {
    std::vector<std::vector<int32_t>> outputs;
    uint64_t steps = 0;
  };

  // Streams start, then long prompts arrive while they decode (prefill chunks join decode steps).
  static Outcome run_staggered(Engine& engine) {
    std::vector<RequestHandle> handles;
    for (int s = 0; s < 3; ++s) handles.push_back(engine.add_request(prompt(6 + s, s), greedy(24)));
    for (int i = 0; i < 4; ++i) engine.step();
    for (int s = 0; s < 3; ++s) handles.push_back(engine.add_request(prompt(40 + 7 * s, 10 + s), greedy(8)));
    while (engine.has_unfinished()) engine.step();
    Outcome out;
    for (RequestHandle& h : handles) out.outputs.push_back(h.collect().tokens);
    out.steps = engine.stats().steps;
    return out;
  }
};

TEST_F(EngineItl, GreedyOutputIsTheSameWithAndWithoutAStepTimeTarget) {
  EngineConfig plain = config(512);
  Engine reference(handle(), plain);
  const Outcome expected = run_staggered(reference);
  for (const auto& out : expected.outputs) ASSERT_FALSE(out.empty());

  // A target no step can meet: beside decodes, prefill gets only its floor of 4 tokens a step,
  // so the long prompts take many more, smaller chunks.
  EngineConfig itl = config(512);
  itl.max_itl_ms = 0.001;
  itl.min_prefill_tokens = 4;
  Engine limited(handle(), itl);
  const Outcome got = run_staggered(limited);
  EXPECT_EQ(got.outputs, expected.outputs);
  EXPECT_GE(got.steps, expected.steps + 5) << "the target did not change the schedule";
}

TEST_F(EngineItl, RefusesANonsenseTarget) {
  for (const double ms : {-1.0, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    EngineConfig c = config(64);
    c.max_itl_ms = ms;
    EXPECT_THROW(Engine(handle(), c), Error) << ms;
  }
  EngineConfig c = config(64);
  c.max_itl_ms = 20;
  c.min_prefill_tokens = 0;
  EXPECT_THROW(Engine(handle(), c), Error);
}

}  // namespace
}  // namespace lumen::testing
