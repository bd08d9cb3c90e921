#pragma once
// cpp-httplib's server with the bounds it lacks (Debian's httplib is a compiled 0.11.4; see
// docs/server.md, "The HTTP library, and the bounds around it"), for `lumen serve` and the
// proxy alike. It replaces the one virtual hook httplib offers per connection,
// process_and_close_socket, with its own keep-alive loop over a GuardedStream, and runs
// httplib's request parser (process_request) over that stream. Before httplib reads a request,
// its head must have arrived whole, within HeadLimits (431 otherwise), and in time (408); its
// body must arrive by the same deadline and within the body limit; a connection the
// ConnectionPool refuses gets a 503. Statuses httplib decides on by itself get an OpenAI-shaped
// body (error_response.h).
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

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
  // Connections served at once (a streaming client, or one still sending its request, holds a
  // thread); past them up to `max_queued_connections` wait, the rest get 503 (connection_pool.h).
  size_t max_threads = 512;
  size_t max_queued_connections = 64;
};

class GuardedHttpServer : public httplib::Server {
 public:
  explicit GuardedHttpServer(ConnectionLimits limits);

  // The socket of the connection the calling thread serves, or -1.
  static int current_socket();
  // From the error handler: the error a failed read of the current request is really about
  // (408 past its deadline, 413 past its byte budget), if that is why it failed.
  static std::optional<ApiError> read_failure();
  // From the logger, once a response is written: whether the connection must close after it.
  static void response_was_written(const httplib::Request& request, const httplib::Response& response);

  // Binds `host`:`port` (0: any free port) and lets the kernel hold as many connections not yet
  // accepted as the server would take at once (its threads and its queue): httplib listens with
  // a backlog of 5, so 64 clients reconnecting at once (a batch's streams all end in the same
  // step) overflowed it and the kernel dropped connections whose requests were already sent.
  // Returns the port; throws lumen::Error when it cannot listen.
  int bind_listener(const std::string& host, int port);
  // Clients' Accept-Encoding is dropped, so httplib never compresses a body: a relay must not
  // hold bytes back (gzip would keep SSE events until its buffer filled).
  void never_compress() { never_compress_ = true; }
  // From now on each connection closes after the request it is serving (a drain has begun).
  void close_connections_after_their_request() { draining_ = true; }
  // Stops accepting connections. Unlike httplib's stop(), it also works before serving has
  // begun (listen_after_bind then returns at once), so a shutdown cannot slip past a start.
  // httplib stops calling content providers once the listener is gone: streams under way end
  // unfinished, so a drain that must let them finish stops listening only when its grace is over.
  void stop_listening();
  // The end of a drain: every open connection is shut down.
  void shutdown_connections() { live_.shutdown_all(); }

 protected:
  bool process_and_close_socket(socket_t socket) override;

 private:
  // Answers `error` on a connection where httplib has not started a request, and closes it.
  void refuse(socket_t socket, const ApiError& error);
  bool stopping() const { return svr_sock_ == INVALID_SOCKET; }

  const ConnectionLimits limits_;
  std::atomic<bool> draining_{false};
  bool never_compress_ = false;
  LiveConnections live_;
  LingeringCloser closer_;
};

}  // namespace lumen::http
