// Issue 47: a request whose grammar masks are slow never holds the step everyone shares. Its
// mask is held back on the mask worker (the test's hook) for as long as the test likes: the
// other requests must finish meanwhile, the held one must then draw exactly the tokens it draws
// when nothing holds it, and one aborted while it waits must go without touching freed memory
// (the worker still uses its sampler: under ASan a use-after-free fails here).
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>

#include "engine/engine_test_access.h"
#include "synth_engine.h"

namespace lumen::testing {
namespace {

// Holds every mask job of one request until released. Release it before the engine goes: the
// engine's destructor waits for the job in progress.
class MaskGate {
 public:
  void hold(uint64_t request_id) {
    std::lock_guard lock(mutex_);
    held_ = request_id;
  }
  void release() {
    {
      std::lock_guard lock(mutex_);
      released_ = true;
    }
    opened_.notify_all();
  }
  void operator()(uint64_t request_id) {
    std::unique_lock lock(mutex_);
    if (request_id != held_) return;
    ++blocked_jobs_;
    // Bounded, so that an engine that waits for the job (the bug) fails the test, not hangs it.
    if (!opened_.wait_for(lock, std::chrono::seconds(2), [this] { return released_; })) ++timeouts_;
  }
  int timeouts() {
    std::lock_guard lock(mutex_);
    return timeouts_;
  }
  int blocked_jobs() {
    std::lock_guard lock(mutex_);
    return blocked_jobs_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable opened_;
  uint64_t held_ = 0;
  bool released_ = false;
  int blocked_jobs_ = 0;
  int timeouts_ = 0;
};

// What a request streamed so far, read without blocking by the thread that steps the engine.
struct Progress {
  size_t tokens = 0;
  std::string text;
  bool finished = false;
  FinishReason finish = FinishReason::Abort;
  void pull(RequestHandle& h) {
    StreamChunk chunk;
    while (!finished && h.try_next(chunk)) {
      for (const GeneratedToken& t : chunk.tokens) {
        ++tokens;
        text += t.text;
      }
      if (chunk.finished) {
        finished = true;
        finish = chunk.finish_reason;
      }
    }
  }
};

class EngineLateMask : public SynthEngineTest {
 protected:
  static SamplingParams constrained(uint64_t seed) {
    SamplingParams p;
    p.temperature = 1.0f;
    p.max_tokens = 24;
    p.seed = seed;
    StructuredOutputs c;
    c.regex = "[a-z]{2,6}( [a-z]{2,6}){1,3}";
    p.structured_outputs = std::move(c);
    return p;
  }
};

TEST_F(EngineLateMask, OthersFinishWhileASlowMaskWaitsAndItsTokensDoNotChange) {
  std::vector<int32_t> alone;
  {
    Engine engine(handle(), config(64));
    RequestHandle h = engine.add_request(prompt(7, 3), constrained(5));
    drain(engine);
    GenerationResult r = h.collect();
    ASSERT_EQ(r.finish, FinishReason::Stop) << r.error;
    alone = r.tokens;
  }

  Engine engine(handle(), config(64));
  auto gate = std::make_shared<MaskGate>();
  engine::EngineTestAccess::set_mask_job_hook(engine, [gate](uint64_t id) { (*gate)(id); });
  RequestHandle slow = engine.add_request(prompt(7, 3), constrained(5));
  gate->hold(slow.id());
  RequestHandle plain = engine.add_request(prompt(9, 4), greedy(20));
  StructuredOutputs quick;
  quick.regex = "x{4}";
  SamplingParams quick_params = greedy(20);
  quick_params.ignore_eos = false;
  quick_params.structured_outputs = quick;
  RequestHandle other = engine.add_request(prompt(5, 6), quick_params);

  // Both others finish while the slow request's first mask is held: the steps go on without it.
  Progress plain_seen, other_seen, slow_seen;
  int steps = 0;
  for (; steps < 200 && !(plain_seen.finished && other_seen.finished); ++steps) {
    engine.step();
    plain_seen.pull(plain);
    other_seen.pull(other);
    slow_seen.pull(slow);
  }
  ASSERT_LT(steps, 200) << "the step waited for a held mask";
  EXPECT_EQ(plain_seen.tokens, 20u);
  EXPECT_EQ(other_seen.finish, FinishReason::Stop);
  EXPECT_EQ(other_seen.text, "xxxx");
  EXPECT_EQ(slow_seen.tokens, 0u);  // its first token waits for its first mask
  EXPECT_FALSE(slow_seen.finished);
  EXPECT_GE(gate->blocked_jobs(), 1);
  EXPECT_EQ(gate->timeouts(), 0) << "a step waited for the held mask";
  EXPECT_GE(engine.stats().late_grammar_masks, 1u);

  gate->release();
  drain(engine);
  GenerationResult r = slow.collect();
  ASSERT_EQ(r.finish, FinishReason::Stop) << r.error;
  EXPECT_EQ(r.tokens, alone);  // sampled late from the row of its own step: the same draws
  EXPECT_EQ(engine.stats().kv_blocks_used, 0);
}

TEST_F(EngineLateMask, ARequestAbortedWhileItsMaskIsHeldGoesSafely) {
  auto gate = std::make_shared<MaskGate>();
  {
    Engine engine(handle(), config(64));
    engine::EngineTestAccess::set_mask_job_hook(engine, [gate](uint64_t id) { (*gate)(id); });
    RequestHandle slow = engine.add_request(prompt(7, 3), constrained(9));
    gate->hold(slow.id());
    RequestHandle plain = engine.add_request(prompt(9, 4), greedy(6));
    for (int i = 0; i < 200 && gate->blocked_jobs() == 0; ++i) engine.step();
    ASSERT_EQ(gate->blocked_jobs(), 1);
    EXPECT_EQ(gate->timeouts(), 0);
    engine.abort(slow.id());
    drain(engine);  // ends with the held job still running on its sampler
    EXPECT_EQ(slow.collect().finish, FinishReason::Abort);
    EXPECT_EQ(plain.collect().tokens.size(), 6u);
    EXPECT_EQ(engine.stats().kv_blocks_used, 0);
    // A new request is served while the aborted one's job still runs.
    RequestHandle next = engine.add_request(prompt(6, 8), greedy(4));
    drain(engine);
    EXPECT_EQ(next.collect().tokens.size(), 4u);
    gate->release();  // the engine's destructor waits for the job, then frees its sampler
  }
}

}  // namespace
}  // namespace lumen::testing
