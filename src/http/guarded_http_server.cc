#include "http/guarded_http_server.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "http/connection_pool.h"
#include "http/error_response.h"
#include "http/guarded_stream.h"
#include "util/error.h"

namespace lumen::http {

namespace {

// The connection the calling thread serves.
struct ServedConnection {
  GuardedStream* stream = nullptr;
  bool closing = false;  // the last response said the connection ends
};
thread_local ServedConnection served;

ApiError head_too_large() {
  return ApiError(431, "the request head is too large (at most 32 KiB, 100 header fields, 8 KiB per line)", "",
                  "request_header_fields_too_large");
}

ApiError read_timed_out() {
  return ApiError(408, "the request was not received in time (--request-read-timeout)", "", "request_timeout");
}

// The error handler: a status httplib set itself (no route, an unreadable request) gets a body
// in the OpenAI shape; a route's own answer (an error body, a stream) stands as it is.
httplib::Server::HandlerResponse answer_library_status(const httplib::Request&, httplib::Response& response) {
  if (!response.body.empty() || response.content_provider_) return httplib::Server::HandlerResponse::Unhandled;
  if (std::optional<ApiError> failure = GuardedHttpServer::read_failure()) {
    // httplib calls any failed body read a 400; it was the deadline or the size limit.
    response.set_header("Connection", "close");
    write_error(response, *failure);
  } else {
    write_error(response, library_error(response.status));
  }
  return httplib::Server::HandlerResponse::Handled;
}

}  // namespace

GuardedHttpServer::GuardedHttpServer(ConnectionLimits limits) : limits_(limits) {
  const size_t threads = std::max<size_t>(limits_.max_threads, 1);
  const size_t queued = limits_.max_queued_connections;
  new_task_queue = [threads, queued] { return new ConnectionPool(threads, queued); };
  // A second guard behind body_refusal(): httplib itself never reads more than the limit.
  set_payload_max_length(limits_.max_body_bytes);
  set_tcp_nodelay(true);
  // SO_REUSEADDR only (a restart may bind while old connections sit in TIME_WAIT). httplib's
  // default also sets SO_REUSEPORT, which let a second server start on a busy port and take
  // half of its connections.
  set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  set_error_handler(HandlerWithResponse(answer_library_status));
}

int GuardedHttpServer::current_socket() { return served.stream != nullptr ? served.stream->socket() : -1; }

std::optional<ApiError> GuardedHttpServer::read_failure() {
  if (served.stream == nullptr) return std::nullopt;
  if (served.stream->timed_out()) return read_timed_out();
  if (served.stream->over_budget()) {
    return ApiError(413, "the request body is too large (--max-body-size)", "", "payload_too_large");
  }
  return std::nullopt;
}

void GuardedHttpServer::response_was_written(const httplib::Request& request, const httplib::Response& response) {
  // httplib keeps a connection open unless the request asked otherwise; a response marked
  // `Connection: close` (one refused before its body was read) must close it too, or the unread
  // body would be parsed as the next request.
  served.closing = read_failure().has_value() || response.get_header_value("Connection") == "close" ||
                   request.get_header_value("Connection") == "close" ||
                   (request.version == "HTTP/1.0" && request.get_header_value("Connection") != "Keep-Alive");
}

int GuardedHttpServer::bind_listener(const std::string& host, int port) {
  if (port == 0) {
    port = bind_to_any_port(host);
    if (port <= 0) fail("cannot listen on {}", host);
  } else if (errno = 0; !bind_to_port(host, port)) {
    if (errno == EADDRINUSE) fail("cannot listen on {}:{}: address already in use", host, port);
    fail("cannot listen on {}:{} ({})", host, port,
         errno != 0 ? std::strerror(errno) : "not an address of this machine");
  }
  // listen() again on a listening socket only changes its backlog (the kernel caps it at
  // net.core.somaxconn); past that many the ConnectionPool answers 503, so the kernel's queue
  // never has to drop one.
  const auto backlog = static_cast<int>(std::min<size_t>(limits_.max_threads + limits_.max_queued_connections, 65535));
  const socket_t listener = svr_sock_;
  if (listener == INVALID_SOCKET || ::listen(listener, backlog) != 0) {
    fail("cannot listen on {}:{} ({})", host, port, std::strerror(errno));
  }
  return port;
}

void GuardedHttpServer::stop_listening() {
  const socket_t listener = svr_sock_.exchange(INVALID_SOCKET);
  if (listener == INVALID_SOCKET) return;
  ::shutdown(listener, SHUT_RDWR);
  ::close(listener);
}

void GuardedHttpServer::refuse(socket_t socket, const ApiError& error) {
  send_without_blocking(socket, raw_error_response(error));
  closer_.close_after_response(socket);
}

bool GuardedHttpServer::process_and_close_socket(socket_t socket) {
  if (ConnectionPool::refusing_this_connection()) {
    ApiError busy(503, "the server has too many open connections; retry shortly", "", "server_busy");
    busy.retry_after = 1;
    refuse(socket, busy);
    return true;
  }
  live_.add(socket);  // from the start: a drain's shutdown reaches a client still sending its head
  GuardedStream stream(socket, limits_.write_timeout);
  served = {&stream, false};
  std::optional<ApiError> refusal;
  bool result = true;
  const auto drop_accept_encoding = [](httplib::Request& request) { request.headers.erase("Accept-Encoding"); };
  // httplib's own loop, with each request's head read and checked before httplib parses it.
  for (size_t count = keep_alive_max_count_; count > 0 && !stopping(); --count) {
    using Clock = GuardedStream::Clock;
    const bool first = count == keep_alive_max_count_;
    // A new connection must send its request within the deadline; a kept-alive one may idle a
    // while first, and is closed quietly when it sends nothing, or once the server stops or
    // drains.
    const Clock::time_point first_byte_by = Clock::now() + (first ? limits_.read_timeout : limits_.keep_alive_idle);
    const Clock::time_point deadline = first ? first_byte_by : first_byte_by + limits_.read_timeout;
    const auto give_up_waiting = [&] { return stopping() || (draining_ && !first); };
    const HeadWait head = stream.read_head(limits_.head, first_byte_by, deadline, give_up_waiting);
    if (head == HeadWait::TooLarge) refusal = head_too_large();
    if (head == HeadWait::TimedOut) refusal = read_timed_out();
    if (head != HeadWait::Ready) break;
    // The head is at most head.max_bytes; the body at most max_body_bytes (its Content-Length
    // was checked before routing): a read past both is refused.
    stream.begin_request(deadline, limits_.head.max_bytes + limits_.max_body_bytes);
    served.closing = false;
    bool connection_closed = false;
    const bool last = count == 1 || stopping() || draining_;
    result = process_request(stream, last, connection_closed,
                             never_compress_ ? std::function<void(httplib::Request&)>(drop_accept_encoding) : nullptr);
    if (!result || connection_closed || served.closing) break;
  }
  served = {};
  live_.remove(socket);
  if (refusal) {
    refuse(socket, *refusal);
  } else {
    // Lingering: a close with unread request bytes would reset the connection, and the reset
    // can destroy the last response before the client has read it.
    closer_.close_after_response(socket);
  }
  return result;
}

}  // namespace lumen::http
