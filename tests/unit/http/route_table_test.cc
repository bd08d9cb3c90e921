// The route table refuses a route that does not say who may call it, and matches paths exactly
// (or by a trailing '*').
#include "http/route_table.h"

#include <gtest/gtest.h>

#include <regex>
#include <stdexcept>

namespace lumen::http {
namespace {

Handler noop() {
  return [](const httplib::Request&, httplib::Response&) {};
}

TEST(RouteTable, ARouteWithoutStatedAccessCannotBeRegistered) {
  Route forgotten;
  forgotten.path = "/v1/embeddings";
  forgotten.methods = {"POST"};
  forgotten.handler = noop();
  EXPECT_EQ(forgotten.access, Access::Unstated);  // what a route gets by default
  ASSERT_TRUE(route_defect(forgotten).has_value());
  EXPECT_NE(route_defect(forgotten)->find("access"), std::string::npos);
  EXPECT_THROW(RouteTable({forgotten}), std::logic_error);
  forgotten.access = Access::ApiKey;
  EXPECT_NO_THROW(RouteTable({forgotten}));
}

TEST(RouteTable, OtherDefectsAreRefusedToo) {
  EXPECT_TRUE(route_defect({"/x", {}, Access::Public, noop()}).has_value());
  EXPECT_TRUE(route_defect({"/x", {"GET"}, Access::Public, nullptr}).has_value());
  EXPECT_TRUE(route_defect({"x", {"GET"}, Access::Public, noop()}).has_value());
  EXPECT_TRUE(route_defect({"/a*/b", {"GET"}, Access::Public, noop()}).has_value());
  EXPECT_TRUE(route_defect({"/x", {"PATCH"}, Access::Public, noop()}).has_value());
  EXPECT_THROW(RouteTable({{"/x", {"GET"}, Access::Public, noop()}, {"/x", {"POST"}, Access::ApiKey, noop()}}),
               std::logic_error);
}

TEST(RouteTable, PathsMatchExactlyOrByPrefix) {
  EXPECT_TRUE(path_matches("/v1/models", "/v1/models"));
  EXPECT_FALSE(path_matches("/v1/models", "/v1/models/"));
  EXPECT_FALSE(path_matches("/v1/models", "/V1/models"));
  EXPECT_TRUE(path_matches("/v1/models/*", "/v1/models/m"));
  EXPECT_FALSE(path_matches("/v1/models/*", "/v1/models/"));
  EXPECT_FALSE(path_matches("/v1/models/*", "/v1/models"));
  const RouteTable table(
      {{"/health", {"GET"}, Access::Public, noop()}, {"/v1/models/*", {"GET"}, Access::ApiKey, noop()}});
  ASSERT_NE(table.find("/v1/models/abc"), nullptr);
  EXPECT_EQ(table.find("/v1/models/abc")->path, "/v1/models/*");
  EXPECT_EQ(table.find("/nope"), nullptr);
}

TEST(RouteTable, HttplibPatternsMatchWhatTheTableMatches) {
  std::smatch match;
  const std::string exact = "/app.js", other = "/appxjs", model = "/v1/models/some.model";
  EXPECT_TRUE(std::regex_match(exact, std::regex(httplib_pattern("/app.js"))));
  EXPECT_FALSE(std::regex_match(other, std::regex(httplib_pattern("/app.js"))));
  ASSERT_TRUE(std::regex_match(model, match, std::regex(httplib_pattern("/v1/models/*"))));
  EXPECT_EQ(match[1].str(), "some.model");  // what the handler reads as request.matches[1]
}

}  // namespace
}  // namespace lumen::http
