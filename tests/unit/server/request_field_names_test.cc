// Which top-level fields each JSON endpoint takes: read, accepted but ignored (named back in a
// header), or a 400 naming them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "server/api_error.h"
#include "server/request_field_names.h"

namespace lumen::server {
namespace {

using Names = std::vector<std::string>;

ApiError refusal(const nlohmann::json& body, JsonEndpoint endpoint) {
  try {
    check_field_names(body, endpoint);
  } catch (const ApiError& e) {
    return e;
  }
  ADD_FAILURE() << "accepted " << body.dump();
  return ApiError(200, "");
}

TEST(RequestFieldNames, AFieldNobodyDefinesIsA400NamingIt) {
  const ApiError e =
      refusal({{"messages", nlohmann::json::array()}, {"temprature", 0.5}}, JsonEndpoint::ChatCompletions);
  EXPECT_EQ(e.status(), 400);
  EXPECT_EQ(e.param(), "temprature");
  EXPECT_EQ(std::string(e.what()), "unrecognized request field 'temprature' (did you mean 'temperature'?)");
  EXPECT_EQ(e.to_json()["error"]["type"], "invalid_request_error");
}

TEST(RequestFieldNames, EveryUnknownFieldIsNamedAndTheFirstIsTheParam) {
  const ApiError e = refusal({{"prompt", "x"}, {"zeta", 1}, {"alpha", 2}}, JsonEndpoint::Completions);
  EXPECT_EQ(e.param(), "alpha");
  EXPECT_EQ(std::string(e.what()), "unrecognized request fields 'alpha', 'zeta'");  // nothing close to either
}

TEST(RequestFieldNames, FieldsLumenReadsAreNotReported) {
  const nlohmann::json chat = {
      {"model", "m"},      {"messages", nlohmann::json::array()}, {"temperature", 0}, {"top_k", 5},
      {"tools", nullptr},  {"stream_options", nullptr},           {"logit_bias", {}}, {"continue_final_message", false},
      {"guided_json", {}}, {"max_completion_tokens", 3}};
  EXPECT_EQ(check_field_names(chat, JsonEndpoint::ChatCompletions), Names{});
  const nlohmann::json completion = {{"prompt", "x"}, {"echo", true}, {"suffix", nullptr}, {"best_of", 2}};
  EXPECT_EQ(check_field_names(completion, JsonEndpoint::Completions), Names{});
}

TEST(RequestFieldNames, OpenAiFieldsWeDoNotActOnAreAcceptedAndNamed) {
  const nlohmann::json chat = {{"messages", nlohmann::json::array()},
                               {"user", "u"},
                               {"metadata", {{"k", "v"}}},
                               {"store", false},
                               {"service_tier", "auto"},
                               {"parallel_tool_calls", true},
                               {"n", 1}};
  EXPECT_EQ(check_field_names(chat, JsonEndpoint::ChatCompletions),
            (Names{"metadata", "service_tier", "store", "user"}));
}

TEST(RequestFieldNames, VllmAndLlamaServerExtrasAreAcceptedAndNamed) {
  const nlohmann::json body = {{"prompt", "x"}, {"include_stop_str_in_output", true}, {"mirostat", 2}, {"top_k", 3}};
  EXPECT_EQ(check_field_names(body, JsonEndpoint::Completions), (Names{"include_stop_str_in_output", "mirostat"}));
  EXPECT_EQ(ignored_fields_header({"include_stop_str_in_output", "mirostat"}), "include_stop_str_in_output, mirostat");
}

TEST(RequestFieldNames, EachEndpointHasItsOwnFields) {
  // Chat's fields are not completions' (OpenAI answers the same).
  EXPECT_EQ(refusal({{"prompt", "x"}, {"messages", nlohmann::json::array()}}, JsonEndpoint::Completions).param(),
            "messages");
  EXPECT_EQ(refusal({{"messages", nlohmann::json::array()}, {"suffix", "x"}}, JsonEndpoint::ChatCompletions).param(),
            "suffix");
  EXPECT_EQ(refusal({{"tokens", nlohmann::json::array()}, {"prompt", "x"}}, JsonEndpoint::Detokenize).param(),
            "prompt");
  EXPECT_EQ(check_field_names({{"prompt", "x"}, {"with_pieces", true}}, JsonEndpoint::Tokenize), Names{"with_pieces"});
}

}  // namespace
}  // namespace lumen::server
