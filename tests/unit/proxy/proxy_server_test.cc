// The proxy end to end over real sockets, its routing: fake prefill and decode instances
// (cpp-httplib servers on 127.0.0.1) record what reaches them, the proxy runs on a free port, and
// an httplib client plays the user.
#include "proxy/proxy_server.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "lumen/error.h"
#include "unit/proxy/running_proxy.h"

namespace lumen::proxy {
namespace {

using testing::FakeInstance;
using testing::Received;
using testing::RefusingAddress;
using namespace testing;
using namespace std::chrono_literals;

TEST(ProxyServer, PassesTheBodyThroughPrefillThenDecodeWithTheTransferHeader) {
  FakeInstance prefill(prefill_ok);
  FakeInstance decode(decode_json);
  RunningProxy proxy({prefill.url()}, {decode.url()});

  const httplib::Result result = proxy.post("/v1/chat/completions", kBody, {{"Authorization", "Bearer sk-1"}});
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 200);
  EXPECT_EQ(result->body, kDecodeAnswer);
  EXPECT_EQ(result->get_header_value("Content-Type"), "application/json");
  EXPECT_FALSE(result->has_header("X-Upstream-Only"));  // of an instance's headers only Content-Type

  ASSERT_EQ(prefill.received().size(), 1u);
  ASSERT_EQ(decode.received().size(), 1u);
  const Received at_prefill = prefill.received()[0];
  const Received at_decode = decode.received()[0];
  EXPECT_EQ(at_prefill.path, "/v1/chat/completions");
  EXPECT_EQ(at_decode.path, "/v1/chat/completions");
  EXPECT_EQ(at_prefill.body, kBody);
  EXPECT_EQ(at_decode.body, kBody);
  EXPECT_EQ(header(at_prefill, "Content-Type"), "application/json");
  EXPECT_EQ(header(at_prefill, "Authorization"), "Bearer sk-1");
  EXPECT_EQ(header(at_decode, "Authorization"), "Bearer sk-1");
  EXPECT_EQ(header(at_prefill, "X-Lumen-KV-Transfer"), "<none>");
  EXPECT_EQ(header(at_decode, "X-Lumen-KV-Transfer"), kTransfer);
  // One id for the whole request, on both hops and back to the client.
  EXPECT_EQ(header(at_prefill, "X-Request-Id"), header(at_decode, "X-Request-Id"));
  EXPECT_EQ(result->get_header_value("X-Request-Id"), header(at_decode, "X-Request-Id"));
  EXPECT_EQ(header(at_decode, "X-Request-Id").rfind("proxy-", 0), 0u);

