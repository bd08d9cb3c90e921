// The proxy end to end over real sockets: fake prefill and decode instances (cpp-httplib servers
// on 127.0.0.1) record what reaches them, the proxy runs on a free port, and an httplib client
// plays the user.
#include "proxy/proxy_server.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <future>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "lumen/error.h"
#include "unit/proxy/fake_instance.h"

namespace lumen::proxy {
namespace {

using testing::FakeInstance;
using testing::Received;
using testing::RefusingAddress;
using namespace std::chrono_literals;

// cpp-httplib writes without MSG_NOSIGNAL: a peer that hung up must not kill the test.
const bool sigpipe_ignored = [] {
  std::signal(SIGPIPE, SIG_IGN);
  return true;
}();

constexpr const char* kBody = R"({"model":"m","prompt":"Hello there","max_tokens":5,"odd":"\u00e9 \\ \" kept"})";
constexpr const char* kTransfer = "tcp://x#7";
constexpr const char* kDecodeAnswer =
    R"({"id":"cmpl-1","object":"text_completion","choices":[{"index":0,"text":"hi"}]})";

void prefill_ok(const httplib::Request&, httplib::Response& response) {
  response.set_header("X-Lumen-KV-Transfer", kTransfer);
  response.set_content(R"({"id":"cmpl-p","choices":[{"index":0,"text":"x"}]})", "application/json");
}

void decode_json(const httplib::Request&, httplib::Response& response) {
  response.set_header("X-Upstream-Only", "must not reach the client");
  response.set_content(kDecodeAnswer, "application/json");
}

std::string header(const Received& received, const std::string& name) {
  const auto found = received.headers.find(name);
  return found == received.headers.end() ? "<none>" : found->second;
}

double metric(const std::string& text, const std::string& series) {
  const std::string prefix = series + " ";
  size_t at = text.find("\n" + prefix);
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + 1 + prefix.size()));
}

class RunningProxy {
 public:
  RunningProxy(std::vector<std::string> prefill, std::vector<std::string> decode,
               const std::function<void(ProxyOptions&)>& adjust = {})
      : server_([&] {
          ProxyOptions options;
          options.port = 0;
          options.prefill = std::move(prefill);
          options.decode = std::move(decode);
          options.http_threads = 16;
          options.shutdown_grace_s = 0.2;
          if (adjust) adjust(options);
          return options;
        }()) {
    port_ = server_.bind();
    thread_ = std::thread([this] { server_.serve(); });
  }
  ~RunningProxy() {
    server_.shutdown();
    thread_.join();
  }
  RunningProxy(const RunningProxy&) = delete;
  RunningProxy& operator=(const RunningProxy&) = delete;

  std::unique_ptr<httplib::Client> client() const {
    auto client = std::make_unique<httplib::Client>("127.0.0.1", port_);
    client->set_read_timeout(5, 0);
    return client;
  }
  httplib::Result post(const std::string& path, const std::string& body, const httplib::Headers& headers = {}) const {
    return client()->Post(path.c_str(), headers, body, "application/json");
  }
  std::string metrics() const {
    const httplib::Result result = client()->Get("/metrics");
    return result ? result->body : "";
  }

 private:
  ProxyServer server_;
  int port_ = 0;
  std::thread thread_;
};

void expect_openai_error(const httplib::Result& result, int status, const std::string& code) {
  ASSERT_TRUE(result) << httplib::to_string(result.error());
  EXPECT_EQ(result->status, status);
  EXPECT_EQ(result->get_header_value("Content-Type"), "application/json");
  const nlohmann::json body = nlohmann::json::parse(result->body);
  ASSERT_TRUE(body.contains("error")) << result->body;
  EXPECT_TRUE(body["error"]["message"].is_string());
  EXPECT_TRUE(body["error"]["type"].is_string());
  EXPECT_TRUE(body["error"]["param"].is_null());
  EXPECT_EQ(body["error"]["code"], code);
}

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

