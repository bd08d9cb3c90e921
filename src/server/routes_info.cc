// The routes around generation: the model list, health, metrics, and the tokenizer.
#include <chrono>
#include <string>
#include <vector>

#include "lumen/prompt_kv_exchange.h"
#include "server/api_error.h"
#include "server/client_id.h"
#include "server/chat_request.h"
#include "server/request_fields.h"
#include "server/routes.h"

namespace lumen::server {

namespace {

nlohmann::json model_card(const ServerContext& context) {
  static const int64_t started = std::chrono::duration_cast<std::chrono::seconds>(
                                     std::chrono::system_clock::now().time_since_epoch()).count();
  return {{"id", context.model_name},
          {"object", "model"},
          {"created", started},
          {"owned_by", "lumen"},
          {"max_model_len", context.limits.max_model_len},
          // What the model reads besides text (llama.cpp's /props names it so): the chat page
          // offers to attach an image only where the server has a vision encoder (--mmproj).
          {"modalities", {{"vision", context.model.image_encoder() != nullptr}}}};
}

void send_json(httplib::Response& response, const nlohmann::json& body) {
  response.set_content(dump_json(body), "application/json");
}

}  // namespace

void handle_models(ServerContext& context, const httplib::Request& request, httplib::Response& response) {
  if (request.matches.size() > 1) {
    // GET /v1/models/{id}
    if (request.matches[1].str() != context.model_name) {
      throw ApiError(404, fmt::format("the model '{}' does not exist", request.matches[1].str()), "model",
                     "model_not_found");
    }
    send_json(response, model_card(context));
    return;
  }
  send_json(response, {{"object", "list"}, {"data", nlohmann::json::array({model_card(context)})}});
}

void handle_health(ServerContext& context, const httplib::Request&, httplib::Response& response) {
  if (context.admission.draining()) throw ApiError(503, "the server is shutting down", "", "server_shutting_down");
  send_json(response, {{"status", "ok"}});
}

void handle_metrics(ServerContext& context, const httplib::Request&, httplib::Response& response) {
  response.set_content(context.metrics.render(context.engine.stats(), PromptKvExchange(context.engine).stats()),
                       "text/plain; version=0.0.4; charset=utf-8");
}

void handle_tokenize(ServerContext& context, const httplib::Request& request, httplib::Response& response) {
  const nlohmann::json body = parse_request_body(request, JsonEndpoint::Tokenize, response);
  check_model(context, body);
  const RequestFields fields(body);
  std::vector<int32_t> tokens;
  if (fields.has("messages")) {
    if (!context.model.has_chat_template()) throw ApiError(400, "the served model has no chat template", "messages");
    // Rendering runs under admission here too (one place for its duration; see
    // handle_chat_completions), or /tokenize would be the unbounded way in.
    const Admission::Places place = context.admission.reserve(
        client_id(context.salt_by_api_key, request.get_header_value("Authorization"), request.remote_addr), 1);
    // The prompt a chat request with the same messages and tools would run.
    ChatRequest chat;
    chat.messages = parse_messages(body, context.limits.max_chat_messages);
    chat.tools = parse_tool_request(fields);
    if (chat.tools) chat.template_tools = chat.tools->tools;
    restore_declared_order(request.body, chat);
    prepare_tool_calling(chat, context.model);
    tokens = render_chat_prompt(chat.messages, body, context.model, context.limits.max_rendered_prompt_bytes,
                                chat.template_tools);
  } else {
    auto prompt = fields.string("prompt");
    if (!prompt) invalid("prompt", "'prompt' (a string) or 'messages' is required");
    const bool add_special = fields.boolean("add_special_tokens").value_or(true);
    tokens = context.model.tokenize(*prompt, {.add_special = add_special, .parse_special = true});
  }
  send_json(response, {{"tokens", tokens},
                       {"count", tokens.size()},
                       {"max_model_len", context.limits.max_model_len}});
}

void handle_detokenize(ServerContext& context, const httplib::Request& request, httplib::Response& response) {
  const nlohmann::json body = parse_request_body(request, JsonEndpoint::Detokenize, response);
  check_model(context, body);
  const RequestFields fields(body);
  auto ids = fields.integers("tokens", 0, context.limits.vocab_size - 1, 1u << 20);
  if (!ids) invalid("tokens", "'tokens' (a list of token ids) is required");
  std::vector<int32_t> tokens(ids->begin(), ids->end());
  send_json(response, {{"prompt", context.model.detokenize(tokens)}});
}

}  // namespace lumen::server
