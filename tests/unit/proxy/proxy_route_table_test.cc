// Walks the proxy's route table: with API keys set, every route not marked public refuses a
// request without a key before its handler runs (no instance is ever called).
#include "proxy/proxy_route_table.h"

#include <gtest/gtest.h>

#include <string>

#include "unit/http/route_walk.h"

namespace lumen::proxy {
namespace {

ProxyContext context_with(bool metrics_public) {
  ProxyOptions options;
  options.metrics_public = metrics_public;
  // Nothing listens there: a handler that ran would fail, not reach anything.
  return ProxyContext(options, {{"127.0.0.1", 9}}, {{"127.0.0.1", 9}});
}

TEST(ProxyRouteTable, EveryRouteNotMarkedPublicRefusesAMissingKey) {
  for (const bool metrics_public : {false, true}) {
    ProxyContext context = context_with(metrics_public);
    int keyed = 0;
    for (const http::testing::WalkedRoute& route : http::testing::walk_without_key(proxy_route_table(context))) {
      if (route.access == http::Access::Public) {
        EXPECT_EQ(route.status, 0) << route.path;
      } else {
        EXPECT_EQ(route.status, 401) << route.path;
        keyed += 1;
      }
    }
    EXPECT_EQ(keyed, metrics_public ? 3 : 4);  // the two generation routes, /v1/models, /metrics
  }
}

TEST(ProxyRouteTable, OnlyHealthAndMetricsWhenAskedArePublic) {
  ProxyContext context = context_with(false);
  const http::RouteTable table = proxy_route_table(context);
  for (const http::Route& route : table.routes()) {
    EXPECT_EQ(route.access == http::Access::Public, route.path == "/health") << route.path;
  }
}

}  // namespace
}  // namespace lumen::proxy
