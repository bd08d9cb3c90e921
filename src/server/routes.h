#pragma once
// The HTTP routes. Each reads the request and fills the response, throwing ApiError (or
// lumen::Error, a 400) for anything wrong with the request; server.cc turns those into
// OpenAI-shaped error bodies.
#include <httplib.h>

#include "server/request_field_names.h"
#include "server/server_context.h"

namespace lumen::server {

// POST /v1/completions and /v1/chat/completions, whole or streamed (SSE).
void handle_completions(ServerContext& context, const httplib::Request& request, httplib::Response& response);
void handle_chat_completions(ServerContext& context, const httplib::Request& request, httplib::Response& response);

// POST /v1/embeddings (routes_embeddings.cc).
void handle_embeddings(ServerContext& context, const httplib::Request& request, httplib::Response& response);

// GET /v1/models, /health, /metrics; POST /tokenize, /detokenize.
void handle_models(ServerContext& context, const httplib::Request& request, httplib::Response& response);
void handle_health(ServerContext& context, const httplib::Request& request, httplib::Response& response);
void handle_metrics(ServerContext& context, const httplib::Request& request, httplib::Response& response);
void handle_tokenize(ServerContext& context, const httplib::Request& request, httplib::Response& response);
void handle_detokenize(ServerContext& context, const httplib::Request& request, httplib::Response& response);

// The body as JSON (parse_json_body), its field names checked (check_field_names): the fields
// accepted but not acted on are named in the X-Lumen-Ignored-Fields response header.
nlohmann::json parse_request_body(const httplib::Request& request, JsonEndpoint endpoint, httplib::Response& response);

// A 400 unless the body's "model" (when given) names the served model.
void check_model(const ServerContext& context, const nlohmann::json& body);

}  // namespace lumen::server