  const std::string metrics = proxy.metrics();
  EXPECT_EQ(metric(metrics, "lumen_proxy_requests_total{route=\"/v1/chat/completions\"}"), 1);
  EXPECT_EQ(metric(metrics, "lumen_proxy_prefill_fallbacks_total"), 0);
  EXPECT_EQ(metric(metrics, "lumen_proxy_prefill_seconds_count"), 1);
}

TEST(ProxyServer, NeverForwardsAClientsTransferHeader) {
  FakeInstance prefill(prefill_ok);
  FakeInstance failing_prefill([](const httplib::Request&, httplib::Response& response) { response.status = 500; });
  FakeInstance decode(decode_json);
  const httplib::Headers sneaky = {{"X-Lumen-KV-Transfer", "tcp://attacker#1"}, {"X-Other", "1"}};
  {
    RunningProxy proxy({prefill.url()}, {decode.url()});
    ASSERT_TRUE(proxy.post("/v1/completions", kBody, sneaky));
    const Received at_decode = decode.received().back();
    EXPECT_EQ(at_decode.headers.count("X-Lumen-KV-Transfer"), 1u);
    EXPECT_EQ(header(at_decode, "X-Lumen-KV-Transfer"), kTransfer);  // the prefill's, not the client's
    EXPECT_EQ(header(at_decode, "X-Other"), "<none>");
    EXPECT_EQ(header(prefill.received().back(), "X-Lumen-KV-Transfer"), "<none>");
  }
  {
    // Without a prefill answer the client's header must not slip through either.
    RunningProxy proxy({failing_prefill.url()}, {decode.url()});
    ASSERT_TRUE(proxy.post("/v1/completions", kBody, sneaky));
    EXPECT_EQ(header(decode.received().back(), "X-Lumen-KV-Transfer"), "<none>");
  }
}

TEST(ProxyServer, APrefillThatIsDownOrFailsFallsBackToTheDecodeAlone) {
  RefusingAddress down;
  FakeInstance answers_500([](const httplib::Request&, httplib::Response& response) {
    response.status = 500;
    response.set_header("X-Lumen-KV-Transfer", "tcp://x#8");  // ignored: not a 200
  });
  FakeInstance no_header(
      [](const httplib::Request&, httplib::Response& response) { response.set_content("{}", "application/json"); });
  for (const std::string& prefill_url : {down.url(), answers_500.url(), no_header.url()}) {
    FakeInstance decode(decode_json);
    RunningProxy proxy({prefill_url}, {decode.url()});
    const httplib::Result result = proxy.post("/v1/completions", kBody);
    ASSERT_TRUE(result) << prefill_url;
    EXPECT_EQ(result->status, 200);
    EXPECT_EQ(result->body, kDecodeAnswer);
    ASSERT_EQ(decode.received().size(), 1u);
    EXPECT_EQ(header(decode.received()[0], "X-Lumen-KV-Transfer"), "<none>");
    EXPECT_EQ(decode.received()[0].body, kBody);
    const std::string metrics = proxy.metrics();
    EXPECT_EQ(metric(metrics, "lumen_proxy_prefill_fallbacks_total"), 1);
    EXPECT_EQ(metric(metrics, "lumen_proxy_upstream_failures_total{role=\"prefill\",upstream=\"" + prefill_url + "\"}"),
              1);
  }
}

TEST(ProxyServer, ABadRequestGetsTheDecodesOwnError) {
  FakeInstance prefill([](const httplib::Request&, httplib::Response& response) {
    response.status = 400;
    response.set_content(R"({"error":{"message":"bad prefill"}})", "application/json");
  });
  const std::string decode_error =
      R"({"error":{"message":"max_tokens must be positive","type":"invalid_request_error",)"
      R"("param":"max_tokens","code":null}})";
  FakeInstance decode([&](const httplib::Request&, httplib::Response& response) {
    response.status = 400;
    response.set_content(decode_error, "application/json");
  });
  RunningProxy proxy({prefill.url()}, {decode.url()});
  const httplib::Result result = proxy.post("/v1/completions", R"({"max_tokens":-1})");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 400);
  EXPECT_EQ(result->body, decode_error);
  const std::string metrics = proxy.metrics();
  EXPECT_EQ(metric(metrics, "lumen_proxy_prefill_fallbacks_total"), 1);
  // The client's mistake is no instance's failure.
  EXPECT_EQ(metric(metrics, "lumen_proxy_upstream_failures_total{role=\"prefill\",upstream=\"" + prefill.url() + "\"}"),
            0);
}

TEST(ProxyServer, AConversationsTurnsGoToTheSameInstancesBothSteps) {
  FakeInstance prefill_a(prefill_ok), prefill_b(prefill_ok);
  FakeInstance decode_a(decode_json), decode_b(decode_json);
  RunningProxy proxy({prefill_a.url(), prefill_b.url()}, {decode_a.url(), decode_b.url()});
  for (int turn = 0; turn < 4; ++turn) {
    const httplib::Result result = proxy.post("/v1/chat/completions", kBody, {{"X-Session-Id", "conversation-42"}});
    ASSERT_TRUE(result);
    EXPECT_EQ(result->status, 200);
  }
  // All four turns on one prefill and one decode instance (the other of each got none).
  EXPECT_EQ(prefill_a.received().size() * prefill_b.received().size(), 0u);
  EXPECT_EQ(prefill_a.received().size() + prefill_b.received().size(), 4u);
  EXPECT_EQ(decode_a.received().size() * decode_b.received().size(), 0u);
  // Without a session, requests take turns.
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(proxy.post("/v1/chat/completions", kBody));
  EXPECT_GE(std::min(decode_a.received().size(), decode_b.received().size()), 2u);
}

