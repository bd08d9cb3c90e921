// The proxy's route names: the fixed label set of its request counter.
#include "proxy/route_label.h"

#include <gtest/gtest.h>

namespace lumen::proxy {
namespace {

TEST(RouteLabel, RoutesAreExactPaths) {
  EXPECT_EQ(route_of("/v1/completions"), Route::Completions);
  EXPECT_EQ(route_of("/v1/chat/completions"), Route::ChatCompletions);
  EXPECT_EQ(route_of("/v1/models"), Route::Models);
  EXPECT_EQ(route_of("/health"), Route::Health);
  EXPECT_EQ(route_of("/metrics"), Route::Metrics);
  EXPECT_EQ(route_of("/v1/completions/"), Route::Other);
  EXPECT_EQ(route_of("/V1/completions"), Route::Other);
  EXPECT_EQ(route_label(Route::Other), "other");
  EXPECT_EQ(route_path(Route::Other), "");
}

}  // namespace
}  // namespace lumen::proxy
