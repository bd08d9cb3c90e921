#include "server/server.h"

#include <fmt/format.h>

#include <chrono>
#include <functional>
#include <new>
#include <thread>

#include "server/api_error.h"
#include "server/routes.h"
#include "util/error.h"

namespace lumen::server {

namespace {

using Route = void (*)(ServerContext&, const httplib::Request&, httplib::Response&);

void write_error(httplib::Response& response, const ApiError& error) {
  response.status = error.status();
  if (error.retry_after) response.set_header("Retry-After", std::to_string(*error.retry_after));
  response.set_content(dump_json(error.to_json()), "application/json");
}

// The message for a status httplib set itself (no route, body too large, unreadable request).
ApiError library_error(int status) {
  switch (status) {
    case 404: return ApiError(404, "no such route", "", "not_found");
    case 413: return ApiError(413, "the request body is too large", "", "payload_too_large");
    case 414: return ApiError(414, "the request URI is too long", "", "uri_too_long");
    default:
      return ApiError(status, status >= 500 ? "internal server error" : "the request could not be read", "",
                      std::to_string(status));
  }
}

// Compares in time that does not depend on where the strings differ (the length is no secret).
bool same_secret(const std::string& given, const std::string& key) {
  if (given.size() != key.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < key.size(); ++i) diff |= static_cast<unsigned char>(given[i] ^ key[i]);
  return diff == 0;
}

bool needs_key(const std::string& path) {
  return path.rfind("/v1/", 0) == 0 || path == "/tokenize" || path == "/detokenize";
}

}  // namespace

Server::Server(ServerContext& context, ServerOptions options) : context_(context), options_(std::move(options)) {
  const auto threads = static_cast<size_t>(std::max(options_.http_threads, 4));
  http_.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  http_.set_payload_max_length(options_.max_body_bytes);
  http_.set_tcp_nodelay(true);
  install_routes();
}

void Server::install_routes() {
  auto wrap = [this](Route route) {
    return [this, route](const httplib::Request& request, httplib::Response& response) {
      try {
        route(context_, request, response);
      } catch (const ApiError& e) {
        if (e.status() == 429 || e.status() == 503) context_.metrics.count_rejected();
        write_error(response, e);
      } catch (const Error& e) {
        // The engine's and the tokenizer's validation: always about the request.
        write_error(response, ApiError(400, e.what()));
      } catch (const std::bad_alloc&) {
        write_error(response, ApiError(503, "out of memory", "", "out_of_memory"));
      } catch (const std::exception& e) {
        write_error(response, ApiError(500, fmt::format("internal error: {}", e.what())));
      }
    };
  };
  http_.Get("/health", wrap(handle_health));
  http_.Get("/metrics", wrap(handle_metrics));
  http_.Get("/v1/models", wrap(handle_models));
  http_.Get(R"(/v1/models/(.+))", wrap(handle_models));
  http_.Post("/v1/completions", wrap(handle_completions));
  http_.Post("/v1/chat/completions", wrap(handle_chat_completions));
  http_.Post("/tokenize", wrap(handle_tokenize));
  http_.Post("/detokenize", wrap(handle_detokenize));

  http_.set_pre_routing_handler([this](const httplib::Request& request, httplib::Response& response) {
    if (options_.api_key.empty() || !needs_key(request.path)) return httplib::Server::HandlerResponse::Unhandled;
    const std::string given = request.get_header_value("Authorization");
    const std::string prefix = "Bearer ";
    if (given.rfind(prefix, 0) == 0 && same_secret(given.substr(prefix.size()), options_.api_key)) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    write_error(response, ApiError(401, given.empty() ? "missing API key (Authorization: Bearer ...)" : "invalid API key",
                                   "", "invalid_api_key"));
    return httplib::Server::HandlerResponse::Handled;
  });
  // Statuses httplib answers by itself get a body in the same shape as ours.
  http_.set_error_handler(httplib::Server::HandlerWithResponse(
      [](const httplib::Request&, httplib::Response& response) {
        if (!response.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        write_error(response, library_error(response.status));
        return httplib::Server::HandlerResponse::Handled;
      }));
  http_.set_exception_handler([](const httplib::Request&, httplib::Response& response, std::exception_ptr) {
    write_error(response, ApiError(500, "internal error"));
  });
}

int Server::bind() {
  if (options_.port == 0) {
    const int port = http_.bind_to_any_port(options_.host);
    if (port <= 0) fail("cannot listen on {}", options_.host);
    options_.port = port;
  } else if (!http_.bind_to_port(options_.host, options_.port)) {
    fail("cannot listen on {}:{} (in use, or not an address of this machine)", options_.host, options_.port);
  }
  return options_.port;
}

void Server::serve() { http_.listen_after_bind(); }

void Server::shutdown() {
  context_.admission.begin_draining();
  http_.stop();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(options_.shutdown_grace_s);
  while (context_.admission.in_flight() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (context_.admission.in_flight() > 0) {
    context_.shutdown_aborted = true;
    for (uint64_t id : context_.admission.tracked()) context_.engine.abort(id);
  }
}

}  // namespace lumen::server