TEST(ProxyServer, StreamsEventsToTheClientBeforeTheDecodeHasFinished) {
  FakeInstance prefill(prefill_ok);
  std::promise<void> first_event_read;
  std::shared_future<void> released = first_event_read.get_future().share();
  std::atomic<bool> released_before_the_end{false};
  FakeInstance decode([&](const httplib::Request&, httplib::Response& response) {
    response.set_chunked_content_provider("text/event-stream", [&](size_t, httplib::DataSink& sink) {
      const std::string first = "data: {\"text\":\"one\"}\n\n";
      sink.write(first.data(), first.size());
      // The rest only once the client has read the first event through the proxy.
      released_before_the_end = released.wait_for(3s) == std::future_status::ready;
      const std::string rest = "data: {\"text\":\"two\"}\n\ndata: [DONE]\n\n";
      sink.write(rest.data(), rest.size());
      sink.done();
      return true;
    });
  });
  RunningProxy proxy({prefill.url()}, {decode.url()});

  auto client = proxy.client();
  httplib::Request request;
  request.method = "POST";
  request.path = "/v1/completions";
  request.headers = {{"Content-Type", "application/json"}};
  request.body = R"({"prompt":"hi","stream":true})";
  std::string streamed;
  bool first = true;
  request.content_receiver = [&](const char* data, size_t size, uint64_t, uint64_t) {
    streamed.append(data, size);
    if (first && streamed.find("\n\n") != std::string::npos) {
      first = false;
      first_event_read.set_value();
    }
    return true;
  };
  const auto started = std::chrono::steady_clock::now();
  const httplib::Result result = client->send(request);
  ASSERT_TRUE(result) << httplib::to_string(result.error());
  EXPECT_EQ(result->status, 200);
  EXPECT_EQ(result->get_header_value("Content-Type"), "text/event-stream");
  EXPECT_TRUE(released_before_the_end);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 2s);
  EXPECT_EQ(streamed, "data: {\"text\":\"one\"}\n\ndata: {\"text\":\"two\"}\n\ndata: [DONE]\n\n");
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

