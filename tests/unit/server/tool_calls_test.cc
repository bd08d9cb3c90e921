// Tool calling: the request fields, the call format a chat template speaks, the conversation
// and constraint each format gets, and replies parsed into OpenAI's tool_calls (whole and
// streamed).
#include <gtest/gtest.h>

#include <chrono>

#include "server/api_error.h"
#include "server/json_body.h"
#include "server/tool_call_format.h"
#include "server/tool_reply_stream.h"
#include "server/tool_request.h"

namespace lumen::server {
namespace {

using ordered_json = nlohmann::ordered_json;

const char* kWeatherTools = R"({"tools": [
  {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
   "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
  {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}}}]})";

ToolRequest weather(const std::string& extra = "") {
  nlohmann::json body = parse_json_body(kWeatherTools);
  if (!extra.empty()) body.update(parse_json_body(extra));
  auto request = parse_tool_request(RequestFields(body));
  EXPECT_TRUE(request.has_value());
  return *request;
}

std::string rejected_param(const std::string& body) {
  try {
    const nlohmann::json json = parse_json_body(body);
    (void)parse_tool_request(RequestFields(json));
    return "";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    return e.param();
  }
}

TEST(ToolRequest, ReadsToolsChoiceAndParallel) {
  ToolRequest r = weather();
  ASSERT_EQ(r.functions.size(), 2u);
  EXPECT_EQ(r.functions[0].name, "get_weather");
  EXPECT_EQ(r.functions[0].description, "Weather in a city");
  EXPECT_EQ(r.choice, ToolChoice::Auto);
  EXPECT_TRUE(r.parallel);
  EXPECT_EQ(r.callable().size(), 2u);

  r = weather(R"({"tool_choice": {"type": "function", "function": {"name": "get_time"}}, "parallel_tool_calls": false})");
  EXPECT_EQ(r.choice, ToolChoice::Named);
  ASSERT_EQ(r.callable().size(), 1u);
  EXPECT_EQ(r.callable()[0]->name, "get_time");
  EXPECT_FALSE(r.parallel);
  EXPECT_EQ(weather(R"({"tool_choice": "required"})").choice, ToolChoice::Required);
  EXPECT_EQ(weather(R"({"tool_choice": "none"})").choice, ToolChoice::None);
  EXPECT_FALSE(parse_tool_request(RequestFields(parse_json_body(R"({"tools": []})"))).has_value());
  EXPECT_FALSE(parse_tool_request(RequestFields(parse_json_body(R"({"tool_choice": "none"})"))).has_value());
}

TEST(ToolRequest, MalformedToolsAreRefusedByName) {
  EXPECT_EQ(rejected_param(R"({"tools": {}})"), "tools");
  EXPECT_EQ(rejected_param(R"({"tools": [{"type": "code"}]})"), "tools");
  EXPECT_EQ(rejected_param(R"({"tools": [{"type": "function", "function": {"name": "has space"}}]})"), "tools");
  EXPECT_EQ(rejected_param(R"({"tools": [{"type": "function", "function": {"name": "f", "parameters": 3}}]})"),
            "tools");
  EXPECT_EQ(rejected_param(R"({"tools": [{"type": "function", "function": {"name": "f"}},
                                         {"type": "function", "function": {"name": "f"}}]})"),
            "tools");
  EXPECT_EQ(rejected_param(R"({"tool_choice": "required"})"), "tool_choice");
  EXPECT_EQ(rejected_param(std::string(kWeatherTools).insert(1, R"("tool_choice": "always",)")), "tool_choice");
  EXPECT_EQ(rejected_param(std::string(kWeatherTools)
                               .insert(1, R"("tool_choice": {"type": "function", "function": {"name": "nope"}},)")),
            "tool_choice");
  EXPECT_EQ(rejected_param(R"({"functions": []})"), "functions");
  // At most 128 tools, names of at most 64 characters.
  std::string many = R"({"tools": [)";
  for (int i = 0; i < 129; ++i) {
    many += (i ? "," : "") + std::string(R"({"type": "function", "function": {"name": "f)") + std::to_string(i) + R"("}})";
  }
  EXPECT_EQ(rejected_param(many + "]}"), "tools");
  EXPECT_EQ(rejected_param(R"({"tools": [{"type": "function", "function": {"name": ")" + std::string(65, 'a') +
                           R"("}}]})"),
            "tools");
}

