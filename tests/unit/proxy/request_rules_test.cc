// What is refused before a body is read: routes and methods, body framing, Host names.
#include "proxy/request_rules.h"

#include <gtest/gtest.h>

namespace lumen::proxy {
namespace {

httplib::Request post(std::initializer_list<std::pair<const char*, const char*>> headers) {
  httplib::Request request;
  request.method = "POST";
  for (const auto& [name, value] : headers) request.headers.emplace(name, value);
  return request;
}

TEST(RequestRules, RoutesAreExactPaths) {
  EXPECT_EQ(route_of("/v1/completions"), Route::Completions);
  EXPECT_EQ(route_of("/v1/chat/completions"), Route::ChatCompletions);
  EXPECT_EQ(route_of("/v1/models"), Route::Models);
  EXPECT_EQ(route_of("/health"), Route::Health);
  EXPECT_EQ(route_of("/metrics"), Route::Metrics);
  EXPECT_EQ(route_of("/v1/completions/"), Route::Other);
  EXPECT_EQ(route_of("/V1/completions"), Route::Other);
  EXPECT_EQ(route_label(Route::Other), "other");
  EXPECT_EQ(route_method(Route::ChatCompletions), "POST");
  EXPECT_EQ(route_method(Route::Health), "GET");
}

TEST(RequestRules, BodiesNeedOneSmallPlainContentLength) {
  EXPECT_FALSE(body_refusal(post({{"Content-Length", "100"}}), 100).has_value());
  EXPECT_EQ(body_refusal(post({{"Content-Length", "101"}}), 100)->status, 413);
  EXPECT_EQ(body_refusal(post({}), 100)->status, 411);
  EXPECT_EQ(body_refusal(post({{"Transfer-Encoding", "chunked"}}), 100)->status, 411);
  EXPECT_EQ(body_refusal(post({{"Transfer-Encoding", "gzip, chunked"}}), 100)->status, 501);
  EXPECT_EQ(body_refusal(post({{"Content-Length", "10"}, {"Content-Encoding", "gzip"}}), 100)->status, 415);
  EXPECT_EQ(body_refusal(post({{"Content-Length", "1e3"}}), 100)->status, 400);
  EXPECT_EQ(body_refusal(post({{"Content-Length", "99999999999999999999999"}}), 100)->status, 400);
  EXPECT_EQ(body_refusal(post({{"Content-Length", "5"}, {"Content-Length", "5"}}), 100)->status, 400);
  httplib::Request get;
  get.method = "GET";
  EXPECT_FALSE(body_refusal(get, 100).has_value());
}

TEST(RequestRules, LoopbackBindingAnswersLoopbackNamesOnly) {
  const HostRule rule({}, "127.0.0.1");
  EXPECT_TRUE(rule.allows("127.0.0.1:8080"));
  EXPECT_TRUE(rule.allows("localhost"));
  EXPECT_TRUE(rule.allows("[::1]:8080"));
  EXPECT_TRUE(rule.allows(""));
  EXPECT_FALSE(rule.allows("attacker.example:8080"));
  EXPECT_FALSE(rule.allows("127.attacker.example"));
}

TEST(RequestRules, ListedHostsAndOtherBindings) {
  EXPECT_TRUE(HostRule({}, "0.0.0.0").allows("anything.example"));
  const HostRule listed({"Proxy.internal"}, "127.0.0.1");
  EXPECT_TRUE(listed.allows("proxy.internal:80"));
  EXPECT_FALSE(listed.allows("localhost"));
  EXPECT_FALSE(listed.allows(""));
  EXPECT_TRUE(HostRule({"*"}, "127.0.0.1").allows("x.example"));
}

}  // namespace
}  // namespace lumen::proxy