TEST(ProxyServer, AClientHangingUpMidStreamClosesTheDecodeConnection) {
  FakeInstance prefill(prefill_ok);
  std::atomic<bool> decode_saw_close{false};
  std::atomic<int64_t> close_seen_at_ms{0};
  FakeInstance decode([&](const httplib::Request&, httplib::Response& response) {
    response.set_chunked_content_provider("text/event-stream", [&](size_t, httplib::DataSink& sink) {
      // An endless stream, an event every 20 ms, until a write fails (for at most 5 s).
      const auto until = std::chrono::steady_clock::now() + 5s;
      while (std::chrono::steady_clock::now() < until) {
        const std::string event = "data: {\"text\":\"t\"}\n\n";
        if (!sink.write(event.data(), event.size())) {
          close_seen_at_ms =
              std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
                  .count();
          decode_saw_close = true;
          return false;
        }
        std::this_thread::sleep_for(20ms);
      }
      sink.done();
      return true;
    });
  });
  RunningProxy proxy({prefill.url()}, {decode.url()});

  auto client = proxy.client();
  httplib::Request request;
  request.method = "POST";
  request.path = "/v1/completions";
  request.headers = {{"Content-Type", "application/json"}};
  request.body = R"({"prompt":"hi","stream":true})";
  request.content_receiver = [](const char*, size_t, uint64_t, uint64_t) { return false; };  // hang up at once
  const httplib::Result result = client->send(request);
  EXPECT_EQ(result.error(), httplib::Error::Canceled);
  client->stop();
  const int64_t hung_up_at_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count();

  const auto until = std::chrono::steady_clock::now() + 3s;
  while (!decode_saw_close && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(10ms);
  ASSERT_TRUE(decode_saw_close);
  EXPECT_LT(close_seen_at_ms - hung_up_at_ms, 2000);
  // The decode instance is no longer counted in flight.
  const auto settled = std::chrono::steady_clock::now() + 1s;
  std::string metrics;
  do {
    metrics = proxy.metrics();
  } while (metric(metrics,
                  "lumen_proxy_upstream_requests_in_flight{role=\"decode\",upstream=\"" + decode.url() + "\"}") != 0 &&
           std::chrono::steady_clock::now() < settled);
  EXPECT_EQ(
      metric(metrics, "lumen_proxy_upstream_requests_in_flight{role=\"decode\",upstream=\"" + decode.url() + "\"}"), 0);
}

double in_flight(const RunningProxy& proxy, const std::string& role, const std::string& url) {
  return metric(proxy.metrics(),
                "lumen_proxy_upstream_requests_in_flight{role=\"" + role + "\",upstream=\"" + url + "\"}");
}

// Waits up to `limit` for the instance's in-flight gauge to reach zero; returns how long it took.
std::chrono::milliseconds until_idle(const RunningProxy& proxy, const std::string& role, const std::string& url,
                                     std::chrono::milliseconds limit) {
  const auto started = std::chrono::steady_clock::now();
  while (in_flight(proxy, role, url) != 0 && std::chrono::steady_clock::now() - started < limit) {
    std::this_thread::sleep_for(10ms);
  }
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
}

// An instance that takes its time (until released, or 3 s) before answering.
FakeInstance::Answer slow_answer(const std::atomic<bool>& released, FakeInstance::Answer answer) {
  return [&released, answer](const httplib::Request& request, httplib::Response& response) {
    const auto until = std::chrono::steady_clock::now() + 3s;
    while (!released && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(5ms);
    answer(request, response);
  };
}

TEST(ProxyServer, AClientHangingUpBeforeTheAnswerCutsTheExchangeUnderWay) {
  std::atomic<bool> released{false};
  {
    // While the decode instance is still computing (no head yet).
    FakeInstance prefill(prefill_ok);
    FakeInstance decode(slow_answer(released, decode_json));
    RunningProxy proxy({prefill.url()}, {decode.url()});
    auto client = proxy.client();
    client->set_read_timeout(0, 200'000);  // the client gives up after 200 ms and closes
    EXPECT_FALSE(client->Post("/v1/completions", kBody, "application/json"));
    client->stop();
    EXPECT_LT(until_idle(proxy, "decode", decode.url(), 1500ms), 1000ms);
    EXPECT_TRUE(decode.received().size() == 1u);
    released = true;
  }
  released = false;
  {
    // While the prefill instance is still computing: the decode is never asked.
    FakeInstance prefill(slow_answer(released, prefill_ok));
    FakeInstance decode(decode_json);
    RunningProxy proxy({prefill.url()}, {decode.url()});
    auto client = proxy.client();
    client->set_read_timeout(0, 200'000);
    EXPECT_FALSE(client->Post("/v1/completions", kBody, "application/json"));
    client->stop();
    EXPECT_LT(until_idle(proxy, "prefill", prefill.url(), 1500ms), 1000ms);
    released = true;
    std::this_thread::sleep_for(50ms);
    EXPECT_TRUE(decode.received().empty());
    EXPECT_EQ(metric(proxy.metrics(), "lumen_proxy_prefill_fallbacks_total"), 0);
  }
}

TEST(ProxyServer, ShutdownCutsStreamsStillRunningAfterTheGrace) {
  FakeInstance prefill(prefill_ok);
  std::atomic<bool> decode_saw_close{false};
  FakeInstance decode([&](const httplib::Request&, httplib::Response& response) {
    response.set_chunked_content_provider("text/event-stream", [&](size_t, httplib::DataSink& sink) {
      const auto until = std::chrono::steady_clock::now() + 5s;
      while (std::chrono::steady_clock::now() < until) {
        const std::string event = "data: {}\n\n";
        if (!sink.write(event.data(), event.size())) {
          decode_saw_close = true;
          return false;
        }
        std::this_thread::sleep_for(20ms);
      }
      sink.done();
      return true;
    });
  });
  auto proxy =
      std::make_unique<RunningProxy>(std::vector<std::string>{prefill.url()}, std::vector<std::string>{decode.url()});
  std::promise<void> streaming;
  std::atomic<bool> signalled{false};
  httplib::Error client_error = httplib::Error::Success;
  std::thread client_thread([&, client = proxy->client()] {
    httplib::Request request;
    request.method = "POST";
    request.path = "/v1/completions";
    request.headers = {{"Content-Type", "application/json"}};
    request.body = R"({"stream":true})";
    request.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) {
      if (!signalled.exchange(true)) streaming.set_value();
      return true;
    };
    client_error = client->send(request).error();
  });
  ASSERT_EQ(streaming.get_future().wait_for(2s), std::future_status::ready);
  const auto started = std::chrono::steady_clock::now();
  proxy.reset();  // shutdown() with a 0.2 s grace, then serve() returns
  const auto took = std::chrono::steady_clock::now() - started;
  EXPECT_GE(took, 150ms);  // the stream had its grace
  EXPECT_LT(took, 1500ms);
  client_thread.join();
  EXPECT_NE(client_error, httplib::Error::Success);  // the stream ended unfinished
  const auto until = std::chrono::steady_clock::now() + 1s;
  while (!decode_saw_close && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(10ms);
  EXPECT_TRUE(decode_saw_close);
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
