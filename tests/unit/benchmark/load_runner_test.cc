// The load runner against a small in-process OpenAI-like streaming server (cpp-httplib): the
// concurrency cap holds, chunks are timed, and HTTP and connection failures are counted.
#include "benchmark/load_runner.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "benchmark/bench_prompt.h"
#include "benchmark/goodput.h"
#include "benchmark/serve_report.h"

namespace lumen::benchmark {
namespace {

class FakeServer {
 public:
  FakeServer() {
    server_.Post("/v1/completions", [this](const httplib::Request& request, httplib::Response& response) {
      const auto body = nlohmann::json::parse(request.body);
      if (body["prompt"] == nlohmann::json({666})) {
        response.status = 500;
        response.set_content(R"({"error":{"message":"boom","type":"server_error"}})", "application/json");
        return;
      }
      const int64_t tokens = body["max_tokens"].get<int64_t>();
      response.set_chunked_content_provider("text/event-stream", [this, tokens](size_t, httplib::DataSink& sink) {
        const int64_t now = ++in_flight_;
        int64_t seen = peak_.load();
        while (now > seen && !peak_.compare_exchange_weak(seen, now)) {
        }
        for (int64_t i = 0; i < tokens; ++i) {
          std::this_thread::sleep_for(std::chrono::milliseconds(4));
          const std::string event = "data: {\"choices\":[{\"index\":0,\"text\":\"t\"}],\"usage\":null}\n\n";
          sink.write(event.data(), event.size());
        }
        const std::string tail =
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":" + std::to_string(tokens) +
            "}}\n\ndata: [DONE]\n\n";
        sink.write(tail.data(), tail.size());
        --in_flight_;
        sink.done();
        return true;
      });
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~FakeServer() {
    server_.stop();
    thread_.join();
  }
  LoadOptions options(int64_t max_concurrency) const {
    LoadOptions o;
    o.target = {"http://127.0.0.1:" + std::to_string(port_), "/v1/completions"};
    o.headers = {{"Content-Type", "application/json"}};
    o.max_concurrency = max_concurrency;
    o.timeout_s = 30;
    return o;
  }
  int64_t peak() const { return peak_; }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::atomic<int64_t> in_flight_{0}, peak_{0};
};

// A port that was free a moment ago: bound, never listened on, closed. Connecting is refused.
int unused_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof address;
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  EXPECT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length), 0);
  close(fd);
  return ntohs(address.sin_port);
}

std::vector<std::string> bodies(size_t n, int64_t max_tokens, std::vector<int32_t> prompt = {1, 2, 3}) {
  return std::vector<std::string>(n, request_body(BenchPrompt{prompt, max_tokens}, BodyOptions{}));
}

TEST(LoadRunner, KeepsAtMostMaxConcurrencyInFlightAndTimesEveryRequest) {
  FakeServer server;
  const LoadRun run = run_load(server.options(3), bodies(12, 6), std::vector<double>(12, 0.0));
  ASSERT_EQ(run.results.size(), 12u);
  for (const RequestResult& r : run.results) {
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.output_tokens, 6);
    EXPECT_EQ(r.prompt_tokens, 3);
    EXPECT_EQ(r.itl.size(), 5u);
    EXPECT_GT(r.ttft, 0);
    EXPECT_LE(r.ttft, r.e2el);
  }
  EXPECT_EQ(run.peak_in_flight, 3);
  EXPECT_LE(server.peak(), 3);
  EXPECT_GE(server.peak(), 2);
  // 12 requests of >= 24 ms, 3 at a time: at least 4 rounds.
  EXPECT_GE(run.duration_s, 4 * 0.024);

  const auto report = serve_report(run, std::vector<int64_t>(12, 3), parse_slos(std::vector<std::string>{"ttft:60000"}),
                                   {{"label", "fake"}});
  EXPECT_EQ(report["completed"], 12);
  EXPECT_EQ(report["failed"], 0);
  EXPECT_EQ(report["total_output_tokens"], 72);
  EXPECT_EQ(report["total_input_tokens"], 36);
  EXPECT_EQ(report["output_tokens_from_usage"], true);
  EXPECT_EQ(report["itl_ms"]["count"], 60);
  EXPECT_NEAR(report["goodput"].get<double>(), report["request_throughput"].get<double>(), 1e-9);
  EXPECT_LE(report["ttft_ms"]["p50"].get<double>(), report["ttft_ms"]["p99"].get<double>());
  EXPECT_EQ(report["config"]["label"], "fake");
  // vLLM's flat keys carry the same numbers as the nested summaries.
  for (const char* metric : {"ttft", "tpot", "itl", "e2el"}) {
    const auto& nested = report[std::string(metric) + "_ms"];
    EXPECT_EQ(report[std::string("mean_") + metric + "_ms"], nested["mean"]) << metric;
    EXPECT_EQ(report[std::string("median_") + metric + "_ms"], nested["p50"]) << metric;
    EXPECT_EQ(report[std::string("std_") + metric + "_ms"], nested["std"]) << metric;
    EXPECT_EQ(report[std::string("p99_") + metric + "_ms"], nested["p99"]) << metric;
  }
  EXPECT_EQ(report["duration"], report["duration_s"]);
}

TEST(LoadRunner, SendsEachRequestNoEarlierThanItsArrival) {
  FakeServer server;
  const LoadRun run = run_load(server.options(0), bodies(3, 2), {0.0, 0.05, 0.15});
  for (const RequestResult& r : run.results) EXPECT_TRUE(r.ok) << r.error;
  EXPECT_GE(run.duration_s, 0.15);
}

TEST(LoadRunner, CountsHttpErrorsAndKeepsGoing) {
  FakeServer server;
  std::vector<std::string> mixed = bodies(4, 2);
  mixed[1] = bodies(1, 2, {666})[0];
  const LoadRun run = run_load(server.options(2), mixed, std::vector<double>(4, 0.0));
  EXPECT_FALSE(run.results[1].ok);
  EXPECT_EQ(run.results[1].error, "HTTP 500: boom");
  for (size_t i : {0, 2, 3}) EXPECT_TRUE(run.results[i].ok) << run.results[i].error;
  const auto report = serve_report(run, {}, {}, nlohmann::ordered_json::object());
  EXPECT_EQ(report["completed"], 3);
  EXPECT_EQ(report["failed"], 1);
  EXPECT_EQ(report["errors"][0]["message"], "HTTP 500: boom");
  EXPECT_TRUE(report["goodput"].is_null());
}

TEST(LoadRunner, ARefusedConnectionIsAFailureNotACrash) {
  const int port = unused_port();
  LoadOptions o;
  o.target = {"http://127.0.0.1:" + std::to_string(port), "/v1/completions"};
  o.timeout_s = 5;
  const LoadRun run = run_load(o, bodies(3, 2), std::vector<double>(3, 0.0));
  for (const RequestResult& r : run.results) {
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.error.rfind("connection: ", 0), 0u) << r.error;
  }
  // Nothing got through: the text report names the failures and prints no table of zeros.
  const std::string text = format_serve_report(serve_report(run, {}, {}, nlohmann::ordered_json::object()));
  EXPECT_NE(text.find("Failed requests:"), std::string::npos) << text;
  EXPECT_NE(text.find("error (3x): connection: "), std::string::npos) << text;
  EXPECT_EQ(text.find("Time to First Token"), std::string::npos) << text;
  EXPECT_EQ(text.find("throughput"), std::string::npos) << text;
}

}  // namespace
}  // namespace lumen::benchmark
