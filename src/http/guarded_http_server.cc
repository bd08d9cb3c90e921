#include "http/guarded_http_server.h"

#include <sys/socket.h>
#include <unistd.h>

#include "http/connection_pool.h"
#include "http/guarded_stream.h"

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

}  // namespace

bool GuardedHttpServer::set_listen_backlog(int backlog) {
  // listen() again on a listening socket only changes its backlog (the kernel caps it at
  // net.core.somaxconn).
  return svr_sock_ != INVALID_SOCKET && ::listen(svr_sock_, backlog) == 0;
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
  // httplib's own loop, with each request's head read and checked before httplib parses it.
  for (size_t count = keep_alive_max_count_; count > 0 && svr_sock_ != INVALID_SOCKET; --count) {
    using Clock = GuardedStream::Clock;
    const bool first = count == keep_alive_max_count_;
    // A new connection must send its request within the deadline; a kept-alive one may idle a
    // while first, and is closed quietly when it sends nothing.
    const Clock::time_point first_byte_by = Clock::now() + (first ? limits_.read_timeout : limits_.keep_alive_idle);
    const Clock::time_point deadline = first ? first_byte_by : first_byte_by + limits_.read_timeout;
    const HeadWait head = stream.read_head(limits_.head, first_byte_by, deadline);
    if (head == HeadWait::TooLarge) refusal = head_too_large();
    if (head == HeadWait::TimedOut) refusal = read_timed_out();
    if (head != HeadWait::Ready) break;
    // The head is at most head.max_bytes; the body at most max_body_bytes (its Content-Length
    // was checked before routing): a read past both is refused.
    stream.begin_request(deadline, limits_.head.max_bytes + limits_.max_body_bytes);
    bool connection_closed = false;
    result = process_request(stream, count == 1, connection_closed, nullptr);
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

void GuardedHttpServer::response_was_written(const httplib::Request& request, const httplib::Response& response) {
  // httplib keeps a connection open unless the request asked otherwise; a response Lumen marks
  // `Connection: close` (one refused before its body was read) must close it too, or the unread
  // body would be parsed as the next request.
  served.closing = read_failure().has_value() || response.get_header_value("Connection") == "close" ||
                   request.get_header_value("Connection") == "close" ||
                   (request.version == "HTTP/1.0" && request.get_header_value("Connection") != "Keep-Alive");
}

}  // namespace lumen::http
