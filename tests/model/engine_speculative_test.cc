// Speculative decoding (n-gram prompt lookup) on the real default model: greedy output is token
// for token the output without it, over many prompts at once — input-grounded ones (repeat,
// rewrite or extract a passage, where drafts are accepted often) and plain continuations — and a
// seeded, penalized sampling request yields the same tokens too. Acceptance on the grounded
// prompts is reported and must be substantial (else the test would say little).
#include <gtest/gtest.h>

#include "engine_fixture.h"

namespace lumen {
namespace {

class EngineSpeculativeModel : public testing::EngineModelTest {
 protected:
  static EngineConfig with_ngram(EngineConfig c) {
    c.speculative.method = SpeculativeMethod::Ngram;
    c.speculative.num_speculative_tokens = 5;
    c.speculative.prompt_lookup_max = 4;
    c.speculative.prompt_lookup_min = 2;
    c.speculative.disable_by_batch_size = 0;  // the whole batch speculates
    return c;
  }

  // A chat prompt asking to work on a passage of the text.
  static std::vector<int32_t> grounded(const std::string& task, size_t offset, size_t chars) {
    const std::string passage = std::string(testing::kText).substr(offset, chars);
    return handle().tokenize("<|im_start|>user\n" + task + "\n\n" + passage + "<|im_end|>\n<|im_start|>assistant\n",
                             {.add_special = true, .parse_special = true});
  }

