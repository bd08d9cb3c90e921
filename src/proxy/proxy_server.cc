#include "proxy/proxy_server.h"

#include <fmt/format.h>

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "proxy/openai_error.h"
#include "proxy/proxy_context.h"
#include "proxy/proxy_http_server.h"
#include "proxy/proxy_routes.h"
#include "proxy/request_rules.h"
#include "http/connection_pool.h"
#include "http/http_policy.h"
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

// The answer to a request httplib failed to read or route, when no route has written one.
std::pair<std::string_view, std::string_view> error_for_status(int status) {
  switch (status) {
    case 400: return {"the request could not be read", "bad_request"};
    case 404: return {"no such route", "not_found"};
    case 408: return {"the request was not received in time", "request_timeout"};
    case 413: return {"the request is too large", "payload_too_large"};
    case 414: return {"the request URI is too long", "uri_too_long"};
    default:
      return status >= 500
                 ? std::pair<std::string_view, std::string_view>{"internal error in the proxy", "internal_error"}
                 : std::pair<std::string_view, std::string_view>{"the request could not be served", ""};
  }
}

}  // namespace

struct ProxyServer::State {
  explicit State(ProxyOptions options)
      : context(options, parse_all(options.prefill, "--prefill"), parse_all(options.decode, "--decode")),
        hosts(options.allowed_hosts, options.host),
        cors(options.cors_origins),
        http(ConnectionLimits{
            .read_timeout = std::chrono::milliseconds(static_cast<int64_t>(options.request_read_timeout_s * 1000.0)),
            .max_body_bytes = options.max_body_bytes}) {}

  void install_routes();

  ProxyContext context;
  HostRule hosts;
  http::CorsPolicy cors;
  ProxyHttpServer http;
  std::mutex mutex;
  bool bound = false;
  bool serving = false;
  bool stop_requested = false;
};

ProxyServer::ProxyServer(ProxyOptions options) : state_(std::make_unique<State>(checked(std::move(options)))) {
  state_->install_routes();
}

ProxyServer::~ProxyServer() = default;

