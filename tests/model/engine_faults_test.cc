// Fault containment on the real default model: a fault in one request of a running batch ends
// that request with FinishReason::Error (or, for a failed forward pass, the batch's requests),
// frees its blocks, publishes nothing it computed to the prefix cache, and leaves every other
// request's output exactly what it is without the fault.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <limits>
#include <map>
#include <optional>

#include "engine/engine_test_access.h"
#include "engine_fixture.h"
#include "util/error.h"

namespace lumen {
namespace {

using testing::Case;

// Makes the observed backend's rms_norm throw while armed (as a kernel's argument check would):
// an observer (backend/op_observer.h), so the backend keeps all it is and does.
class RmsNormFault final : public backend::OpObserver {
 public:
  explicit RmsNormFault(backend::Backend& backend) : backend_(backend) { backend_.add_observer(this); }
  ~RmsNormFault() override { backend_.remove_observer(this); }
  std::atomic<int> failures_left{0};

  void before_op(const backend::OpCall& call) override {
    if (call.kind == backend::OpKind::RmsNorm && failures_left.load() > 0) {
      failures_left.fetch_sub(1);
      fail("rms_norm: injected fault");
    }
  }

 private:
  backend::Backend& backend_;
};

struct Outcome {
  std::vector<int32_t> tokens;
  std::optional<FinishReason> finish;
  std::string error;
};

Outcome drain(RequestHandle& h) {
  Outcome out;
  StreamChunk chunk;
  while (h.next(chunk)) {
    for (const GeneratedToken& t : chunk.tokens) out.tokens.push_back(t.token);
    if (chunk.finished) {
      out.finish = chunk.finish_reason;
      out.error = chunk.error;
    }
  }
  return out;
}

class EngineFaults : public testing::EngineModelTest {
 protected:
  // Three prompts of 40-70 tokens from different places in the text (no shared prefix), and
  // their greedy outputs on a fault-free engine.
  void SetUp() override {
    EngineModelTest::SetUp();  // skips without a device in the CUDA build
    if (IsSkipped()) return;
    const auto& text = *text_tokens_;
    for (size_t start : {0u, 120u, 240u}) {
      cases_.push_back({std::vector<int32_t>(text.begin() + static_cast<std::ptrdiff_t>(start),
                                             text.begin() + static_cast<std::ptrdiff_t>(start + 40 + start / 8)),
                        24});
    }
    Engine clean(handle(), config(512));
    expected_ = run_all(clean, cases_);
  }

  std::vector<RequestHandle> submit(Engine& engine) {
    std::vector<RequestHandle> handles;
    for (const Case& c : cases_) handles.push_back(engine.add_request(c.prompt, greedy(c.max_tokens)));
    return handles;
  }

