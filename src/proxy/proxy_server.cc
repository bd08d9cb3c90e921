#include "proxy/proxy_server.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "http/guarded_http_server.h"
#include "http/request_gate.h"
#include "proxy/openai_error.h"
#include "proxy/proxy_context.h"
#include "proxy/proxy_route_table.h"
#include "proxy/route_label.h"
#include "util/error.h"

namespace lumen::proxy {

namespace {

std::vector<UpstreamAddress> parse_all(const std::vector<std::string>& urls, std::string_view flag) {
  if (urls.empty()) fail("the proxy needs at least one {} instance (http://host:port)", flag);
  std::vector<UpstreamAddress> addresses;
  for (const std::string& url : urls) addresses.push_back(parse_upstream_address(url, flag));
  return addresses;
}

ProxyOptions checked(ProxyOptions options) {
  if (options.port < 0 || options.port > 65535) fail("--port must be from 0 to 65535, not {}", options.port);
  if (options.max_body_bytes == 0) fail("--max-body-size must be at least one byte");
  // An upper bound keeps the conversion to milliseconds far from overflow (11 days).
  if (!std::isfinite(options.upstream_timeout_s) || options.upstream_timeout_s < 0.001 ||
      options.upstream_timeout_s > 1e6) {
    fail("--upstream-timeout must be from 0.001 to 1000000 seconds, not {}", options.upstream_timeout_s);
  }
  if (options.http_threads < 1) fail("--http-threads must be at least 1, not {}", options.http_threads);
  if (options.max_queued_connections < 0) {
    fail("--max-queued-connections must not be negative, not {}", options.max_queued_connections);
  }
  if (!std::isfinite(options.shutdown_grace_s) || options.shutdown_grace_s < 0 || options.shutdown_grace_s > 1e6) {
    fail("the shutdown grace must be from 0 to 1000000 seconds, not {}", options.shutdown_grace_s);
  }
  if (!std::isfinite(options.request_read_timeout_s) || options.request_read_timeout_s < 0.001 ||
      options.request_read_timeout_s > 1e6) {
    fail("--request-read-timeout must be from 0.001 to 1000000 seconds, not {}", options.request_read_timeout_s);
  }
  for (const std::string& key : options.api_keys) {
    if (key.empty()) fail("an API key must not be empty");
  }
  return options;
}

http::ConnectionLimits connection_limits(const ProxyOptions& options) {
  return http::ConnectionLimits{
      .head = {},
      .read_timeout = std::chrono::milliseconds(static_cast<int64_t>(options.request_read_timeout_s * 1000.0)),
      .keep_alive_idle = std::chrono::milliseconds(5'000),
      .write_timeout = std::chrono::milliseconds(10'000),
      .max_body_bytes = options.max_body_bytes,
      .max_threads = static_cast<size_t>(options.http_threads),
      .max_queued_connections = static_cast<size_t>(options.max_queued_connections)};
}

}  // namespace

struct ProxyServer::State {
  explicit State(ProxyOptions options)
      : context(options, parse_all(options.prefill, "--prefill"), parse_all(options.decode, "--decode")),
        gate(proxy_route_table(context),
             http::GateRules{.api_keys = options.api_keys,
                             .hosts = http::HostPolicy(options.allowed_hosts, http::is_loopback_host(options.host)),
                             .cors = http::CorsPolicy(options.cors_origins),
                             .max_body_bytes = options.max_body_bytes}),
        http_server(connection_limits(options)) {}

  void install_handlers();

  ProxyContext context;
  const http::RequestGate gate;
  http::GuardedHttpServer http_server;
  std::mutex mutex;
  bool bound = false;
  bool serving = false;
  bool stop_requested = false;
};

ProxyServer::ProxyServer(ProxyOptions options) : state_(std::make_unique<State>(checked(std::move(options)))) {
  state_->install_handlers();
}

ProxyServer::~ProxyServer() = default;

void ProxyServer::State::install_handlers() {
  // httplib compresses a body when the client accepts a coding; a relay must not hold bytes back.
  http_server.never_compress();
  http_server.set_logger(http::GuardedHttpServer::response_was_written);
  gate.register_handlers(http_server);
  http_server.set_pre_routing_handler([this](const httplib::Request& request, httplib::Response& response) {
    context.metrics.count_request(route_of(request.path));
    const httplib::Server::HandlerResponse verdict = gate.check(request, response);
    if (verdict == httplib::Server::HandlerResponse::Handled && response.status == 401) {
      context.metrics.count_unauthorized();
    }
    return verdict;
  });
  http_server.set_post_routing_handler([this](const httplib::Request& request, httplib::Response& response) {
    gate.add_cors_headers(request, response);
  });
  http_server.set_exception_handler([](const httplib::Request&, httplib::Response& response, std::exception_ptr) {
    answer_error(response, 500, "internal error in the proxy", "internal_error");
  });
}

int ProxyServer::bind() {
  State& state = *state_;
  const ProxyOptions& options = state.context.options;
  const int port = state.http_server.bind_listener(options.host, options.port);
  std::lock_guard<std::mutex> lock(state.mutex);
  state.bound = true;
  return port;
}

void ProxyServer::serve() {
  State& state = *state_;
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    if (!state.bound) fail("ProxyServer::serve() needs bind() first");
    if (state.stop_requested) return;
    state.serving = true;
  }
  state.http_server.listen_after_bind();
  std::lock_guard<std::mutex> lock(state.mutex);
  state.serving = false;
}

void ProxyServer::shutdown() {
  using Clock = std::chrono::steady_clock;
  State& state = *state_;
  bool serving = false;
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    state.stop_requested = true;
    serving = state.serving;
  }
  ProxyContext& context = state.context;
  // New generation requests get 503 and /health says 503 (so a load balancer moves on); each
  // connection closes after its current request. The listener stays open during the grace:
  // httplib ends every stream under way once it closes.
  context.draining = true;
  state.http_server.close_connections_after_their_request();
  if (serving) {
    const auto grace = std::chrono::duration<double>(context.options.shutdown_grace_s);
    const Clock::time_point grace_over = Clock::now() + std::chrono::duration_cast<Clock::duration>(grace);
    while (context.generations_in_flight > 0 && Clock::now() < grace_over) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  state.http_server.stop_listening();
  // Cut what is left: the instances see their connections close and abort; the clients' streams
  // end unfinished. Repeated, since a cancel can come before an exchange's socket exists.
  const Clock::time_point give_up = Clock::now() + std::chrono::seconds(5);
  do {
    context.calls.cancel_all();
    state.http_server.shutdown_connections();
    if (context.calls.live_calls() == 0 && context.generations_in_flight == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  } while (Clock::now() < give_up);
}

}  // namespace lumen::proxy
