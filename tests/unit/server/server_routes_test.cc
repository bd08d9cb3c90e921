// Walks `lumen serve`'s route table: with API keys set, every route the table does not mark
// public refuses a request without a key before its handler could run, and a route added
// without a stated access is refused when the table is built.
#include "server/server_routes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "unit/http/route_walk.h"

namespace lumen::server {
namespace {

// No engine: the handlers are never called, only listed.
http::Handler unreachable(RouteFunction) {
  return [](const httplib::Request&, httplib::Response&) { FAIL() << "a handler ran"; };
}

TEST(ServerRoutes, EveryRouteNotMarkedPublicRefusesAMissingKey) {
  for (const bool metrics_public : {false, true}) {
    const http::RouteTable table = server_route_table({metrics_public, true}, unreachable);
    int keyed = 0;
    for (const http::testing::WalkedRoute& route : http::testing::walk_without_key(table)) {
      if (route.access == http::Access::Public) {
        EXPECT_EQ(route.status, 0) << route.path;
      } else {
        EXPECT_EQ(route.status, 401) << route.path;
        keyed += 1;
      }
    }
    EXPECT_EQ(keyed, metrics_public ? 7 : 8);  // seven API routes, and /metrics unless public
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
  hurried.path = "/v1/rerank";
  hurried.methods = {"POST"};
  hurried.handler = unreachable(nullptr);
  copy.push_back(hurried);
  EXPECT_THROW(http::RouteTable{copy}, std::logic_error);
  // Once it states its access, the walk covers it like every other route.
  copy.back().access = http::Access::ApiKey;
  const http::RouteTable fixed(copy);
  const auto walked = http::testing::walk_without_key(fixed);
  EXPECT_TRUE(std::any_of(walked.begin(), walked.end(),
                          [](const auto& route) { return route.path == "/v1/embeddings" && route.status == 401; }));
}

}  // namespace
}  // namespace lumen::server
