// The proxy's client-facing rules over real sockets: API keys, public metrics, CORS and the
// request read timeout, as `lumen serve` applies them (http/http_policy.h). The attack each test makes is the one a
// review found open: a proxy started with --api-key answered chat and /v1/models with no key or a
// wrong one, and /metrics to anyone.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "lumen/error.h"
#include "unit/proxy/running_proxy.h"

namespace lumen::proxy {
namespace {

using namespace testing;

const std::vector<std::string> kKeys = {"tenant-a", "tenant-b"};

// Every route a key guards, as (method, path), with a body for the POSTs.
struct Call {
  const char* method;
  const char* path;
};
constexpr Call kGuarded[] = {
    {"POST", "/v1/completions"}, {"POST", "/v1/chat/completions"}, {"GET", "/v1/models"}, {"GET", "/metrics"}};

httplib::Result send(const RunningProxy& proxy, const Call& call, const httplib::Headers& headers) {
  if (std::string(call.method) == "POST") return proxy.post(call.path, kBody, headers);
  return proxy.client()->Get(call.path, headers);
}

TEST(ProxyAuth, WithKeysEveryRouteButHealthRefusesAMissingOrWrongKey) {
  FakeInstance prefill(prefill_ok);
  FakeInstance decode(decode_json);
  RunningProxy proxy({prefill.url()}, {decode.url()}, [](ProxyOptions& options) { options.api_keys = kKeys; });

  const std::vector<httplib::Headers> refused = {
      {},
      {{"Authorization", "Bearer wrong"}},
      {{"Authorization", "Bearer tenant-"}},
      {{"Authorization", "Bearer tenant-ab"}},
      {{"Authorization", "Basic tenant-a"}},
      {{"Authorization", "tenant-a"}},
      {{"Authorization", "Bearer"}},
  };
  int refusals = 0;
  for (const Call& call : kGuarded) {
    for (const httplib::Headers& headers : refused) {
      const httplib::Result result = send(proxy, call, headers);
      expect_openai_error(result, 401, "invalid_api_key");
      EXPECT_EQ(nlohmann::json::parse(result->body)["error"]["type"], "authentication_error");
      refusals += 1;
    }
  }
  // Nothing of a refused request reached an instance.
  EXPECT_TRUE(prefill.received().empty());
  EXPECT_TRUE(decode.received().empty());

  // Either tenant's key opens every route; the scheme's case does not matter.
  for (const Call& call : kGuarded) {
    for (const char* authorization : {"Bearer tenant-a", "bearer tenant-b"}) {
      const httplib::Result result = send(proxy, call, {{"Authorization", authorization}});
      ASSERT_TRUE(result) << call.path;
      EXPECT_EQ(result->status, 200) << call.path << " " << result->body;
    }
  }
  EXPECT_EQ(decode.received().size(), 4u);
  // The client's own header is what the instances see (they may hold the same keys).
  EXPECT_EQ(header(decode.received().back(), "Authorization"), "bearer tenant-b");

  const httplib::Result health = proxy.client()->Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);

  const httplib::Result metrics = proxy.client()->Get("/metrics", {{"Authorization", "Bearer tenant-a"}});
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metric(metrics->body, "lumen_proxy_unauthorized_total"), refusals);
}

TEST(ProxyAuth, MetricsPublicOpensOnlyTheMetrics) {
  FakeInstance prefill(prefill_ok);
  FakeInstance decode(decode_json);
  RunningProxy proxy({prefill.url()}, {decode.url()}, [](ProxyOptions& options) {
    options.api_keys = kKeys;
    options.metrics_public = true;
  });
  const httplib::Result metrics = proxy.client()->Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_NE(metrics->body.find("lumen_proxy_requests_total"), std::string::npos);
  expect_openai_error(proxy.client()->Get("/v1/models"), 401, "invalid_api_key");
  expect_openai_error(proxy.post("/v1/completions", kBody), 401, "invalid_api_key");
  EXPECT_TRUE(decode.received().empty());
}

TEST(ProxyAuth, WithoutKeysMetricsAreOpenAsInServe) {
  FakeInstance prefill(prefill_ok);
  FakeInstance decode(decode_json);
  RunningProxy proxy({prefill.url()}, {decode.url()});
  const httplib::Result metrics = proxy.client()->Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
}