TEST(ToolRequest, ToolsKeepTheClientsKeyOrder) {
  const std::string raw = R"({"tools": [{"type": "function", "function": {"name": "f", "parameters":
      {"type": "object", "properties": {"zeta": {"type": "integer"}, "alpha": {"type": "string"}}}}}]})";
  ToolRequest r = *parse_tool_request(RequestFields(parse_json_body(raw)));
  restore_tool_order(ordered_json::parse(raw), r);
  const std::string parameters = r.functions[0].parameters.dump();
  EXPECT_LT(parameters.find("zeta"), parameters.find("alpha"));
  EXPECT_EQ(r.tools.dump(), ordered_json::parse(raw)["tools"].dump());
}

TEST(ToolCallFormat, DetectedFromTheTemplate) {
  EXPECT_EQ(tool_call_format_of("{% for tool in tools %}<tool_call>{{ tool }}</tool_call>{% endfor %}"),
            ToolCallFormat::Hermes);
  EXPECT_EQ(tool_call_format_of("{{- \"Environment: ipython\\n\" }}<|python_tag|>"), ToolCallFormat::Llama3Json);
  EXPECT_EQ(tool_call_format_of("{% for m in messages %}<|im_start|>{{ m.role }}{% endfor %}"),
            ToolCallFormat::Generic);
}

TEST(ToolCallFormat, HermesRepliesParseIntoCalls) {
  const ToolRequest r = weather();
  ToolReply reply = parse_tool_reply(ToolCallFormat::Hermes,
                                     "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                                     "{\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", "
                                     "\"arguments\": {}}\n</tool_call>",
                                     r);
  ASSERT_EQ(reply.calls.size(), 2u);
  EXPECT_EQ(reply.content, "Let me check.");
  EXPECT_EQ(reply.calls[0].name, "get_weather");
  EXPECT_EQ(nlohmann::json::parse(reply.calls[0].arguments), nlohmann::json::parse(R"({"city": "Paris"})"));
  EXPECT_EQ(reply.calls[1].name, "get_time");
  EXPECT_TRUE(reply.calls[0].id.starts_with("call_"));
  EXPECT_EQ(reply.calls[0].id.size(), 29u);
  EXPECT_NE(reply.calls[0].id, reply.calls[1].id);

  // Not a call: an unknown function, broken JSON, no marker.
  reply = parse_tool_reply(ToolCallFormat::Hermes, "<tool_call>{\"name\": \"rm_rf\", \"arguments\": {}}</tool_call>", r);
  EXPECT_TRUE(reply.calls.empty());
  EXPECT_EQ(reply.content, "<tool_call>{\"name\": \"rm_rf\", \"arguments\": {}}</tool_call>");
  // A call cut short (max_tokens) is dropped, not sent as content; a finished one before it stays.
  reply = parse_tool_reply(ToolCallFormat::Hermes, "<tool_call>{\"name\": \"get_time\"", r);
  EXPECT_TRUE(reply.calls.empty());
  EXPECT_EQ(reply.content, "");
  reply =
      parse_tool_reply(ToolCallFormat::Hermes,
                       "Sure. <tool_call>{\"name\": \"get_time\", \"arguments\": {}}</tool_call>\n<tool_call>{\"na", r);
  ASSERT_EQ(reply.calls.size(), 1u);
  EXPECT_EQ(reply.content, "Sure.");
  reply = parse_tool_reply(ToolCallFormat::Hermes, "It is sunny.", r);
  EXPECT_TRUE(reply.calls.empty());
  EXPECT_EQ(reply.content, "It is sunny.");
  // tool_choice none: nothing is parsed.
  reply = parse_tool_reply(ToolCallFormat::Hermes, "<tool_call>{\"name\": \"get_time\", \"arguments\": {}}</tool_call>",
                           weather(R"({"tool_choice": "none"})"));
  EXPECT_TRUE(reply.calls.empty());
}

TEST(ToolCallFormat, Llama3RepliesParseIntoCalls) {
  const ToolRequest r = weather();
  ToolReply reply =
      parse_tool_reply(ToolCallFormat::Llama3Json, R"({"name": "get_weather", "parameters": {"city": "Oslo"}})", r);
  ASSERT_EQ(reply.calls.size(), 1u);
  EXPECT_EQ(nlohmann::json::parse(reply.calls[0].arguments)["city"], "Oslo");
  reply = parse_tool_reply(ToolCallFormat::Llama3Json,
                           R"({"name": "get_time", "parameters": {}}; {"name": "get_weather", "parameters": {"city": "X"}})", r);
  EXPECT_EQ(reply.calls.size(), 2u);
  reply = parse_tool_reply(ToolCallFormat::Llama3Json, "Hello there", r);
  EXPECT_TRUE(reply.calls.empty());
  EXPECT_EQ(reply.content, "Hello there");
  // Cut inside a call: no content. JSON that is whole but calls nothing offered is content.
  for (const char* cut : {R"({"name": "get_weather", "parameters": {"ci)", "<|python_tag|>{\"name", "{\"na", "  {"}) {
    reply = parse_tool_reply(ToolCallFormat::Llama3Json, cut, r);
    EXPECT_TRUE(reply.calls.empty());
    EXPECT_EQ(reply.content, "") << cut;
  }
  reply = parse_tool_reply(ToolCallFormat::Llama3Json, R"({"answer": 4})", r);
  EXPECT_EQ(reply.content, R"({"answer": 4})");
  // A reply that must call is a call from its first byte: anything that does not parse is cut.
  reply = parse_tool_reply(ToolCallFormat::Llama3Json, R"({"parameters": {"city": "X)",
                           weather(R"({"tool_choice": "required"})"));
  EXPECT_EQ(reply.content, "");
}

