#include "server/chat_request.h"

#include <string>

#include "chat/chat_template.h"
#include "chat/message_roles.h"
#include "server/api_error.h"
#include "server/image_parts.h"
#include "server/request_fields.h"
#include "server/structured_request.h"
#include "util/error.h"

namespace lumen::server {

namespace {

// Images found so far in the request, and the bounds on them.
struct ImageSink {
  const ImageLimits* limits = nullptr;  // null: image parts are refused
  std::vector<ImagePart>* images = nullptr;
};

nlohmann::ordered_json message_content(const nlohmann::json& content, const std::string& role, ImageSink sink) {
  if (content.is_null()) {
    if (role != "assistant") invalid("messages", "only an assistant message may have null content");
    // What the SDK sends beside tool_calls. Templates concatenate content as a string (Python's
    // jinja2 fails on `str + None` too), so it renders as the empty text it stands for.
    return "";
  }
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) invalid("messages", "message content must be a string or a list of text parts");
  std::string text;
  // With images, the template gets the parts as Hugging Face's processors pass them
  // ({"type": "text", "text"}, {"type": "image"}), and places each image's marker itself.
  nlohmann::ordered_json parts = nlohmann::ordered_json::array();
  bool has_image = false;
  for (size_t i = 0; i < content.size(); ++i) {
    const auto& part = content[i];
    // value() with a json default: a "type" of any kind compares, where a string default would
    // throw a type error for {"type": true} (a fuzzer's input that ended the process).
    if (sink.images != nullptr && part.is_object() && part.value("type", nlohmann::json()) == "image_url") {
      if (role != "user") invalid("messages", "only a user message may hold images");
      if (sink.images->size() >= sink.limits->max_images_per_request) {
        invalid("messages", "at most {} images in a request (--max-images-per-request)",
                sink.limits->max_images_per_request);
      }
      sink.images->push_back(parse_image_part(part, *sink.limits));
      parts.push_back({{"type", "image"}});
      has_image = true;
      continue;
    }
    if (!part.is_object() || !part.contains("type") || part["type"] != "text" || !part.contains("text") ||
        !part["text"].is_string()) {
      if (sink.images != nullptr) {
        invalid("messages",
                "content parts must be {{\"type\": \"text\", \"text\": ...}} or {{\"type\": \"image_url\", "
                "\"image_url\": {{\"url\": ...}}}} (no audio)");
      }
      invalid("messages", "content parts must be {{\"type\": \"text\", \"text\": ...}} (no images or audio)");
    }
    if (i > 0) text += '\n';
    text += part["text"].get<std::string>();
    parts.push_back({{"type", "text"}, {"text", part["text"].get<std::string>()}});
  }
  if (has_image) return parts;
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

nlohmann::ordered_json parse_messages(const nlohmann::json& body, size_t max_messages, const ImageLimits* image_limits,
                                      std::vector<ImagePart>* images) {
  auto it = body.find("messages");
  if (it == body.end() || it->is_null()) invalid("messages", "'messages' is required");
  if (!it->is_array() || it->empty()) invalid("messages", "'messages' must be a non-empty list");
  if (it->size() > max_messages) invalid("messages", "at most {} messages in a conversation", max_messages);
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  for (size_t index = 0; index < it->size(); ++index) {
    const nlohmann::json& message = (*it)[index];
    if (const std::string problem = chat::message_role_problem(message, index); !problem.empty()) {
      invalid("messages", "{}", problem);
    }
    const std::string role_name = message["role"].get<std::string>();
    auto content = message.find("content");
    nlohmann::ordered_json out = {{"role", role_name},
                                  {"content", message_content(content == message.end() ? nlohmann::json() : *content,
                                                              role_name, {image_limits, images})}};
    for (const char* extra : {"name", "tool_call_id"}) {
      auto value = message.find(extra);
      if (value == message.end() || value->is_null()) continue;
      if (!value->is_string()) invalid("messages", "'{}' of a message must be a string", extra);
      out[extra] = value->get<std::string>();
    }
    // An assistant turn's reasoning (as this server returns it): templates that show it again
    // read it (Qwen3's, gpt-oss's as `thinking`: server/harmony_tool_calls.h).
    if (auto reasoning = message.find("reasoning_content"); reasoning != message.end() && !reasoning->is_null()) {
      if (role_name != "assistant") invalid("messages", "only an assistant message may have 'reasoning_content'");
      if (!reasoning->is_string()) invalid("messages", "'reasoning_content' of a message must be a string");
      out["reasoning_content"] = reasoning->get<std::string>();
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
                                        const Model& model, size_t max_rendered_bytes,
                                        const std::optional<nlohmann::ordered_json>& tools) {
  const RequestFields fields(body);
  ChatOptions options;
  // vLLM's continue_final_message: the final assistant message is continued (a prefill), so no
  // new turn is opened unless the client asks for both, which cannot be.
  options.continue_final_message = fields.boolean("continue_final_message").value_or(false);
  options.add_generation_prompt = fields.boolean("add_generation_prompt").value_or(!options.continue_final_message);
  if (options.continue_final_message && options.add_generation_prompt) {
    invalid("continue_final_message", "continue_final_message and add_generation_prompt cannot both be true");
  }
  options.max_rendered_bytes = max_rendered_bytes;  // also bounds each string built
  options.tools = tools;
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
  ChatRequest out;
  out.tools = parse_tool_request(fields);
  if (out.tools) out.template_tools = out.tools->tools;
  out.messages = parse_messages(body, limits.max_chat_messages, &limits.images, &out.images);
  out.options = parse_generation_options(body, Endpoint::ChatCompletions, limits);
  if (out.tools && out.tools->choice != ToolChoice::None && out.options.params.use_beam_search) {
    invalid("tools", "tool calls are not supported with beam search");
  }
  return out;
}

void restore_declared_order(std::string_view raw_body, ChatRequest& request) {
  if (!request.tools && !request.options.params.structured_outputs) return;
  // The body parsed once already (parse_json_body checked its size, nesting and UTF-8).
  const nlohmann::ordered_json body = nlohmann::ordered_json::parse(raw_body);
  if (request.options.params.structured_outputs) {
    restore_schema_order(body, request.options.structured_field, *request.options.params.structured_outputs);
  }
  if (request.tools) {
    restore_tool_order(body, *request.tools);
    request.template_tools = request.tools->tools;
  }
}

void prepare_tool_calling(ChatRequest& request, const Model& model) {
  if (!request.tools) return;
  request.tool_format = tool_call_format_of(model.chat_template_source());
  std::optional<StructuredOutputs> constraint = tool_reply_constraint(request.tool_format, *request.tools);
  const bool calls_allowed = request.tools->choice != ToolChoice::None;
  if (constraint && request.options.params.structured_outputs) {
    if (calls_allowed) {
      invalid(request.options.structured_field,
              "'{}' and 'tools' both constrain the reply; send tool_choice \"none\" to use '{}' with tools",
              request.options.structured_field, request.options.structured_field);
    }
    constraint.reset();  // tool_choice none: the client's constraint shapes the reply, left as it is
  }
  request.tool_reply_parsed = calls_allowed || constraint.has_value();
  ToolPrompt prompt =
      prepare_tool_prompt(request.tool_format, request.messages, *request.tools, constraint.has_value());
  request.messages = std::move(prompt.messages);
  request.template_tools = std::move(prompt.template_tools);
  if (!constraint) return;
  request.options.params.structured_outputs = std::move(constraint);
  request.options.structured_field = "tools";
}

ChatRequest parse_chat_request(const nlohmann::json& body, const Model& model, const ServingLimits& limits) {
  ChatRequest out = read_chat_request(body, limits);
  prepare_tool_calling(out, model);
  out.prompt = render_chat_prompt(out.messages, body, model, limits.max_rendered_prompt_bytes, out.template_tools);
  return out;
}

}  // namespace lumen::server
