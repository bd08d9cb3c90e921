#include "proxy/proxy_route_table.h"

#include <string>
#include <vector>

#include "proxy/proxy_routes.h"
#include "proxy/route_label.h"

namespace lumen::proxy {

http::RouteTable proxy_route_table(ProxyContext& context) {
  using http::Access;
  const auto generation = [&context](Route route) {
    return [&context, route](const httplib::Request& request, httplib::Response& response) {
      serve_generation(context, route, request, response);
    };
  };
  const auto path = [](Route route) { return std::string(route_path(route)); };
  const std::vector<std::string> get = {"GET"};
  const std::vector<std::string> post = {"POST"};
  return http::RouteTable({
      {path(Route::Completions), post, Access::ApiKey, generation(Route::Completions)},
      {path(Route::ChatCompletions), post, Access::ApiKey, generation(Route::ChatCompletions)},
      {path(Route::Models), get, Access::ApiKey,
       [&context](const httplib::Request& request, httplib::Response& response) {
         serve_models(context, request, response);
       }},
      {path(Route::Health), get, Access::Public,
       [&context](const httplib::Request&, httplib::Response& response) { serve_health(context, response); }},
      {path(Route::Metrics), get, context.options.metrics_public ? Access::Public : Access::ApiKey,
       [&context](const httplib::Request&, httplib::Response& response) { serve_metrics(context, response); }},
  });
}

}  // namespace lumen::proxy
