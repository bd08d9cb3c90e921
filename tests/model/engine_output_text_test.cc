// The text a request yields never carries a control token's text (issue: "<|im_end|>" ended
// every chat reply): a reply that ends on its own ends with the end-of-generation token's id,
// whose text is left out, on every delivery path (streamed sampling, best_of, beam search).
// skip_special_tokens = false brings it back, as vLLM's flag does.
#include <gtest/gtest.h>

#include <string>

#include "engine_fixture.h"

namespace lumen {
namespace {

class EngineOutputText : public testing::EngineModelTest {
 protected:
  // A chat turn the default model answers briefly and ends with <|im_end|>.
  static std::vector<int32_t> chat_prompt() {
    return model_->tokenizer.encode(
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face"
        "<|im_end|>\n<|im_start|>user\nSay hello.<|im_end|>\n<|im_start|>assistant\n",
                                    {.add_special = false, .parse_special = true});
  }

  // The text of every control token of the vocabulary found in `text`, if any.
  static std::string control_text_in(const std::string& text) {
    const auto& tok = model_->tokenizer;
    for (int32_t id = 0; id < static_cast<int32_t>(tok.vocab().size()); ++id) {
      if (!tok.is_special(id)) continue;
      const std::string piece = tok.token_bytes(id);
      if (!piece.empty() && text.find(piece) != std::string::npos) return piece;
    }
    return {};
  }

  static std::vector<GenerationResult> generate(const SamplingParams& params) {
    Engine engine(handle());
    return engine.generate({chat_prompt()}, params);
  }

  static SamplingParams greedy() {
    SamplingParams p;
    p.temperature = 0.0f;
    p.max_tokens = 200;
    return p;
  }

  static void expect_clean_natural_end(const GenerationResult& r) {
    ASSERT_EQ(r.finish, FinishReason::Stop);
    ASSERT_FALSE(r.tokens.empty());
    const auto& eog = model_->tokenizer.vocab().end_of_generation;
    EXPECT_NE(std::find(eog.begin(), eog.end(), r.tokens.back()), eog.end())
        << "the reply did not end on an end-of-generation token";
    EXPECT_FALSE(r.text.empty());
    EXPECT_EQ(control_text_in(r.text), "") << r.text;
  }
};

TEST_F(EngineOutputText, GreedyReplyEndsWithoutTheEndTokenText) {
  const auto results = generate(greedy());
  ASSERT_EQ(results.size(), 1u);
  expect_clean_natural_end(results[0]);
}

TEST_F(EngineOutputText, SkipSpecialTokensOffKeepsTheEndTokenText) {
  SamplingParams p = greedy();
  p.skip_special_tokens = false;
  const auto results = generate(p);
  ASSERT_EQ(results.size(), 1u);
  ASSERT_EQ(results[0].finish, FinishReason::Stop);
  const std::string end = model_->tokenizer.token_bytes(results[0].tokens.back());
  ASSERT_GE(results[0].text.size(), end.size());
  EXPECT_EQ(results[0].text.substr(results[0].text.size() - end.size()), end);
  // Otherwise the same reply.
  EXPECT_EQ(results[0].text.substr(0, results[0].text.size() - end.size()), generate(greedy())[0].text);
}

// stop_token_text off (what the server asks for harmony chats): control tokens stay text, the
// end token's does not.
TEST_F(EngineOutputText, StopTokenTextOffLeavesOnlyTheEndTokenOut) {
  SamplingParams p = greedy();
  p.skip_special_tokens = false;
  p.stop_token_text = false;
  const auto results = generate(p);
  ASSERT_EQ(results.size(), 1u);
  ASSERT_EQ(results[0].finish, FinishReason::Stop);
  EXPECT_TRUE(model_->tokenizer.is_special(results[0].tokens.back()));
  EXPECT_EQ(results[0].text, generate(greedy())[0].text);
}

TEST_F(EngineOutputText, SampledCompletionsAndBestOfLeaveItOut) {
  SamplingParams p = greedy();
  p.temperature = 0.7f;
  p.seed = 11;
  p.n = 3;
  for (std::optional<int32_t> best_of : {std::optional<int32_t>(), std::optional<int32_t>(4)}) {
    p.best_of = best_of;
    const auto results = generate(p);
    ASSERT_EQ(results.size(), 3u);
    for (const auto& r : results) {
      if (r.finish == FinishReason::Stop) expect_clean_natural_end(r);
      EXPECT_EQ(control_text_in(r.text), "") << r.text;
    }
  }
}

TEST_F(EngineOutputText, BeamSearchHypothesesLeaveItOut) {
  SamplingParams p = greedy();
  p.use_beam_search = true;
  p.early_stopping = true;
  p.n = 2;
  p.best_of = 3;
  const auto results = generate(p);
  ASSERT_EQ(results.size(), 2u);
  for (const auto& r : results) expect_clean_natural_end(r);
}

// With ignore_eos an end token does not end the completion, so end tokens land mid-text (the
// bias makes them likely): each is still a token of the result, but none adds text.
TEST_F(EngineOutputText, EndTokensSampledMidTextAddNoText) {
  SamplingParams p;
  p.max_tokens = 16;
  p.seed = 7;
  p.n = 3;
  p.ignore_eos = true;
  for (int32_t eog : model_->tokenizer.vocab().end_of_generation) p.logit_bias[eog] = 8.0f;
  const auto results = generate(p);
  ASSERT_EQ(results.size(), 3u);
  bool sampled_one = false;
  for (const auto& r : results) {
    EXPECT_EQ(r.finish, FinishReason::Length);
    EXPECT_EQ(control_text_in(r.text), "") << r.text;
    for (int32_t t : r.tokens) sampled_one |= model_->tokenizer.is_special(t);
  }
  EXPECT_TRUE(sampled_one) << "the bias should have made end tokens likely";
}

}  // namespace
}  // namespace lumen