void ProxyServer::State::install_routes() {
  const size_t threads = static_cast<size_t>(context.options.http_threads);
  const size_t waiting = static_cast<size_t>(context.options.max_queued_connections);
  http.new_task_queue = [threads, waiting] { return new http::ConnectionPool(threads, waiting); };
  // A second guard behind body_refusal(): httplib itself never reads more than the limit.
  http.set_payload_max_length(context.options.max_body_bytes);
  http.set_logger(ProxyHttpServer::response_was_written);

  http.set_pre_routing_handler([this](const httplib::Request& request, httplib::Response& response) {
    const Route route = route_of(request.path);
    context.metrics.count_request(route);
    // Refused before the body is read, so the connection closes after the answer.
    const auto refuse = [&](int status, std::string_view message, std::string_view code) {
      answer_error(response, status, message, code);
      response.set_header("Connection", "close");
      return httplib::Server::HandlerResponse::Handled;
    };
    if (!hosts.allows(request.get_header_value("Host"))) {
      return refuse(421, "this proxy does not answer for that host (--allowed-hosts)", "host_not_allowed");
    }
    if (request.method == "OPTIONS" && cors.enabled()) {
      // A browser's CORS preflight, answered as `lumen serve` answers it: without the key
      // (browsers send none with it); the allowed origin is added after routing.
      if (route == Route::Other) return refuse(404, "no such route", "not_found");
      response.status = 204;
      response.set_header("Access-Control-Allow-Methods", fmt::format("{}, OPTIONS", route_method(route)));
      response.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type");
      response.set_header("Access-Control-Max-Age", "600");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (route == Route::Other) return refuse(404, "no such route", "not_found");
    const std::string_view method = route_method(route);
    if (request.method != method) {
      response.set_header("Allow", std::string(method));
      return refuse(405, fmt::format("{} takes {}, not {}", route_path(route), method, request.method.substr(0, 16)),
                    "method_not_allowed");
    }
    const ProxyOptions& options = context.options;
    if (!options.api_keys.empty() && http::path_needs_key(request.path, options.metrics_public)) {
      const std::string given = request.get_header_value("Authorization");
      if (!http::carries_api_key(given, options.api_keys)) {
        context.metrics.count_unauthorized();
        return refuse(401, given.empty() ? "missing API key (Authorization: Bearer ...)" : "invalid API key",
                      "invalid_api_key");
      }
    }
    if (const std::optional<Refusal> refusal = body_refusal(request, context.options.max_body_bytes)) {
      return refuse(refusal->status, refusal->message, refusal->code);
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });

  for (const Route route : {Route::Completions, Route::ChatCompletions}) {
    http.Post(std::string(route_path(route)),
              [this, route](const httplib::Request& request, httplib::Response& response) {
                serve_generation(context, route, request, response);
              });
  }
  http.Get(std::string(route_path(Route::Models)),
           [this](const httplib::Request& request, httplib::Response& response) {
             serve_models(context, request, response);
           });
  http.Get(std::string(route_path(Route::Health)),
           [this](const httplib::Request&, httplib::Response& response) { serve_health(context, response); });
  http.Get(std::string(route_path(Route::Metrics)),
           [this](const httplib::Request&, httplib::Response& response) { serve_metrics(context, response); });

  // Every answer, errors and preflights included, names an allowed origin back to it (as serve).
  http.set_post_routing_handler([this](const httplib::Request& request, httplib::Response& response) {
    if (!cors.enabled()) return;
    if (const std::optional<std::string> origin = cors.allow_origin(request.get_header_value("Origin"))) {
      response.set_header("Access-Control-Allow-Origin", *origin);
      response.set_header("Vary", "Origin");
    }
  });

  http.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request&, httplib::Response& response) {
    // A route's own answer (an error body, or an instance's relayed error) stands as it is.
    if (!response.body.empty() || response.content_provider_) return httplib::Server::HandlerResponse::Unhandled;
    int status = response.status;
    if (const std::optional<int> failure = ProxyHttpServer::read_failure_status()) {
      status = *failure;  // httplib calls any failed read a 400; it was the deadline or the size
      response.set_header("Connection", "close");
    }
    const auto [message, code] = error_for_status(status);
    answer_error(response, status, message, code);
    return httplib::Server::HandlerResponse::Handled;
  }));
  http.set_exception_handler([](const httplib::Request&, httplib::Response& response, std::exception_ptr) {
    answer_error(response, 500, "internal error in the proxy", "internal_error");
  });
}

int ProxyServer::bind() {
  State& state = *state_;
  const ProxyOptions& options = state.context.options;
  int port = options.port;
  if (port == 0) {
    port = state.http.bind_to_any_port(options.host);
    if (port < 0) fail("cannot listen on {} (any port)", options.host);
  } else if (!state.http.bind_to_port(options.host, port)) {
    fail("cannot listen on {}:{} (in use, or not an address of this machine)", options.host, port);
  }
  // Room for every connection the proxy would take at once (its threads and its queue).
  if (!state.http.set_listen_backlog(std::max(options.http_threads, 4) + std::max(options.max_queued_connections, 0)))
    fail("cannot listen on {}:{} ({})", options.host, port, std::strerror(errno));
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
  state.http.listen_after_bind();
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
  state.http.close_connections_after_their_request();
  if (serving) {
    const auto grace = std::chrono::duration<double>(context.options.shutdown_grace_s);
    const Clock::time_point grace_over = Clock::now() + std::chrono::duration_cast<Clock::duration>(grace);
    while (context.generations_in_flight > 0 && Clock::now() < grace_over) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  state.http.stop_listening();
  // Cut what is left: the instances see their connections close and abort; the clients' streams
  // end unfinished. Repeated, since a cancel can come before an exchange's socket exists.
  const Clock::time_point give_up = Clock::now() + std::chrono::seconds(5);
  do {
    context.calls.cancel_all();
    state.http.shutdown_connections();
    if (context.calls.live_calls() == 0 && context.generations_in_flight == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  } while (Clock::now() < give_up);
}

}  // namespace lumen::proxy
