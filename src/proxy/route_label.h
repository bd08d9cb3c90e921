#pragma once
// The proxy's routes by name, for what needs a fixed set of them: the label of
// lumen_proxy_requests_total (a client's path never becomes a label, so it cannot grow the
// metrics) and the canonical path a generation is forwarded to. Their methods, access and
// handlers are the route table's (proxy_server.cc).
#include <cstddef>
#include <string_view>

namespace lumen::proxy {

enum class Route { Completions, ChatCompletions, Models, Health, Metrics, Other };
inline constexpr size_t kRouteCount = 6;

// The route of an exact path; Other for any path the proxy does not serve.
Route route_of(std::string_view path);
std::string_view route_path(Route route);   // "/v1/completions"...; "" for Other
std::string_view route_label(Route route);  // the metrics label: the path, or "other"

}  // namespace lumen::proxy
