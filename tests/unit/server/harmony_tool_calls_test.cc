// gpt-oss's tool calls (server/harmony_tool_calls.h): which templates speak harmony, replies
// read into calls whole and streamed (after HarmonySplit, and raw with reasoning_format none),
// the conversation rewritten for the template, and the grammar tool_choice "required" or a
// named function gets.
#include "server/harmony_tool_calls.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/grammar_matcher.h"
#include "server/harmony_split.h"
#include "server/json_body.h"
#include "server/tool_reply_stream.h"

namespace lumen::server {
namespace {

using ordered_json = nlohmann::ordered_json;

ToolRequest weather(const std::string& extra = "") {
  nlohmann::json body = parse_json_body(R"({"tools": [
    {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
     "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}}}]})");
  if (!extra.empty()) body.update(parse_json_body(extra));
  auto request = parse_tool_request(RequestFields(body));
  EXPECT_TRUE(request.has_value());
  return *request;
}

// What routes_generate does to a whole reply: HarmonySplit, then the tool-call parser.
struct Read {
  std::string reasoning;
  ToolReply reply;
};
Read read_reply(const std::string& text, const ToolRequest& request) {
  HarmonySplit split;
  ReasoningDelta d = split.add(text);
  ReasoningDelta rest = split.finish();
  return {d.reasoning + rest.reasoning, parse_tool_reply(ToolCallFormat::Harmony, d.content + rest.content, request)};
}

TEST(HarmonyToolCalls, TheGptOssTemplateSpeaksHarmony) {
  const std::string gpt_oss =
      "{{- \"<|start|>assistant to=\" }}{{- \"functions.\" + tool_call.name + "
      "\"<|channel|>commentary \" }}{{ \"<|message|>\" }}";
  EXPECT_EQ(tool_call_format_of(gpt_oss), ToolCallFormat::Harmony);
  EXPECT_STREQ(tool_call_format_name(ToolCallFormat::Harmony), "harmony");
  EXPECT_EQ(tool_call_format_of("<tool_call>{{ x }}</tool_call>"), ToolCallFormat::Hermes);
}

TEST(HarmonyToolCalls, ACallAfterReasoningBecomesAToolCall) {
  const ToolRequest r = weather();
  // The recipient in the channel header, as gpt-oss usually writes it (<|call|> ends the reply
  // and is not in the text).
  Read read = read_reply(
      "<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant<|channel|>commentary "
      "to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\"}",
      r);
  EXPECT_EQ(read.reasoning, "Need the weather.");
  ASSERT_EQ(read.reply.calls.size(), 1u);
  EXPECT_EQ(read.reply.calls[0].name, "get_weather");
  EXPECT_EQ(ordered_json::parse(read.reply.calls[0].arguments), ordered_json::parse(R"({"city": "Paris"})"));
  EXPECT_TRUE(read.reply.calls[0].id.starts_with("call_"));
  EXPECT_EQ(read.reply.content, "");
  // The recipient after the role (the prompt ends in <|start|>assistant), and a preamble first.
  read = read_reply(
      "<|channel|>commentary<|message|>Checking the clock. <|end|><|start|>assistant to=functions.get_time"
      "<|channel|>commentary json<|message|>{}",
      r);
  ASSERT_EQ(read.reply.calls.size(), 1u);
  EXPECT_EQ(read.reply.calls[0].name, "get_time");
  EXPECT_EQ(read.reply.calls[0].arguments, "{}");
  EXPECT_EQ(read.reply.content, "Checking the clock.");
  read = read_reply("to=functions.get_time<|channel|>commentary json<|message|>{}", r);
  ASSERT_EQ(read.reply.calls.size(), 1u);
  EXPECT_EQ(read.reply.calls[0].name, "get_time");
}

TEST(HarmonyToolCalls, WhatIsNoCallStaysTextAndACallCutShortIsDropped) {
  const ToolRequest r = weather();
  // A final answer: content, no call.
  Read read = read_reply("<|channel|>analysis<|message|>Easy.<|end|><|start|>assistant<|channel|>final<|message|>4", r);
  EXPECT_TRUE(read.reply.calls.empty());
  EXPECT_EQ(read.reply.content, "4");
  // A function the request does not offer, or a built-in tool: the client sees the message.
  read = read_reply("<|channel|>commentary to=functions.send_mail <|constrain|>json<|message|>{\"to\": \"x\"}", r);
  EXPECT_TRUE(read.reply.calls.empty());
  EXPECT_EQ(read.reply.content, "<|channel|>commentary to=functions.send_mail<|message|>{\"to\": \"x\"}");
  read = read_reply("<|channel|>analysis to=browser.search <|constrain|>json<|message|>{\"q\": \"x\"}", r);
  EXPECT_TRUE(read.reply.calls.empty());
  EXPECT_EQ(read.reply.content, "<|channel|>analysis to=browser.search<|message|>{\"q\": \"x\"}");
  // Arguments cut short by max_tokens, or a header never finished: no call, and no content.
  read = read_reply("<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Pa", r);
  EXPECT_TRUE(read.reply.calls.empty());
  EXPECT_EQ(read.reply.content, "");
  EXPECT_EQ(parse_tool_reply(ToolCallFormat::Harmony, "Sure. <|channel|>commentary to=functions.get_wea", r).content,
            "Sure. ");
  // Arguments that are no object are no call.
  read = read_reply("<|channel|>commentary to=functions.get_weather<|message|>[1, 2]<|end|>", r);
  EXPECT_TRUE(read.reply.calls.empty());
  // tool_choice none: nothing is parsed.
  EXPECT_TRUE(parse_tool_reply(ToolCallFormat::Harmony, harmony_call_header("commentary", "functions.get_time") + "{}",
                               weather(R"({"tool_choice": "none"})"))
                  .calls.empty());
}

TEST(HarmonyToolCalls, ARawReplyIsReadToo) {
  // reasoning_format "none": no HarmonySplit; the call is still found, the rest stays raw.
  const std::string raw =
      "<|channel|>analysis<|message|>Need it.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather "
      "<|constrain|>json<|message|>{\"city\": \"Oslo\"}";
  const ToolReply reply = parse_tool_reply(ToolCallFormat::Harmony, raw, weather());
  ASSERT_EQ(reply.calls.size(), 1u);
  EXPECT_EQ(reply.calls[0].name, "get_weather");
  EXPECT_EQ(reply.content, "<|channel|>analysis<|message|>Need it.<|end|>");
}

TEST(HarmonyToolCalls, StreamedContentStopsWhereACallBegins) {
  const ToolRequest r = weather();
  const std::string reply =
      "<|channel|>commentary<|message|>Let me look that up.<|end|><|start|>assistant<|channel|>commentary "
      "to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Rome\"}";
  for (size_t piece : {size_t{1}, size_t{3}, size_t{7}, reply.size()}) {
    HarmonySplit split;
    ToolReplyStream stream(ToolCallFormat::Harmony, r);
    std::string streamed;
    for (size_t i = 0; i < reply.size(); i += piece) {
      ReasoningDelta d = split.add(std::string_view(reply).substr(i, piece));
      streamed += stream.add(d.content);
      EXPECT_EQ(streamed.find("<|"), std::string::npos) << streamed;  // never half a call
    }
    streamed += stream.add(split.finish().content);
    const ToolReply rest = stream.finish();
    EXPECT_EQ(streamed + rest.content, "Let me look that up.") << "pieces of " << piece;
    ASSERT_EQ(rest.calls.size(), 1u);
    EXPECT_EQ(rest.calls[0].name, "get_weather");
  }
  EXPECT_EQ(harmony_call_start("abc <|chan"), 4u);
  EXPECT_EQ(harmony_call_start("abc"), std::string_view::npos);
  EXPECT_EQ(harmony_call_start("a <|channel|>x"), 2u);
}

TEST(HarmonyToolCalls, TheConversationIsRewrittenForTheTemplate) {
  const ordered_json messages = ordered_json::parse(R"([
    {"role": "user", "content": "Weather in Paris and Rome?"},
    {"role": "assistant", "reasoning_content": "Two cities.", "content": "",
     "tool_calls": [
       {"id": "a", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}},
       {"id": "b", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Rome"}}}]},
    {"role": "tool", "tool_call_id": "b", "content": "rain"},
    {"role": "tool", "tool_call_id": "a", "content": "sun"},
    {"role": "assistant", "content": "Sun in Paris, rain in Rome.", "reasoning_content": "Done."}])");
  const ordered_json out = harmony_tool_messages(messages);
  ASSERT_EQ(out.size(), 6u) << out.dump();
  // One call per assistant message, each followed by its own result; arguments as objects.
  EXPECT_EQ(out[1]["thinking"], "Two cities.");
  EXPECT_FALSE(out[1].contains("reasoning_content"));
  EXPECT_EQ(out[1]["tool_calls"].size(), 1u);
  EXPECT_EQ(out[1]["tool_calls"][0]["function"]["arguments"], ordered_json::parse(R"({"city": "Paris"})"));
  EXPECT_EQ(out[2]["content"], "sun");
  EXPECT_FALSE(out[3].contains("thinking"));
  EXPECT_EQ(out[3]["tool_calls"][0]["function"]["arguments"], ordered_json::parse(R"({"city": "Rome"})"));
  EXPECT_EQ(out[4]["content"], "rain");
  EXPECT_EQ(out[5]["content"], "Sun in Paris, rain in Rome.");
  EXPECT_EQ(out[5]["thinking"], "Done.");
  // Results without matching ids follow the calls in order; content beside reasoning and a call
  // joins the thinking (the template refuses both).
  const ordered_json unnamed = harmony_tool_messages(ordered_json::parse(R"([
    {"role": "assistant", "reasoning_content": "Hm.", "content": "Checking.",
     "tool_calls": [{"function": {"name": "get_time", "arguments": "{}"}},
                    {"function": {"name": "get_weather", "arguments": "not json"}}]},
    {"role": "tool", "content": "noon"}, {"role": "tool", "content": "fog"}])"));
  ASSERT_EQ(unnamed.size(), 4u) << unnamed.dump();
  EXPECT_EQ(unnamed[0]["thinking"], "Hm.\n\nChecking.");
  EXPECT_FALSE(unnamed[0].contains("content"));
  EXPECT_EQ(unnamed[1]["content"], "noon");
  EXPECT_EQ(unnamed[2]["tool_calls"][0]["function"]["arguments"], "not json");  // left as sent
  EXPECT_EQ(unnamed[3]["content"], "fog");
  // prepare_tool_prompt gives the template the tools as sent, with an empty description where
  // none was (the template cannot write a missing one).
  const ToolRequest r = weather();
  const ToolPrompt prompt = prepare_tool_prompt(ToolCallFormat::Harmony, messages, r);
  ASSERT_TRUE(prompt.template_tools.has_value());
  ordered_json described = r.tools;
  described[1]["function"]["description"] = "";
  EXPECT_EQ(*prompt.template_tools, described);
  EXPECT_EQ(prompt.messages, out);
}

bool grammar_matches(const StructuredOutputs& constraint, const std::string& text) {
  std::vector<std::string> bytes;
  for (int b = 0; b < 256; ++b) bytes.push_back(std::string(1, static_cast<char>(b)));
  bytes.push_back("");  // end of generation
  auto vocabulary = std::make_shared<grammar::TokenVocabulary>(bytes, std::vector<bool>{}, std::vector<int32_t>{256});
  grammar::GrammarMatcher matcher(grammar::compile_grammar(grammar::parse_gbnf(*constraint.grammar), vocabulary));
  return matcher.accept_bytes(text) && matcher.can_terminate();
}

TEST(HarmonyToolCalls, RequiredAndNamedChoicesConstrainTheReplyToACall) {
  EXPECT_FALSE(tool_reply_constraint(ToolCallFormat::Harmony, weather()));  // auto: free
  EXPECT_FALSE(tool_reply_constraint(ToolCallFormat::Harmony, weather(R"({"tool_choice": "none"})")));
  auto required = tool_reply_constraint(ToolCallFormat::Harmony, weather(R"({"tool_choice": "required"})"));
  ASSERT_TRUE(required && required->grammar);
  EXPECT_EQ(required->count(), 1);
  EXPECT_NE(std::find(required->control_tokens.begin(), required->control_tokens.end(), "<|message|>"),
            required->control_tokens.end());
  const std::string weather_call =
      "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}";
  EXPECT_TRUE(grammar_matches(*required, weather_call));
  EXPECT_TRUE(grammar_matches(*required, "<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>{}"));
  EXPECT_TRUE(grammar_matches(*required,
                              "<|channel|>analysis<|message|>Is 1 < 2? Yes.<|end|><|start|>assistant" + weather_call));
  EXPECT_FALSE(grammar_matches(*required, "<|channel|>final<|message|>Hi"));  // no answer without a call
  EXPECT_FALSE(grammar_matches(*required,
                               "<|channel|>commentary to=functions.get_weather <|constrain|>json"
                               "<|message|>{\"town\":\"Paris\"}"));  // the schema holds
  EXPECT_FALSE(
      grammar_matches(*required, "<|channel|>commentary to=functions.send_mail <|constrain|>json<|message|>{}"));
  auto named = tool_reply_constraint(
      ToolCallFormat::Harmony, weather(R"({"tool_choice": {"type": "function", "function": {"name": "get_time"}}})"));
  ASSERT_TRUE(named && named->grammar);
  EXPECT_FALSE(grammar_matches(*named, weather_call));
  EXPECT_TRUE(grammar_matches(*named, "<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>{}"));
  // And what the grammar writes reads back as the call.
  const Read read = read_reply(weather_call, weather(R"({"tool_choice": "required"})"));
  ASSERT_EQ(read.reply.calls.size(), 1u);
  EXPECT_EQ(read.reply.calls[0].arguments, "{\"city\":\"Paris\"}");
}

}  // namespace
}  // namespace lumen::server
