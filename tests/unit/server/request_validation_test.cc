// Request fields into SamplingParams: OpenAI's names, types and ranges, and a 400 naming the
// field for anything else.
#include <gtest/gtest.h>

#include <random>

#include "server/api_error.h"
#include "server/chat_request.h"
#include "server/json_body.h"
#include "server/request_fields.h"
#include "server/sampling_request.h"
#include "util/error.h"

namespace lumen::server {
namespace {

const ServingLimits kLimits{.vocab_size = 1000, .max_model_len = 512};

GenerationOptions parse(const std::string& body, Endpoint endpoint = Endpoint::Completions) {
  return parse_generation_options(parse_json_body(body), endpoint, kLimits);
}

// The param an ApiError names, or "" when parsing succeeded.
std::string rejected_param(const std::string& body, Endpoint endpoint = Endpoint::Completions) {
  try {
    parse(body, endpoint);
    return "";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    return e.param().empty() ? "?" : e.param();
  }
}

TEST(GenerationOptions, DefaultsWhenFieldsAreAbsentOrNull) {
  auto o = parse(R"({"temperature": null, "stop": null})");
  EXPECT_EQ(o.n, 1);
  EXPECT_FALSE(o.stream);
  EXPECT_FALSE(o.max_tokens_given);
  EXPECT_FLOAT_EQ(o.params.temperature, 1.0f);
  EXPECT_TRUE(o.params.stop.empty());
  EXPECT_FALSE(o.params.logprobs.has_value());
}

TEST(GenerationOptions, ReadsEveryField) {
  auto o = parse(R"({"temperature": 0.5, "top_p": 0.9, "top_k": 40, "min_p": 0.05, "frequency_penalty": 0.5,
                     "presence_penalty": -0.5, "repetition_penalty": 1.1, "logit_bias": {"7": -100, "9": 2.5},
                     "seed": 42, "max_tokens": 100, "min_tokens": 3, "stop": ["\n", "END"],
                     "stop_token_ids": [1, 2], "ignore_eos": true, "logprobs": 5, "n": 3, "stream": true,
                     "stream_options": {"include_usage": true}})");
  EXPECT_FLOAT_EQ(o.params.temperature, 0.5f);
  EXPECT_FLOAT_EQ(o.params.top_p, 0.9f);
  EXPECT_EQ(o.params.top_k, 40);
  EXPECT_FLOAT_EQ(o.params.min_p, 0.05f);
  EXPECT_FLOAT_EQ(o.params.frequency_penalty, 0.5f);
  EXPECT_FLOAT_EQ(o.params.presence_penalty, -0.5f);
  EXPECT_FLOAT_EQ(o.params.repetition_penalty, 1.1f);
  EXPECT_FLOAT_EQ(o.params.logit_bias.at(7), -100.0f);
  EXPECT_FLOAT_EQ(o.params.logit_bias.at(9), 2.5f);
  EXPECT_EQ(o.params.seed, 42u);
  EXPECT_EQ(o.params.max_tokens, 100);
  EXPECT_TRUE(o.max_tokens_given);
  EXPECT_EQ(o.params.min_tokens, 3);
  EXPECT_EQ(o.params.stop, (std::vector<std::string>{"\n", "END"}));
  EXPECT_EQ(o.params.stop_token_ids, (std::vector<int32_t>{1, 2}));
  EXPECT_TRUE(o.params.ignore_eos);
  EXPECT_EQ(o.params.logprobs, 5);
  EXPECT_EQ(o.n, 3);
  EXPECT_TRUE(o.stream);
  EXPECT_TRUE(o.include_usage);
  EXPECT_NO_THROW(o.params.validate_for_vocab(kLimits.vocab_size));
}

TEST(GenerationOptions, ReadsTheDecodingExtensions) {
  auto o = parse(R"({"n": 2, "best_of": 4, "use_beam_search": true, "length_penalty": 0.5,
                     "early_stopping": true, "prompt_logprobs": 3, "stop_token_ids": [5]})");
  EXPECT_EQ(o.params.n, 2);
  EXPECT_EQ(o.params.best_of, 4);
  EXPECT_TRUE(o.params.use_beam_search);
  EXPECT_FLOAT_EQ(o.params.length_penalty, 0.5f);
  EXPECT_TRUE(o.params.early_stopping);
  EXPECT_EQ(o.params.prompt_logprobs, 3);
  EXPECT_TRUE(o.prompt_logprobs_field);
  EXPECT_NO_THROW(o.params.validate_for_vocab(kLimits.vocab_size));
  // Beam search results arrive at the end, but may be streamed; best_of > n may not.
  EXPECT_NO_THROW(parse(R"({"use_beam_search": true, "best_of": 3, "stream": true})"));
}

