// The proxy end to end over real sockets, its streams: answers relayed as they come, clients
// that hang up mid-way (the instance's connection is cut), and a drain that outlasts its grace.
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
  httplib::Request request = streaming_completion_request();
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
  httplib::Request request = streaming_completion_request();
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


}  // namespace
}  // namespace lumen::proxy