TEST(ProxyAuth, CorsAnswersOnlyTheListedOriginsAndPreflightsWithoutTheKey) {
  FakeInstance prefill(prefill_ok);
  FakeInstance decode(decode_json);
  RunningProxy proxy({prefill.url()}, {decode.url()}, [](ProxyOptions& options) {
    options.api_keys = kKeys;
    options.cors_origins = {"http://localhost:3000"};
  });
  const httplib::Headers preflight = {{"Origin", "http://localhost:3000"},
                                      {"Access-Control-Request-Method", "POST"},
                                      {"Access-Control-Request-Headers", "authorization,content-type"}};
  const httplib::Result pre = proxy.client()->Options("/v1/chat/completions", preflight);
  ASSERT_TRUE(pre);
  EXPECT_EQ(pre->status, 204);
  EXPECT_EQ(pre->get_header_value("Access-Control-Allow-Origin"), "http://localhost:3000");
  EXPECT_EQ(pre->get_header_value("Access-Control-Allow-Methods"), "POST, OPTIONS");
  EXPECT_EQ(pre->get_header_value("Access-Control-Allow-Headers"), "Authorization, Content-Type");
  EXPECT_EQ(pre->get_header_value("Vary"), "Origin");
  expect_openai_error(proxy.client()->Options("/v1/embeddings", preflight), 404, "not_found");

  // An allowed origin's keyed call is readable by its page; another origin's is not.
  const httplib::Result allowed =
      proxy.client()->Get("/v1/models", {{"Origin", "http://localhost:3000"}, {"Authorization", "Bearer tenant-a"}});
  ASSERT_TRUE(allowed);
  EXPECT_EQ(allowed->status, 200);
  EXPECT_EQ(allowed->get_header_value("Access-Control-Allow-Origin"), "http://localhost:3000");
  const httplib::Result other =
      proxy.client()->Get("/v1/models", {{"Origin", "http://evil.example"}, {"Authorization", "Bearer tenant-a"}});
  ASSERT_TRUE(other);
  EXPECT_FALSE(other->has_header("Access-Control-Allow-Origin"));
  const httplib::Result other_pre =
      proxy.client()->Options("/v1/chat/completions", {{"Origin", "http://evil.example"}});
  ASSERT_TRUE(other_pre);
  EXPECT_FALSE(other_pre->has_header("Access-Control-Allow-Origin"));
  // The preflight opens nothing by itself: the real request still needs the key.
  expect_openai_error(proxy.post("/v1/chat/completions", kBody, {{"Origin", "http://localhost:3000"}}), 401,
                      "invalid_api_key");
  EXPECT_TRUE(decode.received().empty());
}

TEST(ProxyAuth, WithoutCorsOriginsNoCorsHeadersAndNoPreflight) {
  FakeInstance prefill(prefill_ok);
  FakeInstance decode(decode_json);
  RunningProxy proxy({prefill.url()}, {decode.url()});
  const httplib::Result models = proxy.client()->Get("/v1/models", {{"Origin", "http://localhost:3000"}});
  ASSERT_TRUE(models);
  EXPECT_FALSE(models->has_header("Access-Control-Allow-Origin"));
  const httplib::Result pre = proxy.client()->Options("/v1/models", {{"Origin", "http://localhost:3000"}});
  expect_openai_error(pre, 405, "method_not_allowed");
  EXPECT_FALSE(pre->has_header("Access-Control-Allow-Origin"));
}

TEST(ProxyAuth, ARequestSlowerThanTheReadTimeoutIs408) {
  FakeInstance prefill(prefill_ok);
  FakeInstance decode(decode_json);
  RunningProxy proxy({prefill.url()}, {decode.url()}, [](ProxyOptions& options) {
    options.request_read_timeout_s = 0.3;  // --request-read-timeout; 30 s by default
  });
  const int socket = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(socket, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(proxy.port()));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(socket, reinterpret_cast<const sockaddr*>(&address), sizeof(address)), 0);
  // A body that never comes whole.
  const std::string head = "POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Length: 10\r\n\r\n{";
  ASSERT_EQ(::send(socket, head.data(), head.size(), MSG_NOSIGNAL), static_cast<ssize_t>(head.size()));
  const auto started = std::chrono::steady_clock::now();
  char answer[256] = {};
  const ssize_t got = ::recv(socket, answer, sizeof(answer) - 1, 0);
  const auto waited = std::chrono::steady_clock::now() - started;
  ::close(socket);
  ASSERT_GT(got, 0);
  EXPECT_EQ(std::string(answer).rfind("HTTP/1.1 408", 0), 0u) << answer;
  EXPECT_LT(waited, std::chrono::seconds(3));
  EXPECT_TRUE(decode.received().empty());
}

TEST(ProxyAuth, RefusesAnEmptyKey) {
  ProxyOptions options;
  options.prefill = {"http://127.0.0.1:1"};
  options.decode = {"http://127.0.0.1:2"};
  options.api_keys = {""};
  EXPECT_THROW(ProxyServer server(options), Error);
}

}  // namespace
}  // namespace lumen::proxy
