#include "proxy/proxy_http_server.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <string_view>

#include "proxy/client_stream.h"
#include "proxy/openai_error.h"
#include "http/connection_pool.h"

namespace lumen::proxy {

namespace {

// The connection the calling thread serves.
struct ServedConnection {
  ClientStream* stream = nullptr;
  bool closing = false;  // the last response said the connection ends
};
thread_local ServedConnection served;

// Writes what the socket takes right now: the accepting thread must never block on a client.
void send_without_blocking(int socket, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t sent = ::send(socket, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent <= 0) return;
    bytes.remove_prefix(static_cast<size_t>(sent));
  }
}

std::string busy_response() {
  const std::string body =
      openai_error_body(503, "the proxy has too many open connections; retry shortly", "server_busy");
  return "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"
         "Connection: close\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

// Closes a connection whose client may still be sending (a request refused before its body was
// read): closing with unread bytes makes the kernel reset the connection, and the reset can
// destroy the answer before the client has read it. So the proxy stops sending, discards what
// still comes until the client closes (or 2 s, or 16 MiB), then closes.
void close_lingering(int socket) {
  ::shutdown(socket, SHUT_WR);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  size_t discarded = 0;
  char scratch[4096];
  while (discarded < (size_t{16} << 20)) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd entry{socket, POLLIN, 0};
    const int ready = ::poll(&entry, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) break;
    const ssize_t got = ::recv(socket, scratch, sizeof(scratch), MSG_DONTWAIT);
    if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN)) break;
    if (got > 0) discarded += static_cast<size_t>(got);
  }
  ::close(socket);
}

}  // namespace

int ProxyHttpServer::current_socket() { return served.stream != nullptr ? served.stream->socket() : -1; }

std::optional<int> ProxyHttpServer::read_failure_status() {
  if (served.stream == nullptr) return std::nullopt;
  if (served.stream->timed_out()) return 408;
  if (served.stream->over_budget()) return 413;
  return std::nullopt;
}

void ProxyHttpServer::response_was_written(const httplib::Request& request, const httplib::Response& response) {
  // httplib keeps a connection open unless the request asked otherwise; a response the proxy
  // marks `Connection: close` (one refused before its body was read) must close it too, or the
  // unread body would be parsed as the next request.
  served.closing = read_failure_status().has_value() || response.get_header_value("Connection") == "close" ||
                   request.get_header_value("Connection") == "close" ||
                   (request.version == "HTTP/1.0" && request.get_header_value("Connection") != "Keep-Alive");
}

bool ProxyHttpServer::set_listen_backlog(int backlog) {
  const socket_t listener = svr_sock_.load();
  return listener != INVALID_SOCKET && ::listen(listener, backlog) == 0;
}

void ProxyHttpServer::stop_listening() {
  const socket_t listener = svr_sock_.exchange(INVALID_SOCKET);
  if (listener == INVALID_SOCKET) return;
  ::shutdown(listener, SHUT_RDWR);
  ::close(listener);
}

void ProxyHttpServer::shutdown_connections() {
  std::lock_guard<std::mutex> lock(live_mutex_);
  for (const int socket : live_sockets_) ::shutdown(socket, SHUT_RDWR);
}

bool ProxyHttpServer::process_and_close_socket(socket_t socket) {
  if (http::ConnectionPool::refusing_this_connection()) {
    send_without_blocking(socket, busy_response());
    ::shutdown(socket, SHUT_RDWR);
    ::close(socket);
    return true;
  }
  {
    std::lock_guard<std::mutex> lock(live_mutex_);
    live_sockets_.insert(socket);
  }
  ClientStream stream(socket, limits_.write_timeout);
  served = {&stream, false};
  const auto stopping = [this] { return svr_sock_ == INVALID_SOCKET; };
  // httplib compresses a body when the client accepts a coding; a relay must not hold bytes back.
  const auto drop_accept_encoding = [](httplib::Request& request) { request.headers.erase("Accept-Encoding"); };
  bool result = true;
  for (size_t left = keep_alive_max_count_; left > 0 && !stopping(); --left) {
    // A new connection must send its request within the read timeout; a kept-alive one may idle,
    // unless a drain has begun.
    const bool first = left == keep_alive_max_count_;
    const auto give_up_waiting = [&] { return stopping() || (draining_ && !first); };
    if (!stream.wait_for_request(first ? limits_.read_timeout : limits_.keep_alive_idle, give_up_waiting)) break;
    stream.begin_request(ClientStream::Clock::now() + limits_.read_timeout,
                         limits_.max_head_bytes + limits_.max_body_bytes);
    served.closing = false;
    bool connection_closed = false;
    result = process_request(stream, left == 1 || stopping() || draining_, connection_closed, drop_accept_encoding);
    if (!result || connection_closed || served.closing) break;
  }
  const bool closing_early = served.closing;
  served = {};
  {
    // Off the list before the descriptor is closed: its number may be reused at once.
    std::lock_guard<std::mutex> lock(live_mutex_);
    live_sockets_.erase(socket);
  }
  if (closing_early) {
    close_lingering(socket);
  } else {
    ::shutdown(socket, SHUT_RDWR);
    ::close(socket);
  }
  return result;
}

}  // namespace lumen::proxy
