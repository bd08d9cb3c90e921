#include "server/chat_request.h"

#include <set>
#include <string>

#include "chat/chat_template.h"
#include "server/api_error.h"
#include "server/request_fields.h"
#include "util/error.h"

namespace lumen::server {

namespace {

nlohmann::ordered_json message_content(const nlohmann::json& content, const std::string& role) {
  if (content.is_null()) {
    if (role != "assistant") invalid("messages", "only an assistant message may have null content");
    // What the SDK sends beside tool_calls. Templates concatenate content as a string (Python's
    // jinja2 fails on `str + None` too), so it renders as the empty text it stands for.
    return "";
  }
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) invalid("messages", "message content must be a string or a list of text parts");
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const auto& part = content[i];
    if (!part.is_object() || !part.contains("type") || part["type"] != "text" || !part.contains("text") ||
        !part["text"].is_string()) {
      invalid("messages", "content parts must be {{\"type\": \"text\", \"text\": ...}} (no images or audio)");
    }
    if (i > 0) text += '\n';
    text += part["text"].get<std::string>();
  }
  return text;
}

// An assistant turn's tool_calls, OpenAI's shape: [{"id", "type": "function", "function":
// {"name", "arguments"}}], passed to the template as given once the shape is checked.
nlohmann::ordered_json tool_calls_of(const nlohmann::json& calls) {
  if (!calls.is_array()) invalid("messages", "'tool_calls' must be a list");
  for (const auto& call : calls) {
    const bool ok = call.is_object() && call.contains("function") && call["function"].is_object() &&
                    call["function"].contains("name") && call["function"]["name"].is_string() &&
                    (!call["function"].contains("arguments") || call["function"]["arguments"].is_string() ||
                     call["function"]["arguments"].is_object()) &&
                    (!call.contains("id") || call["id"].is_string());
    if (!ok) invalid("messages", "each tool call must be {{\"id\", \"type\": \"function\", \"function\": {{\"name\", \"arguments\"}}}}");
  }
  return nlohmann::ordered_json(calls);
}

}  // namespace

nlohmann::ordered_json parse_messages(const nlohmann::json& body, size_t max_messages) {
  static const std::set<std::string> kRoles = {"system", "developer", "user", "assistant", "tool"};
  auto it = body.find("messages");
  if (it == body.end() || it->is_null()) invalid("messages", "'messages' is required");
  if (!it->is_array() || it->empty()) invalid("messages", "'messages' must be a non-empty list");
  if (it->size() > max_messages) invalid("messages", "at most {} messages in a conversation", max_messages);
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  for (const auto& message : *it) {
    if (!message.is_object()) invalid("messages", "each message must be an object");
    auto role = message.find("role");
    if (role == message.end() || !role->is_string() || !kRoles.contains(role->get<std::string>())) {
      invalid("messages", "each message needs a 'role': system, developer, user, assistant or tool");
    }
    const std::string role_name = role->get<std::string>();
    auto content = message.find("content");
    nlohmann::ordered_json out = {{"role", role_name},
                                  {"content", message_content(content == message.end() ? nlohmann::json()
                                                                                        : *content,
                                                              role_name)}};
    for (const char* extra : {"name", "tool_call_id"}) {
      auto value = message.find(extra);
      if (value == message.end() || value->is_null()) continue;
      if (!value->is_string()) invalid("messages", "'{}' of a message must be a string", extra);
      out[extra] = value->get<std::string>();
    }
    if (auto calls = message.find("tool_calls"); calls != message.end() && !calls->is_null()) {
      if (role_name != "assistant") invalid("messages", "only an assistant message may have 'tool_calls'");
      out["tool_calls"] = tool_calls_of(*calls);
    }
    messages.push_back(std::move(out));
  }
  return messages;
}

std::vector<int32_t> render_chat_prompt(const nlohmann::ordered_json& messages, const nlohmann::json& body,
                                        const Model& model, size_t max_rendered_bytes) {
  const RequestFields fields(body);
  ChatOptions options;
  options.add_generation_prompt = fields.boolean("add_generation_prompt").value_or(true);
  options.max_rendered_bytes = max_rendered_bytes;  // also bounds each string built
  if (const nlohmann::json* tools = fields.find("tools")) {
    if (!tools->is_array()) invalid("tools", "'tools' must be a list");
    options.tools = nlohmann::ordered_json(*tools);
  }
  if (const nlohmann::json* kwargs = fields.find("chat_template_kwargs")) {
    if (!kwargs->is_object()) invalid("chat_template_kwargs", "'chat_template_kwargs' must be an object");
    for (const auto& [key, value] : kwargs->items()) {
      if (chat::is_reserved_variable(key)) {
        invalid("chat_template_kwargs." + key, "'{}' is set by the server and cannot be overridden in chat_template_kwargs", key);
      }
    }
    options.extra_context = nlohmann::ordered_json(*kwargs);
  }
  std::vector<int32_t> prompt;
  try {
    prompt = model.chat_prompt(messages, options);
  } catch (const ChatRefused& e) {
    invalid("messages", "the chat template cannot render this conversation: {}", e.what());
  } catch (const Error& e) {
    // A valid request the model's template cannot render is not the client's fault.
    throw ApiError(500, fmt::format("the chat template failed on a valid conversation: {}", e.what()));
  }
  if (prompt.empty()) invalid("messages", "the conversation renders to an empty prompt");
  return prompt;
}

ChatRequest read_chat_request(const nlohmann::json& body, const ServingLimits& limits) {
  const RequestFields fields(body);
  if (const nlohmann::json* format = fields.find("response_format")) {
    if (!format->is_object() || format->value("type", nlohmann::json()) != "text") {
      invalid("response_format", "only 'response_format': {{\"type\": \"text\"}} is supported");
    }
  }
  // Tool calling does not exist yet: answering in plain text as if the tools were not there
  // would mislead the client.
  for (const char* field : {"tools", "tool_choice", "functions", "function_call"}) {
    if (const nlohmann::json* value = fields.find(field); value && !value->is_null()) {
      invalid(field, "'{}' is not supported yet (no tool calling)", field);
    }
  }
  ChatRequest out;
  out.messages = parse_messages(body, limits.max_chat_messages);
  out.options = parse_generation_options(body, Endpoint::ChatCompletions, limits);
  return out;
}

ChatRequest parse_chat_request(const nlohmann::json& body, const Model& model, const ServingLimits& limits) {
  ChatRequest out = read_chat_request(body, limits);
  out.prompt = render_chat_prompt(out.messages, body, model, limits.max_rendered_prompt_bytes);
  return out;
}

}  // namespace lumen::server