  std::vector<Case> cases_;
  std::vector<std::vector<int32_t>> expected_;
};

TEST_F(EngineFaults, AnExceptionInOneRequestEndsOnlyThatRequest) {
  Engine engine(handle(), config(512));
  std::vector<RequestHandle> handles = submit(engine);
  const uint64_t victim = handles[1].id();
  int calls = 0;
  engine::EngineTestAccess::set_logits_hook(engine, [&](uint64_t id, std::span<float>) {
    if (id == victim && ++calls == 6) fail("sampler: injected fault");  // mid-generation
  });
  while (engine.has_unfinished()) engine.step();
  const Outcome a = drain(handles[0]), b = drain(handles[1]), c = drain(handles[2]);
  EXPECT_EQ(b.finish, FinishReason::Error);
  EXPECT_NE(b.error.find("injected fault"), std::string::npos) << b.error;
  EXPECT_EQ(b.tokens.size(), 5u);  // the five before the fault, as they were
  EXPECT_EQ(b.tokens, std::vector<int32_t>(expected_[1].begin(), expected_[1].begin() + 5));
  EXPECT_EQ(a.finish, FinishReason::Length);
  EXPECT_EQ(c.finish, FinishReason::Length);
  EXPECT_EQ(a.tokens, expected_[0]);
  EXPECT_EQ(c.tokens, expected_[2]);
  EXPECT_EQ(engine.stats().kv_blocks_used, 0);
  // The engine goes on: the victim's prompt again, without the fault, gives its full output.
  engine::EngineTestAccess::set_logits_hook(engine, {});
  RequestHandle again = engine.add_request(cases_[1].prompt, greedy(cases_[1].max_tokens));
  while (engine.has_unfinished()) engine.step();
  EXPECT_EQ(drain(again).tokens, expected_[1]);
}

TEST_F(EngineFaults, NonFiniteLogitsEndTheRequestAndPublishNothingOfIt) {
  Engine engine(handle(), config(512));
  std::vector<RequestHandle> handles = submit(engine);
  const uint64_t victim = handles[2].id();
  // NaN in the victim's first logits: its prompt's K/V, computed in that step, is not trusted.
  engine::EngineTestAccess::set_logits_hook(engine, [&](uint64_t id, std::span<float> rows) {
    if (id == victim) rows[rows.size() / 2] = std::numeric_limits<float>::quiet_NaN();
  });
  while (engine.has_unfinished()) engine.step();
  const Outcome a = drain(handles[0]), b = drain(handles[1]), c = drain(handles[2]);
  EXPECT_EQ(c.finish, FinishReason::Error);
  EXPECT_NE(c.error.find("non-finite"), std::string::npos) << c.error;
  EXPECT_TRUE(c.tokens.empty());
  EXPECT_EQ(a.tokens, expected_[0]);
  EXPECT_EQ(b.tokens, expected_[1]);
  EXPECT_EQ(engine.stats().kv_blocks_used, 0);
  // Its prompt again finds none of its blocks in the prefix cache (the others' prompts share no
  // prefix with it), and comes out right.
  engine::EngineTestAccess::set_logits_hook(engine, {});
  const uint64_t hits = engine.stats().prefix_hit_blocks;
  RequestHandle again = engine.add_request(cases_[2].prompt, greedy(cases_[2].max_tokens));
  while (engine.has_unfinished()) engine.step();
  EXPECT_EQ(drain(again).tokens, expected_[2]);
  EXPECT_EQ(engine.stats().prefix_hit_blocks, hits);
  // While a request computed without a fault is found there: the check above can fail.
  RequestHandle cached = engine.add_request(cases_[0].prompt, greedy(2));
  while (engine.has_unfinished()) engine.step();
  drain(cached);
  EXPECT_GT(engine.stats().prefix_hit_blocks, hits);
}

TEST_F(EngineFaults, AFailedForwardPassEndsItsBatchAndTheEngineGoesOn) {
  RmsNormFault faulty(*backend_);
  Engine engine(handle(), config(512));
  std::vector<RequestHandle> handles = submit(engine);
  for (int i = 0; i < 4; ++i) engine.step();  // prefill done, generating
  faulty.failures_left = 1;                   // mid-step: the backend's step is aborted, and the next one opens
  engine.step();
  EXPECT_FALSE(engine.has_unfinished());
  for (RequestHandle& h : handles) {
    const Outcome o = drain(h);
    EXPECT_EQ(o.finish, FinishReason::Error);
    EXPECT_NE(o.error.find("forward pass failed: rms_norm: injected fault"), std::string::npos) << o.error;
    EXPECT_FALSE(o.tokens.empty());
  }
  EXPECT_EQ(engine.stats().kv_blocks_used, 0);
  RequestHandle after = engine.add_request(cases_[0].prompt, greedy(cases_[0].max_tokens));
  while (engine.has_unfinished()) engine.step();
  const Outcome o = drain(after);
  EXPECT_EQ(o.finish, FinishReason::Length);
  EXPECT_EQ(o.tokens, expected_[0]);
}

}  // namespace
}  // namespace lumen