TEST(ToolCallFormat, GenericRepliesAreJson) {
  const ToolRequest r = weather();
  ToolReply reply = parse_tool_reply(
      ToolCallFormat::Generic, R"({"tool_calls": [{"name": "get_weather", "arguments": {"city": "Rome"}}]})", r);
  ASSERT_EQ(reply.calls.size(), 1u);
  EXPECT_EQ(reply.calls[0].name, "get_weather");
  reply = parse_tool_reply(ToolCallFormat::Generic, R"({"content": "No tool needed."})", r);
  EXPECT_TRUE(reply.calls.empty());
  EXPECT_EQ(reply.content, "No tool needed.");
  // Cut short by max_tokens: the content so far, or the finished calls, never the wrapper.
  reply = parse_tool_reply(ToolCallFormat::Generic, R"({"content": "No to)", r);
  EXPECT_EQ(reply.content, "No to");
  EXPECT_TRUE(reply.calls.empty());
  reply = parse_tool_reply(ToolCallFormat::Generic, R"({"content":"tab\)", r);  // a cut escape waits
  EXPECT_EQ(reply.content, "tab");
  reply = parse_tool_reply(ToolCallFormat::Generic, R"({"content":"caf\u00e9 \u00)", r);
  EXPECT_EQ(reply.content, "caf\xc3\xa9 ");
  for (const char* cut : {"", "{", R"({"tool)", R"({"tool_calls":[{"name":"get_wea)",
                          R"({"tool_calls":[{"name":"get_weather","arguments":{"city":"Ro)"}) {
    reply = parse_tool_reply(ToolCallFormat::Generic, cut, r);
    EXPECT_TRUE(reply.calls.empty()) << cut;
    EXPECT_EQ(reply.content, "") << cut;
  }
  reply = parse_tool_reply(
      ToolCallFormat::Generic,
      R"({"tool_calls": [{"name": "get_time", "arguments": {}}, {"name": "get_weather", "arguments": {"city": "R)", r);
  ASSERT_EQ(reply.calls.size(), 1u);
  EXPECT_EQ(reply.calls[0].name, "get_time");
  EXPECT_EQ(reply.content, "");
  // Braces and quotes inside a finished call's strings do not end it early.
  reply = parse_tool_reply(ToolCallFormat::Generic,
                           R"({"tool_calls":[{"name":"get_weather","arguments":{"city":"a}\"]{"}},{"name")", r);
  ASSERT_EQ(reply.calls.size(), 1u);
  EXPECT_EQ(nlohmann::json::parse(reply.calls[0].arguments)["city"], "a}\"]{");
  // tool_choice none: the reply is {"content": ...} too, unwrapped.
  reply =
      parse_tool_reply(ToolCallFormat::Generic, R"({"content":"It is sunny."})", weather(R"({"tool_choice": "none"})"));
  EXPECT_EQ(reply.content, "It is sunny.");
}

TEST(ToolCallFormat, GenericPromptDescribesToolsAndRewritesHistory) {
  const ToolRequest r = weather();
  const ordered_json messages = ordered_json::parse(R"([
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "type": "function",
      "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "18 C, sunny"},
    {"role": "user", "content": "Thanks"}])");
  const ToolPrompt prompt = prepare_tool_prompt(ToolCallFormat::Generic, messages, r);
  EXPECT_FALSE(prompt.template_tools.has_value());
  ASSERT_EQ(prompt.messages.size(), 4u);  // system, user, assistant, user (result and "Thanks" merged)
  EXPECT_EQ(prompt.messages[0]["role"], "system");
  EXPECT_NE(prompt.messages[0]["content"].get<std::string>().find("get_weather"), std::string::npos);
  EXPECT_EQ(prompt.messages[2]["role"], "assistant");
  EXPECT_EQ(nlohmann::json::parse(prompt.messages[2]["content"].get<std::string>()),
            nlohmann::json::parse(R"({"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]})"));
  EXPECT_EQ(prompt.messages[3]["role"], "user");
  const std::string last = prompt.messages[3]["content"];
  EXPECT_NE(last.find(R"({"tool_response":{"name":"get_weather","content":"18 C, sunny"}})"), std::string::npos);
  EXPECT_NE(last.find("Thanks"), std::string::npos);

  // A native format leaves the conversation to the template, with the tools.
  const ToolPrompt hermes = prepare_tool_prompt(ToolCallFormat::Hermes, messages, r);
  EXPECT_EQ(hermes.messages, messages);
  ASSERT_TRUE(hermes.template_tools.has_value());
  EXPECT_EQ(*hermes.template_tools, r.tools);
}

