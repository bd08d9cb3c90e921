#pragma once
// cpp-httplib's server with the bounds it lacks (Debian's httplib is a compiled 0.11.4; see
// docs/architecture.md, "The HTTP library, and the bounds around it"). It replaces the one
// virtual hook httplib offers per connection, process_and_close_socket, with its own
// keep-alive loop over a GuardedStream, and runs httplib's request parser (process_request)
// over that stream. Before httplib reads a request, its head must have arrived whole, within
// HeadLimits (431 otherwise), and in time (408); its body must arrive by the same deadline and
// within the body limit; a connection the ConnectionPool refuses gets a 503.
#include <httplib.h>

#include <chrono>
#include <cstddef>
#include <optional>

#include "http/api_error.h"
#include "http/live_connections.h"
#include "http/raw_response.h"
#include "http/request_head.h"

namespace lumen::http {

struct ConnectionLimits {
  HeadLimits head;
  std::chrono::milliseconds read_timeout{30'000};    // head + body of one request
  std::chrono::milliseconds keep_alive_idle{5'000};  // an idle kept-alive connection closes
  std::chrono::milliseconds write_timeout{5'000};    // a client that stops reading
  size_t max_body_bytes = size_t{1} << 20;
};

class GuardedHttpServer : public httplib::Server {
 public:
  explicit GuardedHttpServer(ConnectionLimits limits) : limits_(limits) {}

  // The socket of the connection the calling thread serves, or -1.
  static int current_socket();
  // From the error handler: the error a failed read of the current request is really about
  // (408 past its deadline, 413 past its byte budget), if that is why it failed.
  static std::optional<ApiError> read_failure();
  // From the logger, once a response is written: whether the connection must close after it.
  void response_was_written(const httplib::Request& request, const httplib::Response& response);
  // The end of a drain: every open connection is shut down.
  void shutdown_connections() { live_.shutdown_all(); }
  // After bind: lets the kernel hold `backlog` connections not yet accepted. httplib listens
  // with a backlog of 5, so 64 clients reconnecting at once (a batch's streams all end in the
  // same step) overflowed it and the kernel dropped connections the clients had already sent
  // their requests on ("the connection broke while reading the response"). Returns false when
  // the socket is not bound.
  bool set_listen_backlog(int backlog);

 protected:
  bool process_and_close_socket(socket_t socket) override;

 private:
  // Answers `error` on a connection where httplib has not started a request, and closes it.
  void refuse(socket_t socket, const ApiError& error);

  const ConnectionLimits limits_;
  LiveConnections live_;
  LingeringCloser closer_;
};

}  // namespace lumen::http
