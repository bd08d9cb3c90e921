#pragma once
// What the proxy's socket tests share: a ProxyServer on a free port with a client to it, fake
// instances' canned answers (fake_instance.h), and readers of what came back.
#include <gtest/gtest.h>
#include <httplib.h>

#include <csignal>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "proxy/proxy_server.h"
#include "unit/proxy/fake_instance.h"

namespace lumen::proxy::testing {

// cpp-httplib writes without MSG_NOSIGNAL: a peer that hung up must not kill the test.
inline const bool sigpipe_ignored = [] {
  std::signal(SIGPIPE, SIG_IGN);
  return true;
}();

inline constexpr const char* kBody = R"({"model":"m","prompt":"Hello there","max_tokens":5,"odd":"\u00e9 \\ \" kept"})";
inline constexpr const char* kTransfer = "tcp://x#7";
inline constexpr const char* kDecodeAnswer =
    R"({"id":"cmpl-1","object":"text_completion","choices":[{"index":0,"text":"hi"}]})";

inline void prefill_ok(const httplib::Request&, httplib::Response& response) {
  response.set_header("X-Lumen-KV-Transfer", kTransfer);
  response.set_content(R"({"id":"cmpl-p","choices":[{"index":0,"text":"x"}]})", "application/json");
}

inline void decode_json(const httplib::Request&, httplib::Response& response) {
  response.set_header("X-Upstream-Only", "must not reach the client");
  response.set_content(kDecodeAnswer, "application/json");
}

// A streamed completion request, for a test to set its content_receiver on.
inline httplib::Request streaming_completion_request() {
  httplib::Request request;
  request.method = "POST";
  request.path = "/v1/completions";
  request.headers = {{"Content-Type", "application/json"}};
  request.body = R"({"prompt":"hi","stream":true})";
  return request;
}

inline std::string header(const Received& received, const std::string& name) {
  const auto found = received.headers.find(name);
  return found == received.headers.end() ? "<none>" : found->second;
}

inline double metric(const std::string& text, const std::string& series) {
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

  int port() const { return port_; }
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

inline void expect_openai_error(const httplib::Result& result, int status, const std::string& code) {
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

}  // namespace lumen::proxy::testing