TEST(ToolCallFormat, ConstraintsFollowToolChoice) {
  // Generic: always a schema; "required" allows only calls.
  auto c = tool_reply_constraint(ToolCallFormat::Generic, weather());
  ASSERT_TRUE(c && c->json);
  EXPECT_NE(c->json->find("\"content\""), std::string::npos);
  c = tool_reply_constraint(ToolCallFormat::Generic, weather(R"({"tool_choice": "required"})"));
  ASSERT_TRUE(c && c->json);
  EXPECT_EQ(c->json->find("\"content\""), std::string::npos);
  c = tool_reply_constraint(ToolCallFormat::Generic,
                            weather(R"({"tool_choice": {"type": "function", "function": {"name": "get_time"}}})"));
  ASSERT_TRUE(c && c->json);
  EXPECT_EQ(c->json->find("get_weather"), std::string::npos);
  // Native formats answer freely under auto and none; Generic's none is {"content": ...} only
  // (its conversation's calls and results are JSON, which a model would imitate in free text).
  EXPECT_FALSE(tool_reply_constraint(ToolCallFormat::Hermes, weather()));
  EXPECT_FALSE(tool_reply_constraint(ToolCallFormat::Llama3Json, weather()));
  EXPECT_FALSE(tool_reply_constraint(ToolCallFormat::Hermes, weather(R"({"tool_choice": "none"})")));
  c = tool_reply_constraint(ToolCallFormat::Generic, weather(R"({"tool_choice": "none"})"));
  ASSERT_TRUE(c && c->json);
  EXPECT_EQ(nlohmann::json::parse(*c->json)["required"], nlohmann::json::parse(R"(["content"])"));
  EXPECT_EQ(c->json->find("tool_calls"), std::string::npos);
  c = tool_reply_constraint(ToolCallFormat::Llama3Json, weather(R"({"tool_choice": "required"})"));
  ASSERT_TRUE(c && c->json);
}

