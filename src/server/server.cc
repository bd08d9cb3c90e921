#include "server/server.h"

#include <fmt/format.h>

#include <sys/socket.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <algorithm>
#include <new>
#include <thread>

#include "server/access_log.h"
#include "server/api_error.h"
#include "server/connection_pool.h"
#include "server/request_body_check.h"
#include "server/routes.h"
#include "server/web_assets.h"
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
      return ApiError(status, status >= 500 ? "internal server error" : "the request could not be read");
  }
}

// A fault of ours, not the client's: the client gets the request id, the log gets the detail.
ApiError internal_error(httplib::Response& response, const std::string& detail) {
  this_request_note().error_detail = detail;
  return ApiError(500, fmt::format("internal server error (request id {})", response.get_header_value("X-Request-Id")),
                  "", "internal_error");
}

// A path as an httplib route pattern (a regular expression that matches only that path).
std::string exact_pattern(std::string_view path) {
  std::string pattern;
  for (char c : path) {
    if (!std::isalnum(static_cast<unsigned char>(c))) pattern += '\\';
    pattern += c;
  }
  return pattern;
}

// GET of one of the chat page's files. The policy headers make the browser run only the page's
// own files (the Content-Security-Policy) and take each file as the type it is served with.
void serve_web_asset(ServerContext&, const httplib::Request& request, httplib::Response& response) {
  const std::optional<WebAsset> asset = find_web_asset(request.path);
  if (!asset) throw ApiError(404, "no such route", "", "not_found");
  response.set_header("Content-Security-Policy", std::string(kWebContentSecurityPolicy));
  response.set_header("X-Content-Type-Options", "nosniff");
  response.set_header("Referrer-Policy", "no-referrer");
  response.set_header("Cache-Control", "no-cache");  // a new binary's page shows at once
  response.set_content(std::string(asset->body), std::string(asset->content_type));
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

}  // namespace