  static std::vector<GenerationResult> run(Engine& engine, const std::vector<std::vector<int32_t>>& prompts,
                                           const SamplingParams& params) {
    std::vector<RequestHandle> handles;
    for (const auto& p : prompts) handles.push_back(engine.add_request(p, params));
    while (engine.has_unfinished()) engine.step();
    std::vector<GenerationResult> out;
    for (RequestHandle& h : handles) out.push_back(h.collect());
    return out;
  }
};

TEST_F(EngineSpeculativeModel, GreedyOutputIsTheOutputWithoutSpeculation) {
  std::vector<std::vector<int32_t>> prompts;
  const char* tasks[] = {"Repeat the following text exactly.", "Rewrite the following text in your own words.",
                         "Extract the sentences about the lighthouse from this text.",
                         "Summarize the following text."};
  for (size_t i = 0; i < 8; ++i) prompts.push_back(grounded(tasks[i % 4], 40 * i, 500));
  const size_t n_grounded = prompts.size();
  for (const testing::Case& c : cases(8, 31, 120, 1)) prompts.push_back(c.prompt);
  SamplingParams params = greedy(64);
  params.ignore_eos = false;  // ends where the model ends, with or without speculation
  params.logprobs = 1;

  Engine plain(handle(), config(2048));
  const std::vector<GenerationResult> expected = run(plain, prompts, params);
  Engine speculative(handle(), with_ngram(config(2048)));
  const std::vector<GenerationResult> got = run(speculative, prompts, params);
  for (size_t i = 0; i < prompts.size(); ++i) {
    SCOPED_TRACE("prompt " + std::to_string(i));
    EXPECT_EQ(got[i].tokens, expected[i].tokens);
    EXPECT_EQ(got[i].text, expected[i].text);
    EXPECT_EQ(got[i].finish, expected[i].finish);
    EXPECT_EQ(got[i].logprobs, expected[i].logprobs);
  }
  const EngineStats s = speculative.stats();
  EXPECT_EQ(s.kv_blocks_used, 0);
  EXPECT_LT(s.steps, plain.stats().steps);

  // Alone (batch 1), the grounded prompts: how much of the drafts the model takes.
  Engine alone(handle(), with_ngram(config(2048)));
  for (size_t i = 0; i < n_grounded; ++i) {
    EXPECT_EQ(run(alone, {prompts[i]}, params)[0].tokens, expected[i].tokens) << "prompt " << i;
  }
  const EngineStats a = alone.stats();
  const double rate = static_cast<double>(a.spec_accepted_tokens) / static_cast<double>(a.spec_draft_tokens);
  const double mean_length = 1.0 + static_cast<double>(a.spec_accepted_tokens) / static_cast<double>(a.spec_drafts);
  std::printf("grounded prompts alone: %llu drafts, acceptance rate %.2f, mean accepted length %.2f\n",
              static_cast<unsigned long long>(a.spec_drafts), rate, mean_length);
  EXPECT_GT(rate, 0.3);
  EXPECT_GT(mean_length, 2.0);
}

TEST_F(EngineSpeculativeModel, SeededSamplingYieldsTheSameTokens) {
  SamplingParams params;
  params.temperature = 0.7f;
  params.top_p = 0.9f;
  params.top_k = 40;
  params.repetition_penalty = 1.1f;
  params.presence_penalty = 0.3f;
  params.max_tokens = 48;
  params.seed = 2024;
  params.n = 2;
  std::vector<std::vector<int32_t>> prompts = {grounded("Repeat the following text exactly.", 0, 400),
                                               grounded("Rewrite the following text.", 200, 400)};
  auto both = [&](Engine& engine) {
    std::vector<std::vector<int32_t>> out;
    std::vector<RequestHandle> handles;
    for (const auto& p : prompts) {
      for (RequestHandle& h : engine.add_request_n(p, params)) handles.push_back(h);
    }
    while (engine.has_unfinished()) engine.step();
    for (RequestHandle& h : handles) out.push_back(h.collect().tokens);
    return out;
  };
  Engine plain(handle(), config(2048));
  Engine speculative(handle(), with_ngram(config(2048)));
  EXPECT_EQ(both(speculative), both(plain));
  EXPECT_GT(speculative.stats().spec_accepted_tokens, 0u);
}

// Lookahead decoding: no draft model, no lookup in the prompt. Greedy output with it (and with
// token trees: its own, n-gram prompt lookup's and layer skip's) is the output without it over grounded and
// open-ended prompts batched together, and on open-ended
// chat prompts (nothing to copy) the n-gram pool its Jacobi window fills proposes drafts the
// model accepts.
class EngineLookaheadModel : public EngineSpeculativeModel {
 protected:
  static EngineConfig with_lookahead(EngineConfig c) {
    c.speculative.method = SpeculativeMethod::Lookahead;
    c.speculative.window_size = 4;
    c.speculative.ngram_size = 4;
    c.speculative.guess_set_size = 4;
    c.speculative.disable_by_batch_size = 0;  // the whole batch speculates
    c.speculative.min_acceptance_rate = 0.0;  // and never pauses
    return c;
  }
  static std::vector<int32_t> chat(const std::string& user) {
    return handle().tokenize("<|im_start|>user\n" + user + "<|im_end|>\n<|im_start|>assistant\n",
                             {.add_special = true, .parse_special = true});
  }
};

TEST_F(EngineLookaheadModel, GreedyOutputIsTheOutputWithoutSpeculation) {
  std::vector<std::vector<int32_t>> prompts;
  prompts.push_back(grounded("Repeat the following text exactly.", 0, 400));
  prompts.push_back(grounded("Summarize the following text.", 300, 400));
  prompts.push_back(chat("Write a short story about a robot who learns to paint."));
  prompts.push_back(chat("List ten fruits, one per line."));
  for (const testing::Case& c : cases(1, 47, 100, 1)) prompts.push_back(c.prompt);
  SamplingParams params = greedy(32);
  params.ignore_eos = false;
  params.logprobs = 1;
  Engine plain(handle(), config(2048));
  const std::vector<GenerationResult> expected = run(plain, prompts, params);
  // As a chain, and verifying several candidates as a token tree (lookahead's pooled n-grams,
  // n-gram matches of every length).
  EngineConfig tree = with_lookahead(config(2048));
  tree.speculative.num_candidates = 4;
  EngineConfig ngram_tree = with_ngram(config(2048));
  ngram_tree.speculative.num_candidates = 3;
  // Layer skip's tree: the first 26 of 30 layers draft a chain, their next two likeliest tokens
  // at each depth ride beside it.
  EngineConfig layer_tree = config(2048);
  layer_tree.speculative.method = SpeculativeMethod::LayerSkip;
  layer_tree.speculative.num_layers = 26;
  layer_tree.speculative.num_speculative_tokens = 3;
  layer_tree.speculative.num_candidates = 3;
  layer_tree.speculative.disable_by_batch_size = 0;
  layer_tree.speculative.min_acceptance_rate = 0.0;
  for (const EngineConfig& c : {with_lookahead(config(2048)), tree, ngram_tree, layer_tree}) {
    const SpeculativeMethod m = c.speculative.method;
    SCOPED_TRACE(m == SpeculativeMethod::Ngram       ? "ngram tree"
                 : m == SpeculativeMethod::LayerSkip ? "layer skip tree"
                                                     : (c.speculative.num_candidates > 1 ? "lookahead tree" : "lookahead"));
    Engine speculative(handle(), c);
    const std::vector<GenerationResult> got = run(speculative, prompts, params);
    for (size_t i = 0; i < prompts.size(); ++i) {
      SCOPED_TRACE("prompt " + std::to_string(i));
      EXPECT_EQ(got[i].tokens, expected[i].tokens);
      EXPECT_EQ(got[i].text, expected[i].text);
      EXPECT_EQ(got[i].finish, expected[i].finish);
      EXPECT_EQ(got[i].logprobs, expected[i].logprobs);
    }
    EXPECT_EQ(speculative.stats().kv_blocks_used, 0);
    EXPECT_GT(speculative.stats().spec_accepted_tokens, 0u);
  }
}

TEST_F(EngineLookaheadModel, ItsOwnNgramsAreAcceptedWithoutThePromptHoldingThem) {
  // Open-ended requests whose answers repeat themselves (lists, a story that loops), alone.
  const std::vector<std::vector<int32_t>> prompts = {
      chat("Write a short story about a robot who learns to paint."),
      chat("List the days of the week, then list them again."),
  };
  SamplingParams params = greedy(64);
  Engine plain(handle(), config(2048));
  Engine lookahead(handle(), with_lookahead(config(2048)));
  for (const auto& p : prompts) {
    EXPECT_EQ(run(lookahead, {p}, params)[0].tokens, run(plain, {p}, params)[0].tokens);
  }
  const EngineStats s = lookahead.stats();
  const double rate = static_cast<double>(s.spec_accepted_tokens) / static_cast<double>(s.spec_draft_tokens);
  std::printf("lookahead on open-ended prompts: %llu drafts, %llu of %llu draft tokens accepted (%.2f)\n",
              static_cast<unsigned long long>(s.spec_drafts), static_cast<unsigned long long>(s.spec_accepted_tokens),
              static_cast<unsigned long long>(s.spec_draft_tokens), rate);
  EXPECT_GT(s.spec_accepted_tokens, 10u);
  EXPECT_LT(s.steps, plain.stats().steps);  // accepted drafts saved steps
}

}  // namespace
}  // namespace lumen
