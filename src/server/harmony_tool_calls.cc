#include "server/harmony_tool_calls.h"

#include <algorithm>
#include <array>
#include <vector>

#include "grammar/json_schema_to_gbnf.h"
#include "server/harmony_markers.h"
#include "server/reasoning_split.h"
#include "server/text_trim.h"

namespace lumen::server {

namespace {

using ordered_json = nlohmann::ordered_json;
using harmony::find_end;
using harmony::kChannel;
using harmony::kMessage;
using harmony::kRecipient;

constexpr std::string_view kStart = "<|start|>";
constexpr std::string_view kFunctions = "functions.";

// Where the next message header starts at or after `from`: its <|channel|>, or the <|start|>
// before it in a reply no HarmonySplit read (reasoning_format "none"), or the text's start
// when the reply's first header begins with its recipient (`to=functions.NAME<|channel|>...`).
size_t next_header(std::string_view text, size_t from) {
  if (from == 0 && text.starts_with(kRecipient)) return 0;
  return std::min(text.find(kChannel, from), text.find(kStart, from));
}

// A client's arguments (JSON text or an object) as the object the template writes out.
ordered_json arguments_object(const ordered_json& arguments) {
  if (!arguments.is_string()) return arguments;
  ordered_json parsed = ordered_json::parse(arguments.get<std::string>(), nullptr, false);
  return parsed.is_discarded() ? arguments : parsed;
}

// An assistant message as the template reads it: no null content, reasoning_content as
// `thinking` (with any content beside a call: the template refuses a message that has both),
// arguments as objects.
ordered_json harmony_assistant_message(ordered_json message) {
  // A call's message often has content null, which the template cannot test for markers.
  if (auto content = message.find("content"); content != message.end() && content->is_null()) message.erase(content);
  const bool calls = message.contains("tool_calls") && message["tool_calls"].is_array();
  if (auto reasoning = message.find("reasoning_content"); reasoning != message.end()) {
    if (reasoning->is_string() && !reasoning->get<std::string>().empty()) {
      std::string thinking = reasoning->get<std::string>();
      if (calls && message.contains("content") && message["content"].is_string() &&
          !message["content"].get<std::string>().empty()) {
        thinking += "\n\n" + message["content"].get<std::string>();
        message.erase("content");
      }
      message["thinking"] = thinking;
    }
    message.erase("reasoning_content");
  }
  if (calls) {
    for (auto& call : message["tool_calls"]) {
      if (call.contains("function") && call["function"].contains("arguments")) {
        call["function"]["arguments"] = arguments_object(call["function"]["arguments"]);
      }
    }
  }
  return message;
}

std::string call_id(const ordered_json& call) {
  auto id = call.find("id");
  return id != call.end() && id->is_string() ? id->get<std::string>() : std::string();
}

}  // namespace

std::string_view harmony_recipient(std::string_view header) {
  size_t to = header.find("to=");
  // "to=" opens the header (a recipient after the role) or follows a space.
  while (to != std::string_view::npos && to > 0 && header[to - 1] != ' ' && header[to - 1] != '>') {
    to = header.find("to=", to + 1);
  }
  if (to == std::string_view::npos) return {};
  const std::string_view rest = header.substr(to + 3);
  return rest.substr(0, std::min(rest.find(' '), rest.find("<|")));
}

ordered_json harmony_template_tools(const ordered_json& tools) {
  ordered_json out = tools;
  for (auto& tool : out) {
    if (!tool.is_object() || !tool.contains("function") || !tool["function"].is_object()) continue;
    auto& function = tool["function"];
    if (!function.contains("description") || !function["description"].is_string()) function["description"] = "";
  }
  return out;
}

std::string harmony_call_header(std::string_view channel, std::string_view recipient) {
  std::string header(kChannel);
  header.append(channel).append(" to=").append(recipient).append(kMessage);
  return header;
}

ordered_json harmony_tool_messages(const ordered_json& messages) {
  ordered_json out = ordered_json::array();
  for (size_t i = 0; i < messages.size(); ++i) {
    const ordered_json& message = messages[i];
    if (message.value("role", "") != "assistant") {
      out.push_back(message);
      continue;
    }
    ordered_json assistant = harmony_assistant_message(message);
    const bool several =
        assistant.contains("tool_calls") && assistant["tool_calls"].is_array() && assistant["tool_calls"].size() > 1;
    if (!several) {
      out.push_back(std::move(assistant));
      continue;
    }
    // The results that follow: each goes after its call (by tool_call_id; by position when the
    // ids do not all match), any left over after the last call.
    std::vector<ordered_json> results;
    while (i + 1 < messages.size() && messages[i + 1].value("role", "") == "tool") results.push_back(messages[++i]);
    const ordered_json calls = assistant["tool_calls"];
    std::vector<std::vector<ordered_json>> result_of(calls.size());
    std::vector<bool> placed(results.size(), false);
    for (size_t r = 0; r < results.size(); ++r) {
      const std::string id = results[r].value("tool_call_id", "");
      for (size_t c = 0; c < calls.size() && !id.empty(); ++c) {
        if (call_id(calls[c]) == id) {
          result_of[c].push_back(results[r]);
          placed[r] = true;
          break;
        }
      }
    }
    if (std::find(placed.begin(), placed.end(), false) != placed.end()) {
      for (auto& list : result_of) list.clear();
      std::fill(placed.begin(), placed.end(), false);
      for (size_t r = 0; r < results.size() && r < calls.size(); ++r) {
        result_of[r].push_back(results[r]);
        placed[r] = true;
      }
    }
    for (size_t c = 0; c < calls.size(); ++c) {
      ordered_json one = c == 0 ? assistant : ordered_json{{"role", "assistant"}};
      one["tool_calls"] = ordered_json::array({calls[c]});
      out.push_back(std::move(one));
      for (ordered_json& result : result_of[c]) out.push_back(std::move(result));
    }
    for (size_t r = 0; r < results.size(); ++r) {
      if (!placed[r]) out.push_back(std::move(results[r]));
    }
  }
  return out;
}

std::optional<StructuredOutputs> harmony_call_constraint(const ToolRequest& request) {
  if (request.choice != ToolChoice::Required && request.choice != ToolChoice::Named) return std::nullopt;
  // The analysis message is optional and its text any run without a marker's "<|" (a '<' on
  // its own is fine); then one call. The markers are control tokens of a harmony vocabulary.
  std::string grammar =
      "root ::= harmony-analysis? \"<|channel|>commentary to=functions.\" harmony-call\n"
      "harmony-analysis ::= \"<|channel|>analysis<|message|>\" ([^<] | \"<\" [^|<])* \"<|end|><|start|>assistant\"\n";
  std::string calls;
  std::string rules;
  int k = 0;
  for (const ToolFunction* f : request.callable()) {
    grammar::JsonSchemaOptions options;
    options.root_rule = "args";
    options.rule_prefix = "f" + std::to_string(++k) + "-";
    const ordered_json parameters = f->parameters.empty() ? ordered_json{{"type", "object"}} : f->parameters;
    rules += grammar::json_schema_to_gbnf(parameters, options);
    if (!calls.empty()) calls += " | ";
    // Names are letters, digits, '_' and '-' (tool_request.cc): nothing to escape.
    calls += "\"" + f->name + " <|constrain|>json<|message|>\" " + options.rule_prefix + "args";
  }
  StructuredOutputs out;
  out.grammar = grammar + "harmony-call ::= " + calls + "\n" + rules;
  out.control_tokens = {"<|channel|>", "<|message|>", "<|constrain|>", "<|end|>", "<|start|>"};
  return out;
}

ToolReply parse_harmony_reply(std::string_view text, const ToolRequest& request) {
  ToolReply reply;
  std::string content;
  size_t at = 0;
  while (at < text.size()) {
    const size_t header = next_header(text, at);
    if (header == std::string_view::npos) {
      content += text.substr(at);
      break;
    }
    content += text.substr(at, header - at);
    const size_t message = text.find(kMessage, header);
    if (message == std::string_view::npos) {
      // A header never finished: a call cut short (max_tokens) is dropped; anything else is text.
      if (!harmony_recipient(text.substr(header)).starts_with(kFunctions)) content += text.substr(header);
      break;
    }
    const std::string_view recipient = harmony_recipient(text.substr(header, message - header));
    const size_t body = message + kMessage.size();
    // <|call|> ends generation, so a finished call's body usually runs to the end of the text.
    const auto [end, length] = find_end(text, body);
    const size_t body_end = end == std::string_view::npos ? text.size() : end;
    const size_t next = end == std::string_view::npos ? text.size() : end + length;
    if (recipient.starts_with(kFunctions)) {
      const ordered_json arguments = ordered_json::parse(text.substr(body, body_end - body), nullptr, false);
      if (arguments.is_discarded()) {
        // A call cut short (max_tokens) is no content; a finished one that is not JSON is text.
        if (end != std::string_view::npos) content += text.substr(header, next - header);
        at = next;
        continue;
      }
      if (auto call = make_tool_call(recipient.substr(kFunctions.size()), arguments, request)) {
        reply.calls.push_back(std::move(*call));
        at = next;
        continue;
      }
    }
    content += text.substr(header, next - header);  // not a call we can make: the client sees it
    at = next;
  }
  reply.content = reply.calls.empty() ? content : trimmed(content);
  return reply;
}

size_t harmony_call_start(std::string_view text) {
  const size_t header = next_header(text, 0);
  if (header != std::string_view::npos) return header;
  if (text.size() < kRecipient.size() && kRecipient.starts_with(text)) return 0;
  const size_t partial = std::max(partial_tag_suffix(text, kChannel), partial_tag_suffix(text, kStart));
  return partial == 0 ? std::string_view::npos : text.size() - partial;
}

}  // namespace lumen::server
