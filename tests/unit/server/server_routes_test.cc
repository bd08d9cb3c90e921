// Walks `lumen serve`'s route table: with API keys set, every route the table does not mark
// public refuses a request without a key before its handler could run, and a route added
// without a stated access is refused when the table is built.
#include "server/server_routes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "http/request_gate.h"

namespace lumen::server {
namespace {

// No engine: the handlers are never called, only listed.
http::Handler unreachable(RouteFunction) {
  return [](const httplib::Request&, httplib::Response&) { FAIL() << "a handler ran"; };
}

// A request for a route's path (a prefix route's '*' made concrete) and method, with no key.
httplib::Request request_for(const http::Route& route, const std::string& method) {
  httplib::Request request;
  request.method = method;
  request.path = route.path.back() == '*' ? route.path.substr(0, route.path.size() - 1) + "m" : route.path;
  request.headers.emplace("Host", "localhost");
  if (method == "POST") {
    request.headers.emplace("Content-Length", "2");
    request.headers.emplace("Content-Type", "application/json");
  }
  return request;
}

// For each of the table's routes and methods: the gate's status without a key (0: let through).
std::vector<std::pair<const http::Route*, int>> walk_without_key(const http::RouteTable& table) {
  http::GateRules rules;
  rules.api_keys = {"secret"};
  const http::RequestGate gate(table, rules);
  std::vector<std::pair<const http::Route*, int>> seen;
  for (const http::Route& route : table.routes()) {
    for (const std::string& method : route.methods) {
      httplib::Response response;
      const bool handled =
          gate.check(request_for(route, method), response) == httplib::Server::HandlerResponse::Handled;
      seen.emplace_back(&route, handled ? response.status : 0);
    }
  }
  return seen;
}

TEST(ServerRoutes, EveryRouteNotMarkedPublicRefusesAMissingKey) {
  for (const bool metrics_public : {false, true}) {
    const http::RouteTable table = server_route_table({metrics_public, true}, unreachable);
    int keyed = 0;
    for (const auto& [route, status] : walk_without_key(table)) {
      if (route->access == http::Access::Public) {
        EXPECT_EQ(status, 0) << route->path;
      } else {
        EXPECT_EQ(status, 401) << route->path;
        keyed += 1;
      }
    }
    EXPECT_EQ(keyed, metrics_public ? 6 : 7);  // six API routes, and /metrics unless public
  }
}

TEST(ServerRoutes, OnlyHealthMetricsWhenAskedAndThePageArePublic) {
  const http::RouteTable table = server_route_table({false, true}, unreachable);
  for (const http::Route& route : table.routes()) {
    const bool page = route.path == "/" || route.path.find('.') != std::string::npos;
    EXPECT_EQ(route.access == http::Access::Public, route.path == "/health" || page) << route.path;
  }
  ASSERT_NE(table.find("/v1/models/some-model"), nullptr);
  EXPECT_EQ(table.find("/v1/models/"), nullptr);
  EXPECT_EQ(table.find("/nope"), nullptr);
  EXPECT_EQ(server_route_table({false, false}, unreachable).find("/"), nullptr);  // --no-web-ui
}

TEST(ServerRoutes, ARouteAddedWithoutAccessIsCaught) {
  const http::RouteTable table = server_route_table({false, true}, unreachable);
  std::vector<http::Route> copy = table.routes();
  http::Route hurried;
  hurried.path = "/v1/embeddings";
  hurried.methods = {"POST"};
  hurried.handler = unreachable(nullptr);
  copy.push_back(hurried);
  EXPECT_THROW(http::RouteTable{copy}, std::logic_error);
  // Once it states its access, the walk covers it like every other route.
  copy.back().access = http::Access::ApiKey;
  const http::RouteTable fixed(copy);
  const auto walked = walk_without_key(fixed);
  EXPECT_TRUE(std::any_of(walked.begin(), walked.end(),
                          [](const auto& seen) { return seen.first->path == "/v1/embeddings" && seen.second == 401; }));
}

}  // namespace
}  // namespace lumen::server
