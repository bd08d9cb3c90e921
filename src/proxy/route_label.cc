#include "proxy/route_label.h"

#include <array>
#include <utility>

namespace lumen::proxy {

namespace {

constexpr std::array<std::pair<Route, std::string_view>, 5> kPaths = {{
    {Route::Completions, "/v1/completions"},
    {Route::ChatCompletions, "/v1/chat/completions"},
    {Route::Models, "/v1/models"},
    {Route::Health, "/health"},
    {Route::Metrics, "/metrics"},
}};

}  // namespace

Route route_of(std::string_view path) {
  for (const auto& [route, route_path] : kPaths) {
    if (route_path == path) return route;
  }
  return Route::Other;
}

std::string_view route_path(Route route) {
  for (const auto& [known, path] : kPaths) {
    if (known == route) return path;
  }
  return "";
}

std::string_view route_label(Route route) { return route == Route::Other ? "other" : route_path(route); }

}  // namespace lumen::proxy