TEST(GenerationOptions, StopAsOneStringAndIntegralFloats) {
  auto o = parse(R"({"stop": "###", "max_tokens": 20.0, "seed": -1})");
  EXPECT_EQ(o.params.stop, std::vector<std::string>{"###"});
  EXPECT_EQ(o.params.max_tokens, 20);
  // -1 is llama-server's and vLLM's "no seed" (a random one), not 2^64 - 1.
  EXPECT_FALSE(o.params.seed.has_value());
  EXPECT_EQ(parse(R"({"seed": 18446744073709551615})").params.seed, UINT64_MAX);
  EXPECT_EQ(parse(R"({"seed": 0})").params.seed, 0u);
  EXPECT_EQ(parse(R"({"seed": 7.0})").params.seed, 7u);
}

TEST(GenerationOptions, ChatLogprobsAndTokenLimit) {
  auto o = parse(R"({"logprobs": true, "top_logprobs": 4, "max_completion_tokens": 9, "max_tokens": 50})",
                 Endpoint::ChatCompletions);
  EXPECT_EQ(o.params.logprobs, 4);
  EXPECT_EQ(o.params.max_tokens, 9);
  EXPECT_EQ(parse(R"({"logprobs": true})", Endpoint::ChatCompletions).params.logprobs, 0);
  EXPECT_FALSE(parse(R"({"logprobs": false})", Endpoint::ChatCompletions).params.logprobs.has_value());
  EXPECT_EQ(rejected_param(R"({"top_logprobs": 2})", Endpoint::ChatCompletions), "top_logprobs");
  EXPECT_EQ(rejected_param(R"({"logprobs": 3})", Endpoint::ChatCompletions), "logprobs");
  EXPECT_EQ(rejected_param(R"({"logprobs": true})", Endpoint::Completions), "logprobs");
}

TEST(GenerationOptions, EveryWrongTypeOrRangeNamesItsField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"temperature": "hot"})", "temperature"},    {R"({"temperature": 2.5})", "temperature"},
      {R"({"temperature": -0.1})", "temperature"},     {R"({"top_p": 0})", "top_p"},
      {R"({"top_p": 1.01})", "top_p"},                 {R"({"top_k": -2})", "top_k"},
      {R"({"top_k": 1.5})", "top_k"},                  {R"({"min_p": 2})", "min_p"},
      {R"({"frequency_penalty": 3})", "frequency_penalty"}, {R"({"presence_penalty": [1]})", "presence_penalty"},
      {R"({"repetition_penalty": 0})", "repetition_penalty"}, {R"({"logit_bias": [1]})", "logit_bias"},
      {R"({"logit_bias": {"x": 1}})", "logit_bias"},   {R"({"logit_bias": {"1000": 1}})", "logit_bias"},
      {R"({"logit_bias": {"-1": 1}})", "logit_bias"},  {R"({"logit_bias": {"5": 101}})", "logit_bias"},
      {R"({"logit_bias": {"5": "a"}})", "logit_bias"}, {R"({"logit_bias": {"5x": 1}})", "logit_bias"},
      {R"({"seed": "1"})", "seed"},                    {R"({"seed": 1.5})", "seed"},
      {R"({"seed": 1e30})", "seed"},                   {R"({"seed": -2})", "seed"},
      {R"({"seed": -1.5})", "seed"},                   {R"({"seed": -9223372036854775808})", "seed"},
      {R"({"seed": 18446744073709551616})", "seed"},   {R"({"max_tokens": 0})", "max_tokens"},
      {R"({"max_tokens": 513})", "max_tokens"},        {R"({"max_tokens": 1e300})", "max_tokens"},
      {R"({"max_tokens": 99999999999999999999999})", "max_tokens"}, {R"({"max_tokens": true})", "max_tokens"},
      {R"({"min_tokens": -1})", "min_tokens"},         {R"({"stop": 5})", "stop"},
      {R"({"stop": [""]})", "stop"},                   {R"({"stop": ["a", 1]})", "stop"},
      {R"({"stop": ["1","2","3","4","5","6","7","8","9","10","11","12","13","14","15","16","17"]})", "stop"},
      {R"({"stop_token_ids": [1000]})", "stop_token_ids"}, {R"({"stop_token_ids": 5})", "stop_token_ids"},
      {R"({"ignore_eos": 1})", "ignore_eos"},          {R"({"logprobs": 21})", "logprobs"},
      {R"({"logprobs": -1})", "logprobs"},             {R"({"n": 0})", "n"},
      {R"({"n": 17})", "n"},                           {R"({"n": 4, "best_of": 3})", "best_of"},
      {R"({"best_of": 17})", "best_of"},               {R"({"best_of": 3, "stream": true})", "best_of"},
      {R"({"use_beam_search": 1})", "use_beam_search"}, {R"({"use_beam_search": true, "stop": ["x"]})", "stop"},
      {R"({"length_penalty": "x"})", "length_penalty"}, {R"({"length_penalty": 1e9})", "length_penalty"},
      {R"({"early_stopping": 0})", "early_stopping"},  {R"({"prompt_logprobs": 21})", "prompt_logprobs"},
      {R"({"prompt_logprobs": 1, "stream": true})", "prompt_logprobs"}, {R"({"stream": "yes"})", "stream"},
      {R"({"stream_options": {"include_usage": true}})", "stream_options"},
      {R"({"stream": true, "stream_options": 1})", "stream_options"},
      {R"({"stream": true, "stream_options": {"include_usage": "y"}})", "include_usage"},
  };
  for (const auto& [body, param] : cases) EXPECT_EQ(rejected_param(body), param) << body;
}

