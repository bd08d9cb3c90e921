// The model-based proposers (layer skip, a draft model) through the engine on a 3-layer
// synthetic target: the output is the output without drafts, greedy and seeded, under
// preemption and abort, with chains and with token trees of the draft's likeliest tokens; a
// draft of another vocabulary, or layer skip with too many layers, is refused.
#include <filesystem>
#include <map>
#include <string>

#include "lumen/error.h"
#include "speculative_engine_fixture.h"

namespace lumen::testing {
namespace {

// The model-based proposers through the same checks, with their own drafts: a 3-layer target
// (so layer skip has layers to skip) and draft models that are the target's own file (every
// greedy draft accepted) or another model of the same vocabulary (most drafts rejected).
enum class Drafter { LayerSkip1, LayerSkip2, TargetAsDraft, OtherModel };

std::string drafter_name(const ::testing::TestParamInfo<Drafter>& info) {
  switch (info.param) {
    case Drafter::LayerSkip1: return "LayerSkip1";
    case Drafter::LayerSkip2: return "LayerSkip2";
    case Drafter::TargetAsDraft: return "TargetAsDraft";
    case Drafter::OtherModel: return "OtherModel";
  }
  return "unknown";
}

class EngineModelDrafts : public EngineSpeculative, public ::testing::WithParamInterface<Drafter> {
 protected:
  static void SetUpTestSuite() {
    set_up_model(3);
    if (!have_testdata()) return;
    other_path_ = new std::string(temp_model_path("other_draft"));
    write_model(*other_path_, 1, 6);
  }
  static void TearDownTestSuite() {
    if (other_path_ != nullptr) std::filesystem::remove(*other_path_);
    delete other_path_;
    other_path_ = nullptr;
    plain_runs_.clear();
    SynthEngineTest::TearDownTestSuite();
  }

  static EngineConfig drafting(Drafter drafter, int64_t kv_blocks, int32_t k = 4) {
    EngineConfig c = config(kv_blocks);
    SpeculativeConfig& s = c.speculative;
    s.num_speculative_tokens = k;
    s.min_acceptance_rate = 0.0;  // drafts that keep failing must still be verified
    switch (drafter) {
      case Drafter::LayerSkip1:
      case Drafter::LayerSkip2:
        s.method = SpeculativeMethod::LayerSkip;
        s.num_layers = drafter == Drafter::LayerSkip1 ? 1 : 2;
        break;
      case Drafter::TargetAsDraft:
        s.method = SpeculativeMethod::DraftModel;
        s.model = *path_;
        break;
      case Drafter::OtherModel:
        s.method = SpeculativeMethod::DraftModel;
        s.model = *other_path_;
        break;
    }
    return c;
  }
  EngineConfig drafting(int64_t kv_blocks, int32_t k = 4) const { return drafting(GetParam(), kv_blocks, k); }

  // The plain run of a test's workload, computed once for all drafters (it does not depend on
  // them), so each drafter costs only its own run.
  static const Run& plain(const std::string& workload, const std::vector<std::vector<int32_t>>& ps,
                          const std::vector<SamplingParams>& params) {
    auto it = plain_runs_.find(workload);
    if (it == plain_runs_.end()) it = plain_runs_.emplace(workload, run(config(512), ps, params)).first;
    return it->second;
  }

  // Under the sanitizers (10x slower, and CI's time is short) each test runs one drafter, a
  // different one per test, so every drafter and every path still runs once.
  bool skipped_under_sanitizers(Drafter kept) const { return kUnderSanitizers && GetParam() != kept; }

