// The fields that constrain the output, in OpenAI's, vLLM's and llama-server's dialects, into
// SamplingParams::structured_outputs; malformed ones and two constraints at once are a 400
// naming the field.
#include <gtest/gtest.h>

#include "server/api_error.h"
#include "server/json_body.h"
#include "server/sampling_request.h"
#include "server/structured_request.h"

namespace lumen::server {
namespace {

const ServingLimits kLimits{.vocab_size = 1000, .max_model_len = 512};

GenerationOptions parse(const std::string& body) {
  return parse_generation_options(parse_json_body(body), Endpoint::ChatCompletions, kLimits);
}

std::string rejected_param(const std::string& body) {
  try {
    parse(body);
    return "";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    return e.param().empty() ? "?" : e.param();
  }
}

TEST(StructuredRequest, NoConstraintByDefaultOrWithTextFormat) {
  EXPECT_FALSE(parse("{}").params.structured_outputs);
  EXPECT_FALSE(parse(R"({"response_format": {"type": "text"}})").params.structured_outputs);
  EXPECT_FALSE(parse(R"({"response_format": null, "grammar": null})").params.structured_outputs);
}

TEST(StructuredRequest, OpenAiResponseFormat) {
  auto o = parse(R"({"response_format": {"type": "json_object"}})");
  ASSERT_TRUE(o.params.structured_outputs);
  EXPECT_TRUE(o.params.structured_outputs->json_object);
  EXPECT_EQ(o.structured_field, "response_format");

  o = parse(R"({"response_format": {"type": "json_schema", "json_schema":
                {"name": "p", "strict": true, "schema": {"type": "object", "properties": {"a": {"type": "integer"}}}}}})");
  ASSERT_TRUE(o.params.structured_outputs && o.params.structured_outputs->json);
  EXPECT_EQ(nlohmann::json::parse(*o.params.structured_outputs->json),
            nlohmann::json::parse(R"({"type": "object", "properties": {"a": {"type": "integer"}}})"));
  EXPECT_EQ(o.params.structured_outputs->count(), 1);

  // llama-server: json_object with a schema.
  o = parse(R"({"response_format": {"type": "json_object", "schema": {"type": "string"}}})");
  ASSERT_TRUE(o.params.structured_outputs && o.params.structured_outputs->json);
  EXPECT_EQ(*o.params.structured_outputs->json, R"({"type":"string"})");
}

// JSON is compact unless the request asks otherwise with vLLM's flag, whichever field set the
// constraint (the openai SDK sends it through extra_body beside response_format).
TEST(StructuredRequest, JsonIsCompactUnlessDisableAnyWhitespaceIsFalse) {
  auto o = parse(R"({"response_format": {"type": "json_object"}})");
  ASSERT_TRUE(o.params.structured_outputs);
  EXPECT_TRUE(o.params.structured_outputs->compact_whitespace);
  o = parse(R"({"response_format": {"type": "json_object"}, "structured_outputs": {"disable_any_whitespace": false}})");
  ASSERT_TRUE(o.params.structured_outputs);
  EXPECT_EQ(o.structured_field, "response_format");
  EXPECT_FALSE(o.params.structured_outputs->compact_whitespace);
  o = parse(R"({"structured_outputs": {"disable_any_whitespace": false}, "guided_json": {"type": "object"}})");
  ASSERT_TRUE(o.params.structured_outputs && o.params.structured_outputs->json);
  EXPECT_FALSE(o.params.structured_outputs->compact_whitespace);
  o = parse(R"({"structured_outputs": {"json": {"type": "object"}, "disable_any_whitespace": false}})");
  EXPECT_FALSE(o.params.structured_outputs->compact_whitespace);
  // Alone it constrains nothing.
  EXPECT_FALSE(parse(R"({"structured_outputs": {"disable_any_whitespace": false}})").params.structured_outputs);
  EXPECT_EQ(rejected_param(R"({"json_schema": {}, "structured_outputs": {"disable_any_whitespace": 0}})"),
            "structured_outputs.disable_any_whitespace");
}

TEST(StructuredRequest, VllmFieldsOldAndNew) {
  auto o = parse(R"({"structured_outputs": {"regex": "[0-9]+"}})");
  ASSERT_TRUE(o.params.structured_outputs && o.params.structured_outputs->regex);
  EXPECT_EQ(*o.params.structured_outputs->regex, "[0-9]+");
  EXPECT_EQ(o.structured_field, "structured_outputs.regex");

  o = parse(R"({"structured_outputs": {"choice": ["yes", "no"]}})");
  ASSERT_TRUE(o.params.structured_outputs && o.params.structured_outputs->choice);
  EXPECT_EQ(o.params.structured_outputs->choice->size(), 2u);

  o = parse(R"({"structured_outputs": {"json": "{\"type\": \"integer\"}", "disable_any_whitespace": true}})");
  ASSERT_TRUE(o.params.structured_outputs && o.params.structured_outputs->json);
  EXPECT_TRUE(o.params.structured_outputs->compact_whitespace);

  o = parse(R"({"guided_choice": ["a"]})");
  ASSERT_TRUE(o.params.structured_outputs && o.params.structured_outputs->choice);
  o = parse(R"({"guided_grammar": "root ::= \"x\""})");
  ASSERT_TRUE(o.params.structured_outputs && o.params.structured_outputs->grammar);
  o = parse(R"({"guided_json": {"type": "boolean"}})");
  ASSERT_TRUE(o.params.structured_outputs && o.params.structured_outputs->json);
}

