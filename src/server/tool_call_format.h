#pragma once
// How a model asks for a tool: the format of the call in its reply, which its chat template
// teaches it, and how Lumen turns that text into OpenAI's `tool_calls`.
//
//  - Hermes (Qwen 2.5/3, Hermes 2/3, SmolLM3...: the template mentions <tool_call>): the
//    template renders `tools`; a call is <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>,
//    possibly several, after optional content.
//  - Llama 3 JSON (Llama 3.1+: the template mentions <|python_tag|> or ipython): the template
//    renders `tools`; the whole reply is {"name": ..., "parameters": {...}}.
//  - Harmony (gpt-oss: the template writes <|channel|> and <|message|>): the template renders
//    `tools`; a call is a message to functions.NAME whose body is the arguments' JSON, one per
//    reply (server/harmony_tool_calls.h).
//  - Generic (every other template, e.g. SmolLM2, Gemma 3): the template knows nothing of
//    tools, so Lumen describes them in a system message and the reply is one JSON object,
//    {"tool_calls": [{"name", "arguments"}...]} or {"content": "..."}, constrained by a schema
//    (so even a small model's reply always parses). Earlier calls and tool results are written
//    into the conversation as that JSON, in user/assistant turns any template accepts. The
//    wrapper never reaches the client: a reply cut short (max_tokens) gives its finished calls
//    or its content so far (generic_reply_prefix.h), with finish_reason "length".
//
// tool_choice "required" or a named function constrain the reply to a call of the allowed
// functions, their arguments following each function's parameter schema; "auto" lets a
// Hermes / Llama 3 model answer freely (calls are parsed when they appear); "none" leaves the
// tools out of the prompt's reply format and parses nothing, except in Generic, whose reply is
// then {"content": "..."} (the conversation's calls and results are JSON, which a model would
// imitate) unless the request constrains the output itself. A call a native reply began and
// did not finish is dropped, not sent as content.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "lumen/sampling_params.h"
#include "server/tool_request.h"

namespace lumen::server {

enum class ToolCallFormat { Generic, Hermes, Llama3Json, Harmony };

ToolCallFormat tool_call_format_of(std::string_view chat_template_source);
const char* tool_call_format_name(ToolCallFormat format);

// What the chat template renders: the messages (rewritten for Generic) and its `tools`
// variable (nullopt for Generic, which the template would not use). `wrapped_reply`: the reply
// is constrained by tool_reply_constraint (Generic then tells the model its format).
struct ToolPrompt {
  nlohmann::ordered_json messages;
  std::optional<nlohmann::ordered_json> template_tools;
};
ToolPrompt prepare_tool_prompt(ToolCallFormat format, const nlohmann::ordered_json& messages,
                               const ToolRequest& request, bool wrapped_reply = true);

// The constraint on the reply, or nullopt for free text. Generic always has one.
std::optional<StructuredOutputs> tool_reply_constraint(ToolCallFormat format, const ToolRequest& request);

struct ParsedToolCall {
  std::string id;         // "call_" + 24 random characters
  std::string name;
  std::string arguments;  // a JSON object's text, as OpenAI sends it
};

struct ToolReply {
  std::string content;  // the text that is not a call (may be empty)
  std::vector<ParsedToolCall> calls;
};

// A call of function `name` with `arguments` (an object, or an object's JSON text), with a
// fresh id; nullopt when the request does not offer that function or the arguments are no
// object.
std::optional<ParsedToolCall> make_tool_call(std::string_view name, const nlohmann::ordered_json& arguments,
                                             const ToolRequest& request);

// A reply's text into content and calls. Text that does not parse as the format's calls is
// content, except a call cut short (dropped) and Generic's wrapper (never content); calls of
// functions the request does not offer are content too.
ToolReply parse_tool_reply(ToolCallFormat format, std::string_view text, const ToolRequest& request);

// Where, in streamed text, a call may begin (so content before it can be streamed and the rest
// held until the reply ends): the offset of the first possible start, or npos. Generic replies
// are JSON from the first byte (0).
size_t tool_call_start(ToolCallFormat format, std::string_view text);

}  // namespace lumen::server