Server::Server(ServerContext& context, ServerOptions options)
    : context_(context),
      options_(std::move(options)),
      hosts_(options_.allowed_hosts, is_loopback_host(options_.host)),
      http_([this] {
        ConnectionLimits limits = options_.connection;
        limits.max_body_bytes = options_.max_body_bytes;
        return limits;
      }()) {
  const auto threads = static_cast<size_t>(std::max(options_.http_threads, 4));
  const auto queued = static_cast<size_t>(std::max(options_.max_queued_connections, 0));
  http_.new_task_queue = [threads, queued] { return new ConnectionPool(threads, queued); };
  http_.set_payload_max_length(options_.max_body_bytes);
  http_.set_tcp_nodelay(true);
  // SO_REUSEADDR only (a restart may bind while old connections sit in TIME_WAIT). httplib's
  // default also sets SO_REUSEPORT, which let a second server start on a busy port and take
  // half of its connections.
  http_.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
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
        write_error(response, internal_error(response, e.what()));
      }
    };
  };
  http_.Get("/health", wrap(handle_health));
  http_.Get("/metrics", wrap(handle_metrics));
  http_.Get("/v1/models", wrap(handle_models));
  http_.Get(R"(/v1/models/(.+))", wrap(handle_models));
  http_.Post("/v1/completions", wrap(handle_completions));
  http_.Post("/v1/chat/completions", wrap(handle_chat_completions));
  http_.Post("/v1/embeddings", wrap(handle_embeddings));
  http_.Post("/tokenize", wrap(handle_tokenize));
  http_.Post("/detokenize", wrap(handle_detokenize));
  if (options_.web_ui) {
    for (const EmbeddedFile& file : embedded_web_files()) {
      http_.Get(exact_pattern(web_path(file.name)), wrap(serve_web_asset));
    }
  }

  http_.set_pre_routing_handler([this](const httplib::Request& request, httplib::Response& response) {
    this_request_note() = RequestNote{};
    this_request_note().start = std::chrono::steady_clock::now();
    response.set_header("X-Request-Id", request_id_for(request.get_header_value("X-Request-Id")));
    if (!hosts_.allows(request.get_header_value("Host"))) {
      response.set_header("Connection", "close");
      write_error(response, ApiError(421, fmt::format("this server does not answer for host '{}' (--allowed-hosts)",
                                                      request.get_header_value("Host").substr(0, 100)),
                                     "", "host_not_allowed"));
      return httplib::Server::HandlerResponse::Handled;
    }
    // The chat page's files are static and hold no secrets: served without the key (the page
    // asks the user for it), and only to GET.
    const bool web_page = options_.web_ui && find_web_asset(request.path).has_value();
    const std::vector<std::string> methods = web_page ? std::vector<std::string>{"GET"} : allowed_methods(request.path);
    if (request.method == "OPTIONS" && options_.cors.enabled()) {
      // A browser's CORS preflight: answered without the key (browsers send none with it).
      response.status = methods.empty() ? 404 : 204;
      response.set_header("Access-Control-Allow-Methods", join(methods) + ", OPTIONS");
      response.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type");
      response.set_header("Access-Control-Max-Age", "600");
      return httplib::Server::HandlerResponse::Handled;
    }
    const bool head_of_get = request.method == "HEAD" && !methods.empty() && methods.front() == "GET";
    if (!methods.empty() && !head_of_get && std::find(methods.begin(), methods.end(), request.method) == methods.end()) {
      response.set_header("Allow", join(methods));
      response.set_header("Connection", "close");  // any body stays unread
      write_error(response, ApiError(405, fmt::format("{} takes {}, not {}", request.path, join(methods), request.method),
                                     "", "method_not_allowed"));
      return httplib::Server::HandlerResponse::Handled;
    }
    if (!options_.api_keys.empty() && !methods.empty() && !web_page &&
        path_needs_key(request.path, options_.metrics_public)) {
      const std::string given = request.get_header_value("Authorization");
      if (!carries_api_key(given, options_.api_keys)) {
        write_error(response, ApiError(401, given.empty() ? "missing API key (Authorization: Bearer ...)" : "invalid API key",
                                       "", "invalid_api_key"));
        response.set_header("Connection", "close");
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    if (std::optional<BodyRefusal> refusal = body_refusal(request, options_.max_body_bytes)) {
      // Answered before any of the body is read; the connection closes, its unread body with it.
      response.set_header("Connection", "close");
      write_error(response, ApiError(refusal->status, refusal->message, "", refusal->code));
      return httplib::Server::HandlerResponse::Handled;
    }
    if (request.method == "POST" && !acceptable_body_type(request.get_header_value("Content-Type"))) {
      // Checked before httplib reads the body (it caps form-encoded bodies at 8 KB with a 413
      // that hid the real problem: `curl -d` sends application/x-www-form-urlencoded).
      response.set_header("Connection", "close");
      write_error(response, ApiError(415,
                                     fmt::format("the request body must be JSON, sent with 'Content-Type: application/json' "
                                                 "(got '{}'; with curl: -H 'Content-Type: application/json')",
                                                 media_type(request.get_header_value("Content-Type"))),
                                     "", "unsupported_media_type"));
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  http_.set_post_routing_handler([this](const httplib::Request& request, httplib::Response& response) {
    if (!options_.cors.enabled()) return;
    if (auto origin = options_.cors.allow_origin(request.get_header_value("Origin"))) {
      response.set_header("Access-Control-Allow-Origin", *origin);
      response.set_header("Vary", "Origin");
    }
  });
  http_.set_logger([this](const httplib::Request& request, const httplib::Response& response) {
    RequestNote& note = this_request_note();
    const std::string line = access_log_line(options_.log_level, request, response, note);
    if (!line.empty()) {
      std::fwrite(line.data(), 1, line.size(), stderr);
      std::fflush(stderr);
    }
    note = RequestNote{};
    http_.response_was_written(request, response);
  });
  // Statuses httplib answers by itself get a body in the same shape as ours.
  http_.set_error_handler(httplib::Server::HandlerWithResponse(
      [](const httplib::Request&, httplib::Response& response) {
        if (!response.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        if (std::optional<ApiError> failure = GuardedHttpServer::read_failure()) {
          // httplib calls any failed body read a 400; it was the deadline or the size limit.
          response.status = failure->status();
          response.set_header("Connection", "close");
          write_error(response, *failure);
          return httplib::Server::HandlerResponse::Handled;
        }
        write_error(response, library_error(response.status));
        return httplib::Server::HandlerResponse::Handled;
      }));
  http_.set_exception_handler([](const httplib::Request&, httplib::Response& response, std::exception_ptr error) {
    std::string detail = "unknown exception";
    try {
      if (error) std::rethrow_exception(error);
    } catch (const std::exception& e) {
      detail = e.what();
    } catch (...) {
    }
    write_error(response, internal_error(response, detail));
  });
}

int Server::bind() {
  if (options_.port == 0) {
    const int port = http_.bind_to_any_port(options_.host);
    if (port <= 0) fail("cannot listen on {}", options_.host);
    options_.port = port;
  } else if (errno = 0; !http_.bind_to_port(options_.host, options_.port)) {
    if (errno == EADDRINUSE) fail("cannot listen on {}:{}: address already in use", options_.host, options_.port);
    fail("cannot listen on {}:{} ({})", options_.host, options_.port,
         errno != 0 ? std::strerror(errno) : "not an address of this machine");
  }
  // Room for every connection the server would take at once (its threads and its queue): past
  // that the ConnectionPool answers 503, so the kernel's queue never has to drop one.
  const int backlog = std::max(options_.http_threads, 4) + std::max(options_.max_queued_connections, 0);
  if (!http_.set_listen_backlog(backlog)) fail("cannot listen on {}:{} ({})", options_.host, options_.port, std::strerror(errno));
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
    // The aborted requests' handlers write their last event and return; give them a moment,
    // then shut every connection down, so a client that stopped reading (its handler blocked
    // in a write) or one still sending cannot keep serve() from returning.
    const auto hard_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (context_.admission.in_flight() > 0 && std::chrono::steady_clock::now() < hard_deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  http_.shutdown_connections();
}

}  // namespace lumen::server