TEST(ProxyServer, SkipsADecodeThatIsDown) {
  FakeInstance prefill(prefill_ok);
  RefusingAddress down;
  FakeInstance decode(decode_json);
  RunningProxy proxy({prefill.url()}, {down.url(), decode.url()});
  for (int i = 0; i < 2; ++i) {  // the down one comes first once, by turns
    const httplib::Result result = proxy.post("/v1/completions", kBody);
    ASSERT_TRUE(result);
    EXPECT_EQ(result->status, 200);
    EXPECT_EQ(result->body, kDecodeAnswer);
  }
  EXPECT_EQ(decode.received().size(), 2u);
  EXPECT_EQ(header(decode.received()[0], "X-Lumen-KV-Transfer"), kTransfer);
  EXPECT_GE(
      metric(proxy.metrics(), "lumen_proxy_upstream_failures_total{role=\"decode\",upstream=\"" + down.url() + "\"}"),
      1);
}

TEST(ProxyServer, NoDecodeReachableIs503) {
  FakeInstance prefill(prefill_ok);
  RefusingAddress down1;
  RefusingAddress down2;
  RunningProxy proxy({prefill.url()}, {down1.url(), down2.url()});
  expect_openai_error(proxy.post("/v1/chat/completions", kBody), 503, "decode_unavailable");
}

TEST(ProxyServer, ABodyOverTheLimitIs413AndReachesNoInstance) {
  FakeInstance prefill(prefill_ok);
  FakeInstance decode(decode_json);
  RunningProxy proxy({prefill.url()}, {decode.url()}, [](ProxyOptions& options) { options.max_body_bytes = 1024; });
  expect_openai_error(proxy.post("/v1/completions", std::string(2000, 'x')), 413, "payload_too_large");
  ASSERT_TRUE(proxy.post("/v1/completions", std::string(1024, ' ')));  // at the limit is fine
  EXPECT_EQ(prefill.received().size(), 1u);
  EXPECT_EQ(decode.received().size(), 1u);
}

TEST(ProxyServer, HealthFollowsTheDecodes) {
  FakeInstance prefill(prefill_ok);
  FakeInstance decode(decode_json);
  RefusingAddress down;
  {
    RunningProxy proxy({prefill.url()}, {down.url(), decode.url()});
    const httplib::Result healthy = proxy.client()->Get("/health");
    ASSERT_TRUE(healthy);
    EXPECT_EQ(healthy->status, 200);
    EXPECT_EQ(nlohmann::json::parse(healthy->body), nlohmann::json({{"status", "ok"}}));
    decode.health_status = 503;
    expect_openai_error(proxy.client()->Get("/health"), 503, "no_healthy_decode");
  }
  RunningProxy proxy({prefill.url()}, {down.url()});
  expect_openai_error(proxy.client()->Get("/health"), 503, "no_healthy_decode");
}

TEST(ProxyServer, ModelsComeFromADecode) {
  FakeInstance prefill(prefill_ok);
  RefusingAddress down;
  FakeInstance decode(decode_json);
  RunningProxy proxy({prefill.url()}, {down.url(), decode.url()});
  for (int i = 0; i < 2; ++i) {
    const httplib::Result result = proxy.client()->Get("/v1/models");
    ASSERT_TRUE(result);
    EXPECT_EQ(result->status, 200);
    EXPECT_EQ(nlohmann::json::parse(result->body)["data"][0]["id"], "fake-model");
  }
}

