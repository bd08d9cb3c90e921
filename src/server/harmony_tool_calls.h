#pragma once
// Tool calls in OpenAI's harmony format (gpt-oss), the ToolCallFormat::Harmony side of
// server/tool_call_format.h. The template renders `tools` as a TypeScript-like namespace in
// the developer message; the model calls a function with a message addressed to it,
//   <|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{...}<|call|>
// (the recipient may also follow the role: `<|start|>assistant to=functions.NAME<|channel|>...`),
// and <|call|> ends the reply, so a reply makes one call. HarmonySplit (server/harmony_split.h)
// passes such a message to content in one canonical form,
//   <|channel|>CHANNEL to=RECIPIENT<|message|>BODY<|call|>
// which parse_harmony_reply reads; every other message's text is content or reasoning already.
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "lumen/sampling_params.h"
#include "server/tool_call_format.h"
#include "server/tool_request.h"

namespace lumen::server {

// The recipient a message header names (`... to=functions.NAME ...`): up to a space or a
// marker; empty if none.
std::string_view harmony_recipient(std::string_view header);

// The canonical header HarmonySplit writes for a message addressed to `recipient`.
std::string harmony_call_header(std::string_view channel, std::string_view recipient);

// The conversation as the gpt-oss template reads it: a call's arguments as a JSON object (the
// template writes them with tojson; a client's JSON text would come out quoted), an assistant
// message's reasoning_content as its `thinking`, and an assistant message with several calls
// as one message per call, each followed by its result (the template renders one call per
// message and names a result by the call before it).
nlohmann::ordered_json harmony_tool_messages(const nlohmann::ordered_json& messages);

// The tools as the gpt-oss template reads them: a function without a description gets an
// empty one (the template writes `"// " + tool.description`, which fails on a missing one, and
// OpenAI's API makes it optional).
nlohmann::ordered_json harmony_template_tools(const nlohmann::ordered_json& tools);

// tool_choice "required" or a named function: a grammar (with the harmony markers as control
// tokens) that lets the reply think in the analysis channel, then makes it call an allowed
// function with arguments that follow its parameter schema. nullopt otherwise (auto: the
// reply's calls are parsed when it makes them).
std::optional<StructuredOutputs> harmony_call_constraint(const ToolRequest& request);

// The calls in a reply's content (HarmonySplit's output): a message to `functions.NAME` of an
// offered function with a JSON object as its body is a call; any other addressed message stays
// text, and a call cut short (no end marker) is dropped.
ToolReply parse_harmony_reply(std::string_view text, const ToolRequest& request);

// Where a call may begin in streamed content: the first canonical header, or a tail that may
// grow into one; npos if neither.
size_t harmony_call_start(std::string_view text);

}  // namespace lumen::server
