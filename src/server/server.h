#pragma once
// `lumen serve`'s HTTP side: cpp-httplib with a thread per connection (handlers block on their
// request's stream), OpenAI-shaped errors for everything that goes wrong, an optional API key,
// a body size limit, JSON-only bodies, 405 for a known route's wrong method, CORS when asked
// for, an access log with request ids, and a graceful shutdown. Its routes are listed once, in
// server_routes.h; the rules every request passes first are src/http's request_gate.h; the
// bounds on connections, request heads and read time are its guarded_http_server.h.
#include <httplib.h>

#include <cstddef>
#include <string>
#include <vector>

#include "http/guarded_http_server.h"
#include "http/http_policy.h"
#include "http/request_gate.h"
#include "server/access_log.h"
#include "server/server_context.h"
#include "server/server_routes.h"

namespace lumen::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                         // 0: any free port (bind() says which)
  std::vector<std::string> api_keys;       // empty: no authentication; any one of them admits
  bool metrics_public = false;             // /metrics without the API key
  bool web_ui = true;                      // the chat page at / (web_assets.h)
  http::CorsPolicy cors;                   // browser origins allowed (none by default)
  std::vector<std::string> allowed_hosts;  // Host names answered (HostPolicy; empty: its default)
  LogLevel log_level = LogLevel::Info;
  size_t max_body_bytes = size_t{1} << 20;
  // Connections served at once (each streaming client, and each client still sending its
  // request, holds one thread); past them up to max_queued_connections wait, the rest get 503.
  int http_threads = 512;
  int max_queued_connections = 64;
  http::ConnectionLimits connection;  // request head bounds and the read deadline
  double shutdown_grace_s = 30.0;     // how long shutdown() lets in-flight requests finish
};

class Server {
 public:
  Server(ServerContext& context, ServerOptions options);
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds the listening socket; returns the port. Throws lumen::Error when it cannot.
  int bind();
  // Accepts connections until shutdown(); returns once every connection's handler has returned.
  void serve();
  // From another thread: refuse new requests (503), stop accepting connections, give in-flight
  // requests the grace period, then abort those still running (their clients get a final
  // error event or a 503) and, a second later, shut down every connection still open (a
  // client that stopped reading cannot hold the process). serve() returns soon after.
  void shutdown();

 private:
  // A route function bound to the context, with what it throws turned into OpenAI errors.
  http::Handler guarded(RouteFunction route);
  void install_handlers();

  ServerContext& context_;
  ServerOptions options_;
  const http::RequestGate gate_;
  http::GuardedHttpServer http_;
};

}  // namespace lumen::server