  static inline std::string* other_path_ = nullptr;
  static inline std::map<std::string, Run> plain_runs_;
};

TEST_P(EngineModelDrafts, GreedyOutputIsTheOutputWithoutDrafts) {
  if (skipped_under_sanitizers(Drafter::LayerSkip2)) GTEST_SKIP() << "one drafter per test under the sanitizers";
  const auto ps = prompts(kUnderSanitizers ? 3 : 5);
  std::vector<SamplingParams> params;
  const int64_t first = kUnderSanitizers ? 12 : 20, step = kUnderSanitizers ? 2 : 3;
  for (size_t i = 0; i < ps.size(); ++i) params.push_back(greedy(first + step * static_cast<int64_t>(i)));
  params[1].logprobs = 3;
  const Run& reference = plain("greedy", ps, params);
  const Run with = run(drafting(512), ps, params);
  expect_same_output(with, reference);
  EXPECT_GT(with.stats.spec_drafts, 0u);
  if (GetParam() == Drafter::TargetAsDraft) {
    // The draft is the target: every greedy draft token is the target's own choice.
    EXPECT_EQ(with.stats.spec_accepted_tokens, with.stats.spec_draft_tokens);
    EXPECT_LT(with.stats.steps, reference.stats.steps);
  }
}

TEST_P(EngineModelDrafts, SeededSamplingIsTheOutputWithoutDrafts) {
  if (skipped_under_sanitizers(Drafter::OtherModel)) GTEST_SKIP() << "one drafter per test under the sanitizers";
  SamplingParams p;
  p.temperature = 0.8f;
  p.top_k = 40;
  p.top_p = 0.9f;
  p.repetition_penalty = 1.1f;
  p.max_tokens = kUnderSanitizers ? 10 : 16;
  p.logprobs = 2;
  p.seed = 99;
  SamplingParams n3 = p;
  n3.n = 3;
  n3.seed = 7;
  const auto ps = prompts(2);
  const std::vector<SamplingParams> params = {p, n3};
  const Run with = run(drafting(512), ps, params);
  expect_same_output(with, plain("sampled", ps, params));
  EXPECT_GT(with.stats.spec_drafts, 0u);
}

TEST_P(EngineModelDrafts, PreemptedAndAbortedSequencesKeepThePlainOutput) {
  if (skipped_under_sanitizers(Drafter::TargetAsDraft)) GTEST_SKIP() << "one drafter per test under the sanitizers";
  const auto ps = prompts(4);
  const std::vector<SamplingParams> params(4, greedy(kUnderSanitizers ? 10 : 16));
  const Run& reference = plain("preempted", ps, params);
  for (PreemptionMode mode : {PreemptionMode::Recompute, PreemptionMode::Swap}) {
    SCOPED_TRACE(mode == PreemptionMode::Swap ? "swap" : "recompute");
    EngineConfig c = drafting(22);
    c.preemption_mode = mode;
    const Run with = run(c, ps, params);
    expect_same_output(with, reference);
    EXPECT_GT(with.stats.preemptions, 0u);
    EXPECT_GT(with.stats.spec_drafts, 0u);
  }
  // The aborted request may not finish before its abort: a draft that is always accepted
  // yields 1 + k tokens a step.
  std::vector<SamplingParams> long_second = params;
  long_second[1].max_tokens = 60;
  const Run aborted = run(drafting(512), ps, long_second, nullptr, 3, /*abort_index=*/1);
  EXPECT_EQ(aborted.results[1].finish, FinishReason::Abort);
  EXPECT_LT(aborted.results[1].tokens.size(), 60u);
  for (size_t i : {0u, 2u, 3u}) EXPECT_EQ(aborted.results[i].tokens, reference.results[i].tokens);
}

INSTANTIATE_TEST_SUITE_P(Drafters, EngineModelDrafts,
                         ::testing::Values(Drafter::LayerSkip2, Drafter::TargetAsDraft, Drafter::OtherModel),
                         drafter_name);

using EngineDraftConfig = EngineModelDrafts;

// Token trees (num_candidates 3): the draft's two next likeliest tokens as leaves beside each
// token of its greedy chain. With the target as its own draft and sampling restricted to the
// target's top 3, every sampled token is a node of the tree at its depth, so tokens the chain
// misses are won by leaves; a greedy request's chain is always right.
TEST_F(EngineDraftConfig, TokenTreesOfTheDraftsLikeliestTokensKeepTheOutput) {
  SamplingParams top3;
  top3.temperature = 1.5f;
  top3.top_k = 3;
  top3.max_tokens = kUnderSanitizers ? 12 : 24;
  top3.logprobs = 2;
  top3.seed = 5;
  SamplingParams n2 = top3;
  n2.n = 2;
  n2.seed = 6;
  const auto ps = prompts(3);
  const std::vector<SamplingParams> params = {greedy(kUnderSanitizers ? 12 : 24), top3, n2};
  const Run& reference = plain("tree", ps, params);
  const std::vector<Drafter> drafters = kUnderSanitizers ? std::vector<Drafter>{Drafter::TargetAsDraft}
                                                         : std::vector<Drafter>{Drafter::TargetAsDraft, Drafter::OtherModel,
                                                                                Drafter::LayerSkip2};
  for (const Drafter d : drafters) {
    for (const int64_t blocks : {512, 22}) {
      if (kUnderSanitizers && blocks == 22) continue;
      SCOPED_TRACE(drafter_name(::testing::TestParamInfo<Drafter>(d, 0)) + ", " + std::to_string(blocks) + " blocks");
      EngineConfig c = drafting(d, blocks);
      c.speculative.num_candidates = 3;
      c.preemption_mode = PreemptionMode::Swap;
      const Run with = run(c, ps, params);
      expect_same_output(with, reference);
      EXPECT_GT(with.stats.spec_drafts, 0u);
      EXPECT_LE(with.stats.spec_branch_tokens, with.stats.spec_accepted_tokens);
      if (blocks == 22) {
        EXPECT_GT(with.stats.preemptions, 0u);
      }
      if (d == Drafter::TargetAsDraft) {
        EXPECT_GT(with.stats.spec_branch_tokens, 0u);
      }
    }
  }
  // Greedy alone, the target as draft: the chain is the target's own choice at every depth.
  const std::vector<std::vector<int32_t>> first = {ps[0]};
  EngineConfig c = drafting(Drafter::TargetAsDraft, 512);
  c.speculative.num_candidates = 3;
  const Run greedy_only = run(c, first, {params[0]});
  EXPECT_EQ(greedy_only.results[0].tokens, reference.results[0].tokens);
  EXPECT_GT(greedy_only.stats.spec_accepted_tokens, 0u);
  EXPECT_EQ(greedy_only.stats.spec_branch_tokens, 0u);
}

TEST_F(EngineDraftConfig, ADraftWithAnotherVocabularyIsRefused) {
  const std::string phi3 = temp_model_path("phi3_vocab_draft");
  write_model(phi3, 1, 7, "ggml-vocab-phi-3.gguf");
  EngineConfig c = drafting(Drafter::OtherModel, 64);
  c.speculative.model = phi3;
  try {
    Engine engine(handle(), c);
    ADD_FAILURE() << "a draft with another vocabulary was accepted";
  } catch (const Error& e) {
    // Synth pads the target's 32000 tokens to 32064 as the phi-3 vocabulary has them: the same
    // size, and the first difference is named.
    EXPECT_NE(std::string(e.what()).find("token 32000 is \"<|endoftext|>\" in the draft and \"<|synth_pad_0|>\" in "
                                         "the target"),
              std::string::npos)
        << e.what();
  }
  std::filesystem::remove(phi3);
}

TEST_F(EngineDraftConfig, LayerSkipNeedsFewerLayersThanTheTargetAndADraftMustLoad) {
  EngineConfig c = drafting(Drafter::LayerSkip1, 64);
  c.speculative.num_layers = 3;
  EXPECT_THROW(
      {
        try {
          Engine engine(handle(), c);
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("below the target's 3 layers"), std::string::npos) << e.what();
          throw;
        }
      },
      Error);
  c = drafting(Drafter::OtherModel, 64);
  c.speculative.model = "/nonexistent/draft.gguf";
  EXPECT_THROW(
      {
        try {
          Engine engine(handle(), c);
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("/nonexistent/draft.gguf does not load"), std::string::npos) << e.what();
          throw;
        }
      },
      Error);
}

}  // namespace
}  // namespace lumen::testing