// The list of calls closes: after one call without parallel_tool_calls, after
// kMaxParallelToolCalls with it (a small model repeating its call filled max_tokens with it).
TEST(ToolCallFormat, TheListOfCallsCloses) {
  for (const char* choice : {"auto", "required"}) {
    const std::string extra = std::string(R"({"tool_choice": ")") + choice + "\"";
    auto c = tool_reply_constraint(ToolCallFormat::Generic, weather(extra + "}"));
    ASSERT_TRUE(c && c->json);
    const std::string schema = *c->json;
    EXPECT_NE(schema.find("\"maxItems\":" + std::to_string(kMaxParallelToolCalls)), std::string::npos) << schema;
    c = tool_reply_constraint(ToolCallFormat::Generic, weather(extra + R"(, "parallel_tool_calls": false})"));
    EXPECT_NE(c->json->find("\"maxItems\":1"), std::string::npos) << *c->json;
  }
  auto hermes = tool_reply_constraint(ToolCallFormat::Hermes, weather(R"({"tool_choice": "required"})"));
  ASSERT_TRUE(hermes && hermes->grammar);
  EXPECT_NE(hermes->grammar->find("){0," + std::to_string(kMaxParallelToolCalls - 1) + "}"), std::string::npos)
      << *hermes->grammar;
}

TEST(ToolReplyStream, ContentStreamsUntilACallMayBegin) {
  const ToolRequest r = weather();
  ToolReplyStream s(ToolCallFormat::Hermes, r);
  EXPECT_EQ(s.add("Let me "), "Let me ");
  EXPECT_EQ(s.add("check. <to"), "check. ");  // "<to" may begin a call
  EXPECT_EQ(s.add("ol_call>\n{\"name\": \"get_time\", "), "");
  EXPECT_EQ(s.add("\"arguments\": {}}\n</tool_call>"), "");
  ToolReply rest = s.finish();
  ASSERT_EQ(rest.calls.size(), 1u);
  EXPECT_EQ(rest.calls[0].name, "get_time");
  EXPECT_EQ(rest.content, "");

  ToolReplyStream plain(ToolCallFormat::Hermes, r);
  EXPECT_EQ(plain.add("a <b"), "a <b");  // "<b" cannot begin "<tool_call>"
  EXPECT_EQ(plain.add(" c <"), " c ");
  EXPECT_TRUE(plain.finish().calls.empty());
  EXPECT_EQ(plain.finish().content, "<");

  // Generic: the content's text streams as it is written, unescaped; a call streams nothing.
  ToolReplyStream generic(ToolCallFormat::Generic, r);
  EXPECT_EQ(generic.add(R"({"cont)"), "");
  EXPECT_EQ(generic.add(R"(ent":"hi)"), "hi");
  EXPECT_EQ(generic.add(R"( th\)"), " th");
  EXPECT_EQ(generic.add(R"(nere)"), "\nere");
  EXPECT_EQ(generic.add(R"("})"), "");
  ToolReply end = generic.finish();
  EXPECT_EQ(end.content, "");
  EXPECT_TRUE(end.calls.empty());

  ToolReplyStream cut(ToolCallFormat::Generic, r);
  EXPECT_EQ(cut.add(R"({"content":"ab)"), "ab");
  EXPECT_EQ(cut.finish().content, "");  // cut: nothing more, and no wrapper

  ToolReplyStream calls(ToolCallFormat::Generic, r);
  EXPECT_EQ(calls.add(R"({"tool_calls":[{"name":"get_time","arguments":{}}]})"), "");
  ToolReply called = calls.finish();
  ASSERT_EQ(called.calls.size(), 1u);
  EXPECT_EQ(called.content, "");
}

// A reply may be millions of tokens long (max_tokens with context shift): each streamed piece
// is read once, not the whole reply again per token (which would cost its square).
TEST(ToolReplyStream, LongRepliesStreamInLinearTime) {
  const ToolRequest r = weather();
  const std::string piece = "All work and no play makes Jack a dull boy. \\n ";
  const size_t pieces = 40000;  // 2 MB of JSON string, 40000 tokens
  const auto start = std::chrono::steady_clock::now();
  ToolReplyStream generic(ToolCallFormat::Generic, r);
  size_t streamed = generic.add("{\"content\":\"").size();
  for (size_t i = 0; i < pieces; ++i) streamed += generic.add(piece).size();
  generic.add("\"}");
  EXPECT_EQ(streamed + generic.finish().content.size(), pieces * (piece.size() - 1));
  ToolReplyStream hermes(ToolCallFormat::Hermes, r);
  streamed = 0;
  for (size_t i = 0; i < pieces; ++i) streamed += hermes.add(piece).size();
  EXPECT_EQ(streamed, pieces * piece.size());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

}  // namespace
}  // namespace lumen::server