TEST(ProxyServer, UnknownPathsAre404AndWrongMethods405) {
  FakeInstance prefill(prefill_ok);
  FakeInstance decode(decode_json);
  RunningProxy proxy({prefill.url()}, {decode.url()});
  expect_openai_error(proxy.client()->Get("/v1/embeddings"), 404, "not_found");
  expect_openai_error(proxy.post("/nowhere", kBody), 404, "not_found");
  const httplib::Result wrong = proxy.client()->Get("/v1/completions");
  expect_openai_error(wrong, 405, "method_not_allowed");
  EXPECT_EQ(wrong->get_header_value("Allow"), "POST");
  expect_openai_error(proxy.post("/health", "{}"), 405, "method_not_allowed");
  EXPECT_TRUE(prefill.received().empty());
  const std::string metrics = proxy.metrics();
  EXPECT_EQ(metric(metrics, "lumen_proxy_requests_total{route=\"other\"}"), 2);
  EXPECT_EQ(metric(metrics, "lumen_proxy_requests_total{route=\"/v1/completions\"}"), 1);
}

TEST(ProxyServer, RefusesHostsThatAreNotLoopbackNames) {
  FakeInstance prefill(prefill_ok);
  FakeInstance decode(decode_json);
  RunningProxy proxy({prefill.url()}, {decode.url()});
  expect_openai_error(proxy.post("/v1/completions", kBody, {{"Host", "rebound.attacker.example"}}), 421,
                      "host_not_allowed");
  EXPECT_TRUE(decode.received().empty());
}

TEST(ProxyServer, ConcurrentRequestsGoToTheLeastBusyDecodes) {
  FakeInstance prefill(prefill_ok);
  std::atomic<int> arrived{0};
  const auto slow = [&](const httplib::Request&, httplib::Response& response) {
    arrived += 1;
    // Held until both requests are in flight (or a second passes), so each stays busy.
    const auto until = std::chrono::steady_clock::now() + 1s;
    while (arrived < 2 && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(5ms);
    response.set_content(kDecodeAnswer, "application/json");
  };
  FakeInstance decode_a(slow);
  FakeInstance decode_b(slow);
  RunningProxy proxy({prefill.url()}, {decode_a.url(), decode_b.url()});
  std::vector<std::thread> clients;
  std::atomic<int> answered{0};
  for (int i = 0; i < 2; ++i) {
    clients.emplace_back([&] {
      const httplib::Result result = proxy.post("/v1/completions", kBody);
      if (result && result->status == 200) answered += 1;
    });
  }
  for (std::thread& client : clients) client.join();
  EXPECT_EQ(answered, 2);
  EXPECT_EQ(decode_a.received().size(), 1u);
  EXPECT_EQ(decode_b.received().size(), 1u);
}

TEST(ProxyServer, RefusesBadInstanceListsAtStartup) {
  const auto refusal = [](std::vector<std::string> prefill, std::vector<std::string> decode) -> std::string {
    ProxyOptions options;
    options.prefill = std::move(prefill);
    options.decode = std::move(decode);
    try {
      ProxyServer server(options);
    } catch (const Error& error) {
      return error.what();
    }
    return "";
  };
  EXPECT_NE(refusal({"http://a:1"}, {}).find("at least one --decode"), std::string::npos);
  EXPECT_NE(refusal({}, {"http://a:1"}).find("at least one --prefill"), std::string::npos);
  EXPECT_NE(refusal({"http://a:1"}, {"https://b:2"}).find("--decode 'https://b:2'"), std::string::npos);
  EXPECT_NE(refusal({"a:1"}, {"http://b:2"}).find("--prefill 'a:1'"), std::string::npos);
}


}  // namespace
}  // namespace lumen::proxy
