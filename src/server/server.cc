#include "server/server.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <new>
#include <thread>

#include "http/error_response.h"
#include "server/access_log.h"
#include "server/api_error.h"
#include "util/error.h"

namespace lumen::server {

namespace {

// A fault of ours, not the client's: the client gets the request id, the log gets the detail.
ApiError internal_error(httplib::Response& response, const std::string& detail) {
  this_request_note().error_detail = detail;
  return ApiError(500, fmt::format("internal server error (request id {})", response.get_header_value("X-Request-Id")),
                  "", "internal_error");
}

http::ConnectionLimits connection_limits(const ServerOptions& options) {
  http::ConnectionLimits limits = options.connection;
  limits.max_body_bytes = options.max_body_bytes;
  limits.max_threads = static_cast<size_t>(std::max(options.http_threads, 4));
  limits.max_queued_connections = static_cast<size_t>(std::max(options.max_queued_connections, 0));
  return limits;
}

}  // namespace

Server::Server(ServerContext& context, ServerOptions options)
    : context_(context),
      options_(std::move(options)),
      gate_(server_route_table({options_.metrics_public, options_.web_ui},
                               [this](RouteFunction route) { return guarded(route); }),
            http::GateRules{.api_keys = options_.api_keys,
                            .hosts = http::HostPolicy(options_.allowed_hosts, http::is_loopback_host(options_.host)),
                            .cors = options_.cors,
                            .max_body_bytes = options_.max_body_bytes,
                            .json_bodies_only = true}),
      http_(connection_limits(options_)) {
  install_handlers();
}

http::Handler Server::guarded(RouteFunction route) {
  return [this, route](const httplib::Request& request, httplib::Response& response) {
    try {
      route(context_, request, response);
    } catch (const ApiError& e) {
      if (e.status() == 429 || e.status() == 503) context_.metrics.count_rejected();
      http::write_error(response, e);
    } catch (const Error& e) {
      // The engine's and the tokenizer's validation: always about the request.
      http::write_error(response, ApiError(400, e.what()));
    } catch (const std::bad_alloc&) {
      http::write_error(response, ApiError(503, "out of memory", "", "out_of_memory"));
    } catch (const std::exception& e) {
      http::write_error(response, internal_error(response, e.what()));
    }
  };
}

void Server::install_handlers() {
  gate_.register_handlers(http_);
  http_.set_pre_routing_handler([this](const httplib::Request& request, httplib::Response& response) {
    this_request_note() = RequestNote{};
    this_request_note().start = std::chrono::steady_clock::now();
    response.set_header("X-Request-Id", request_id_for(request.get_header_value("X-Request-Id")));
    return gate_.check(request, response);
  });
  http_.set_post_routing_handler([this](const httplib::Request& request, httplib::Response& response) {
    gate_.add_cors_headers(request, response);
  });
  http_.set_logger([this](const httplib::Request& request, const httplib::Response& response) {
    RequestNote& note = this_request_note();
    const std::string line = access_log_line(options_.log_level, request, response, note);
    if (!line.empty()) {
      std::fwrite(line.data(), 1, line.size(), stderr);
      std::fflush(stderr);
    }
    note = RequestNote{};
    http::GuardedHttpServer::response_was_written(request, response);
  });
  http_.set_exception_handler([](const httplib::Request&, httplib::Response& response, std::exception_ptr error) {
    std::string detail = "unknown exception";
    try {
      if (error) std::rethrow_exception(error);
    } catch (const std::exception& e) {
      detail = e.what();
    } catch (...) {
    }
    http::write_error(response, internal_error(response, detail));
  });
}

int Server::bind() {
  options_.port = http_.bind_listener(options_.host, options_.port);
  return options_.port;
}

void Server::serve() { http_.listen_after_bind(); }

void Server::shutdown() {
  context_.admission.begin_draining();
  http_.stop();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(options_.shutdown_grace_s);
  while (!context_.admission.idle() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (!context_.admission.idle()) {
    context_.shutdown_aborted = true;
    for (uint64_t id : context_.admission.tracked()) context_.engine.abort(id);
    // The aborted requests' handlers write their last event and return; give them a moment,
    // then shut every connection down, so a client that stopped reading (its handler blocked
    // in a write) or one still sending cannot keep serve() from returning.
    const auto hard_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (!context_.admission.idle() && std::chrono::steady_clock::now() < hard_deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  // httplib's stop() does nothing when serve() has not begun listening yet (a signal right after
  // start): the listener then runs on forever. Closing it here ends that listen too.
  http_.stop_listening();
  http_.shutdown_connections();
}

}  // namespace lumen::server
