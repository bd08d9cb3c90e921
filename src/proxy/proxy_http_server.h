#pragma once
// cpp-httplib's server with the bounds its Debian build (0.11.4) lacks, for the proxy. It
// replaces the one per-connection hook httplib offers, process_and_close_socket, with its own
// keep-alive loop over a ClientStream, and runs httplib's request parser (process_request) over
// it. So each request is read within one deadline and one byte budget; connections run on
// `lumen serve`'s server::ConnectionPool (a full one is answered 503 at once); the socket of the
// connection a thread serves is known (the relay watches it for a hang-up); a response marked
// `Connection: close` ends its connection; and clients' Accept-Encoding is dropped, so httplib
// never compresses a relayed body (gzip would hold SSE events back until its buffer filled).
// Its stream is its own (client_stream.h) rather than the server's GuardedStream, which also
// checks a request's head against HeadLimits before httplib parses it.
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <mutex>
#include <optional>
#include <set>

namespace lumen::proxy {

struct ConnectionLimits {
  std::chrono::milliseconds read_timeout{30'000};    // head and body of one request
  std::chrono::milliseconds keep_alive_idle{5'000};  // an idle kept-alive connection closes
  std::chrono::milliseconds write_timeout{10'000};   // a client that stops reading
  size_t max_head_bytes = 64 * 1024;
  size_t max_body_bytes = size_t{1} << 20;
};

class ProxyHttpServer : public httplib::Server {
 public:
  explicit ProxyHttpServer(ConnectionLimits limits) : limits_(limits) {}

  // The socket of the connection the calling thread serves, or -1.
  static int current_socket();
  // From the error handler: the status a failed read of the current request really deserves
  // (408 past its deadline, 413 past its byte budget), if that is why it failed.
  static std::optional<int> read_failure_status();
  // From the logger, once a response is written: notes whether the connection must close.
  static void response_was_written(const httplib::Request& request, const httplib::Response& response);
  // From now on each connection closes after the request it is serving (a drain has begun).
  void close_connections_after_their_request() { draining_ = true; }
  // Stops accepting connections. Unlike httplib's stop(), it also works before serving has
  // begun (listen_after_bind then returns at once), so a shutdown cannot slip past a start.
  // httplib stops calling content providers once the listener is gone: streams under way end
  // unfinished, so a drain stops listening only when its grace is over.
  void stop_listening();
  // After bind: room for `backlog` connections not yet accepted (httplib listens with 5, and a
  // burst of clients reconnecting at once overflowed it: GuardedHttpServer::set_listen_backlog).
  bool set_listen_backlog(int backlog);
  // Shuts every open client connection down (the end of a drain).
  void shutdown_connections();

 private:
  bool process_and_close_socket(socket_t socket) override;

  const ConnectionLimits limits_;
  std::atomic<bool> draining_{false};
  std::mutex live_mutex_;
  std::set<int> live_sockets_;
};

}  // namespace lumen::proxy