TEST(GenerationOptions, MinTokensAboveMaxTokensFailsEngineValidation) {
  auto o = parse(R"({"max_tokens": 5, "min_tokens": 6})");
  EXPECT_THROW(o.params.validate_for_vocab(kLimits.vocab_size), Error);
}

TEST(GenerationOptions, RandomFieldValuesOnlyEverGive400) {
  const std::vector<std::string> fields = {"temperature", "top_p", "top_k", "min_p", "typical_p", "frequency_penalty",
                                           "presence_penalty", "repetition_penalty", "logit_bias", "seed",
                                           "max_tokens", "min_tokens", "stop", "stop_token_ids", "ignore_eos",
                                           "logprobs", "n", "best_of", "stream", "stream_options", "top_logprobs",
                                           "use_beam_search", "length_penalty", "early_stopping", "prompt_logprobs"};
  const std::vector<nlohmann::json> values = {nullptr, true, false, 0, -1, 1, 2, 20, 21, 1.5, -1e308, 1e308,
                                              "x", "", nlohmann::json::array(), nlohmann::json::object(),
                                              nlohmann::json::array({1, "a"}), nlohmann::json{{"1", 1}},
                                              nlohmann::json{{"include_usage", 1}}, UINT64_MAX, INT64_MIN};
  std::mt19937 rng(3);
  for (int i = 0; i < 5000; ++i) {
    nlohmann::json body = nlohmann::json::object();
    for (int k = 0; k < 4; ++k) {
      body[fields[rng() % fields.size()]] = values[rng() % values.size()];
    }
    for (Endpoint endpoint : {Endpoint::Completions, Endpoint::ChatCompletions}) {
      try {
        auto o = parse_generation_options(body, endpoint, kLimits);
        // What parsing accepts is either valid for the engine or rejected by its validation.
        try {
          o.params.validate_for_vocab(kLimits.vocab_size);
        } catch (const Error&) {
        }
      } catch (const ApiError& e) {
        EXPECT_EQ(e.status(), 400) << body.dump();
      }
    }
  }
}

TEST(Messages, AcceptsOpenAiShapes) {
  auto m = parse_messages(parse_json_body(R"({"messages": [
      {"role": "system", "content": "be brief"},
      {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}], "name": "u1"},
      {"role": "assistant", "content": null, "reasoning_content": "think"},
      {"role": "tool", "content": "42", "tool_call_id": "t"}]})"));
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[2]["reasoning_content"], "think");  // an assistant's reasoning goes on to the template
  EXPECT_EQ(m[1]["content"], "a\nb");
  EXPECT_EQ(m[1]["name"], "u1");
  EXPECT_EQ(m[2]["content"], "");  // null (beside tool_calls) renders as empty text, as templates need
  EXPECT_EQ(m[3]["tool_call_id"], "t");
}

TEST(Messages, RejectsMalformedConversations) {
  for (const char* body :
       {R"({})", R"({"messages": []})", R"({"messages": "hi"})", R"({"messages": [1]})",
        R"({"messages": [{"content": "x"}]})", R"({"messages": [{"role": "bot", "content": "x"}]})",
        R"({"messages": [{"role": "user", "content": 5}]})", R"({"messages": [{"role": "user", "content": null}]})",
        R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})",
        R"({"messages": [{"role": "user", "content": "x", "name": 3}]})",
        R"({"messages": [{"role": "user", "content": "x", "reasoning_content": "y"}]})",
        R"({"messages": [{"role": "assistant", "content": "x", "reasoning_content": 1}]})"}) {
    try {
      parse_messages(parse_json_body(body));
      ADD_FAILURE() << body;
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status(), 400);
      EXPECT_EQ(e.param(), "messages");
    }
  }
}

}  // namespace
}  // namespace lumen::server
