#include "server/server_routes.h"

#include <string>
#include <vector>

#include "server/api_error.h"
#include "server/routes.h"
#include "server/web_assets.h"

namespace lumen::server {

namespace {

// GET of one of the chat page's files. The policy headers make the browser run only the page's
// own files (the Content-Security-Policy) and take each file as the type it is served with.
void serve_web_asset(ServerContext&, const httplib::Request& request, httplib::Response& response) {
  const std::optional<WebAsset> asset = find_web_asset(request.path);
  if (!asset) throw ApiError(404, "no such route", "", "not_found");
  response.set_header("Content-Security-Policy", std::string(kWebContentSecurityPolicy));
  response.set_header("X-Content-Type-Options", "nosniff");
  response.set_header("Referrer-Policy", "no-referrer");
  response.set_header("Cache-Control", "no-cache");  // a new binary's page shows at once
  response.set_content(std::string(asset->body), std::string(asset->content_type));
}

}  // namespace

http::RouteTable server_route_table(const RouteChoices& choices, const BindRoute& bind_route) {
  using http::Access;
  const std::vector<std::string> get = {"GET"};
  const std::vector<std::string> post = {"POST"};
  std::vector<http::Route> routes = {
      {"/health", get, Access::Public, bind_route(handle_health)},
      {"/metrics", get, choices.metrics_public ? Access::Public : Access::ApiKey, bind_route(handle_metrics)},
      {"/v1/models", get, Access::ApiKey, bind_route(handle_models)},
      {"/v1/models/*", get, Access::ApiKey, bind_route(handle_models)},
      {"/v1/completions", post, Access::ApiKey, bind_route(handle_completions)},
      {"/v1/chat/completions", post, Access::ApiKey, bind_route(handle_chat_completions)},
      {"/v1/embeddings", post, Access::ApiKey, bind_route(handle_embeddings)},
      {"/tokenize", post, Access::ApiKey, bind_route(handle_tokenize)},
      {"/detokenize", post, Access::ApiKey, bind_route(handle_detokenize)},
  };
  if (choices.web_ui) {
    // Static files holding no secrets: served without the key (the page asks the user for it).
    for (const EmbeddedFile& file : embedded_web_files()) {
      routes.push_back({web_path(file.name), get, Access::Public, bind_route(serve_web_asset)});
    }
  }
  return http::RouteTable(std::move(routes));
}

}  // namespace lumen::server