TEST(StructuredRequest, LlamaServerFields) {
  auto o = parse(R"({"grammar": "root ::= [a-z]+"})");
  ASSERT_TRUE(o.params.structured_outputs && o.params.structured_outputs->grammar);
  EXPECT_EQ(o.structured_field, "grammar");
  o = parse(R"({"json_schema": {"type": "array"}})");
  ASSERT_TRUE(o.params.structured_outputs && o.params.structured_outputs->json);
}

TEST(StructuredRequest, MalformedFieldsAreRefusedByName) {
  EXPECT_EQ(rejected_param(R"({"response_format": "json"})"), "response_format");
  EXPECT_EQ(rejected_param(R"({"response_format": {}})"), "response_format");
  EXPECT_EQ(rejected_param(R"({"response_format": {"type": "xml"}})"), "response_format");
  EXPECT_EQ(rejected_param(R"({"response_format": {"type": "json_schema"}})"), "response_format");
  EXPECT_EQ(rejected_param(R"({"response_format": {"type": "json_schema", "json_schema": {"schema": 3}}})"),
            "response_format");
  EXPECT_EQ(rejected_param(R"({"grammar": 7})"), "grammar");
  EXPECT_EQ(rejected_param(R"({"guided_choice": []})"), "guided_choice");
  EXPECT_EQ(rejected_param(R"({"guided_choice": ["a", 1]})"), "guided_choice");
  EXPECT_EQ(rejected_param(R"({"structured_outputs": []})"), "structured_outputs");
  EXPECT_EQ(rejected_param(R"({"structured_outputs": {"regex": 5}})"), "structured_outputs.regex");
}

TEST(StructuredRequest, TwoConstraintsAreRefused) {
  EXPECT_EQ(rejected_param(R"({"response_format": {"type": "json_object"}, "grammar": "root ::= \"a\""})"),
            "grammar");
  EXPECT_EQ(rejected_param(R"({"structured_outputs": {"regex": "a", "choice": ["a"]}})"),
            "structured_outputs.choice");
}

TEST(StructuredRequest, BeamSearchIsRefused) {
  EXPECT_EQ(rejected_param(R"({"use_beam_search": true, "n": 2, "grammar": "root ::= \"a\""})"), "grammar");
}

TEST(StructuredRequest, SchemasKeepTheClientsPropertyOrder) {
  // The body is read into a nlohmann::json (sorted keys); the schema is put back in order.
  const std::string raw = R"({"response_format": {"type": "json_schema", "json_schema": {"name": "x",
      "schema": {"type": "object", "properties": {"zeta": {"type": "integer"}, "alpha": {"type": "string"}}}}}})";
  GenerationOptions o = parse(raw);
  ASSERT_TRUE(o.params.structured_outputs && o.params.structured_outputs->json);
  EXPECT_LT(o.params.structured_outputs->json->find("alpha"), o.params.structured_outputs->json->find("zeta"));
  restore_schema_order(nlohmann::ordered_json::parse(raw), o.structured_field, *o.params.structured_outputs);
  EXPECT_LT(o.params.structured_outputs->json->find("zeta"), o.params.structured_outputs->json->find("alpha"));
  for (const char* field : {"guided_json", "json_schema"}) {
    const std::string body = std::string(R"({")") + field + R"(": {"properties": {"b": {}, "a": {}}}})";
    o = parse(body);
    restore_schema_order(nlohmann::ordered_json::parse(body), o.structured_field, *o.params.structured_outputs);
    EXPECT_EQ(*o.params.structured_outputs->json, R"({"properties":{"b":{},"a":{}}})") << field;
  }
  const std::string nested = R"({"structured_outputs": {"json": {"properties": {"b": {}, "a": {}}}}})";
  o = parse(nested);
  restore_schema_order(nlohmann::ordered_json::parse(nested), o.structured_field, *o.params.structured_outputs);
  EXPECT_EQ(*o.params.structured_outputs->json, R"({"properties":{"b":{},"a":{}}})");
}

TEST(StructuredRequest, SizesAreBounded) {
  const std::string huge(2u << 20, 'a');
  EXPECT_EQ(rejected_param(R"({"grammar": ")" + huge + R"("})"), "grammar");
  std::string many = R"({"guided_choice": [)";
  for (int i = 0; i < 1025; ++i) many += (i ? ",\"x\"" : "\"x\"");
  many += "]}";
  EXPECT_EQ(rejected_param(many), "guided_choice");
}

}  // namespace
}  // namespace lumen::server
