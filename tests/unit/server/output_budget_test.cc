// The output budget: a request's worst-case count of tokens and log-probability entries, and
// the 400 that names the field weighing most.
#include "server/output_budget.h"

#include <gtest/gtest.h>

#include "server/api_error.h"
#include "server/json_body.h"

namespace lumen::server {
namespace {

const ServingLimits kLimits{.vocab_size = 1000, .max_model_len = 4096};

GenerationOptions options(const std::string& body, Endpoint endpoint = Endpoint::Completions) {
  return parse_generation_options(parse_json_body(body), endpoint, kLimits);
}

OutputEstimate estimate(const std::vector<int64_t>& prompts, const std::string& body,
                        Endpoint endpoint = Endpoint::Completions, bool echo = false) {
  GenerationOptions o = options(body, endpoint);
  // What parse_completion_request does for echo with logprobs: the prompt's log-probabilities.
  if (echo && o.params.logprobs) o.params.prompt_logprobs = std::max(o.params.prompt_logprobs.value_or(0), *o.params.logprobs);
  return estimate_output(prompts, o, endpoint, echo, kLimits.max_model_len);
}

TEST(OutputBudget, CountsTheDefaultsOfAPlainRequest) {
  // Completions default to 16 tokens; chat to the rest of the context.
  auto plain = estimate({10}, "{}");
  EXPECT_EQ(plain.prompt_records, 0);
  EXPECT_EQ(plain.generated_records, 16);
  auto chat = estimate({96}, "{}", Endpoint::ChatCompletions);
  EXPECT_EQ(chat.generated_records, 4096 - 96);
  EXPECT_EQ(chat.dominant_param, "max_completion_tokens");
}

TEST(OutputBudget, MultipliesPromptsChoicesEchoAndAlternatives) {
  // The issue's example: 64 long prompts, 16 choices, echo with 20 alternatives.
  std::vector<int64_t> prompts(64, 500);
  auto e = estimate(prompts, R"({"n": 16, "logprobs": 20, "max_tokens": 4})", Endpoint::Completions, true);
  EXPECT_EQ(e.prompt_records, 64 * 16 * 500 * 21);
  EXPECT_EQ(e.generated_records, 64 * 16 * 4 * 21);
  EXPECT_EQ(e.dominant_param, "prompt");
  // Echo without logprobs echoes text only; prompt_logprobs adds its own copy per choice.
  EXPECT_EQ(estimate({100}, R"({"n": 2})", Endpoint::Completions, true).prompt_records, 2 * 100);
  EXPECT_EQ(estimate({100}, R"({"n": 2, "prompt_logprobs": 5})").prompt_records, 2 * 100 * 6);
  EXPECT_EQ(estimate({100}, R"({"prompt_logprobs": 5})", Endpoint::Completions, true).prompt_records, 100 + 100 * 6);
  // best_of runs more sequences than it returns: their tokens are held too.
  EXPECT_EQ(estimate({10}, R"({"n": 2, "best_of": 8, "max_tokens": 10, "logprobs": 1})").generated_records,
            8 * 10 * 2);
}

TEST(OutputBudget, NamesTheFieldWithTheLargestFactor) {
  EXPECT_EQ(estimate({10}, R"({"max_tokens": 1000, "logprobs": 20, "n": 16})").dominant_param, "max_tokens");
  EXPECT_EQ(estimate({10}, R"({"max_tokens": 8, "logprobs": 20})").dominant_param, "logprobs");
  EXPECT_EQ(estimate({10}, R"({"max_tokens": 8, "logprobs": true, "top_logprobs": 20})", Endpoint::ChatCompletions)
                .dominant_param,
            "top_logprobs");
  EXPECT_EQ(estimate({10}, R"({"max_tokens": 4, "n": 16})").dominant_param, "n");
  EXPECT_EQ(estimate({10}, R"({"max_tokens": 4, "n": 2, "best_of": 16})").dominant_param, "best_of");
  EXPECT_EQ(estimate({10}, R"({"max_tokens": 1, "prompt_logprobs": 20})").dominant_param, "prompt_logprobs");
  EXPECT_EQ(estimate({3000}, R"({"max_tokens": 1, "prompt_logprobs": 20})").dominant_param, "prompt");
  EXPECT_EQ(estimate({3000}, R"({"max_tokens": 1, "prompt_logprobs": 0})", Endpoint::ChatCompletions).dominant_param,
            "messages");
}

TEST(OutputBudget, RefusesOnlyBeyondTheLimitNamingTheField) {
  auto e = estimate({10}, R"({"max_tokens": 100, "logprobs": 20, "n": 4})");
  ASSERT_EQ(e.total(), 4 * 100 * 21);
  EXPECT_NO_THROW(check_output_budget(e, e.total()));
  try {
    check_output_budget(e, e.total() - 1);
    ADD_FAILURE() << "over the budget, admitted";
  } catch (const ApiError& error) {
    EXPECT_EQ(error.status(), 400);
    EXPECT_EQ(error.param(), "max_tokens");
    EXPECT_NE(std::string(error.what()).find("--max-output-records"), std::string::npos) << error.what();
  }
}

TEST(OutputBudget, TheDefaultLimitAdmitsLargeButOrdinaryRequests) {
  const int64_t limit = ServingLimits{}.max_output_records;
  const ServingLimits big{.vocab_size = 1000, .max_model_len = 131072};
  auto at = [&](const std::string& body, Endpoint endpoint) {
    return estimate_output({100}, parse_generation_options(parse_json_body(body), endpoint, big), endpoint, false,
                           big.max_model_len)
        .total();
  };
  // One choice with 20 alternatives per token over a whole 128K context, and 16 plain choices.
  EXPECT_LE(at(R"({"logprobs": true, "top_logprobs": 20})", Endpoint::ChatCompletions), limit);
  EXPECT_LE(at(R"({"n": 16})", Endpoint::ChatCompletions), limit);
  // But not 16 of them with 20 alternatives each.
  EXPECT_GT(at(R"({"n": 16, "logprobs": true, "top_logprobs": 20})", Endpoint::ChatCompletions), limit);
}

}  // namespace
}  // namespace lumen::server
