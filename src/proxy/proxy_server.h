#pragma once
// The routing proxy of disaggregated prefill/decode. For each POST /v1/completions or
// /v1/chat/completions it
//   1. posts the client's body, unchanged, to a prefill instance and waits for its whole answer;
//      a 200 carrying `X-Lumen-KV-Transfer` says where that instance keeps the prompt's K/V;
//   2. on any failure of that step goes on without it (the decode instance then computes the
//      prompt itself, so the client gets the same answer; counted as a fallback);
//   3. posts the same body to a decode instance, with the transfer header when there is one, and
//      relays the decode's status, Content-Type and body to the client as they arrive (SSE chunk
//      by chunk); a decode that cannot be connected to is skipped for the next one.
// Instances are picked by fewest requests in flight through this proxy, ties in turn. GET
// /health is 200 while some decode instance is healthy, GET /v1/models is a decode's answer,
// GET /metrics the proxy's own Prometheus counters. Before any route, the client-facing rules
// of `lumen serve` (http/http_policy.h): API keys (every route but /health, /metrics unless
// public), CORS for the listed origins with preflights, Host names. The body is never parsed or rewritten; of
// the client's headers only Authorization is passed on (a client's X-Lumen-KV-Transfer never
// is), and of an instance's only Content-Type (and the prefill's transfer header, to the decode).
//
// The process should ignore SIGPIPE (cpp-httplib writes to sockets without MSG_NOSIGNAL).
#include <memory>

#include "proxy/proxy_options.h"

namespace lumen::proxy {

class ProxyServer {
 public:
  // Checks the options: instance URLs must be http://host:port, at least one of each role.
  // Throws lumen::Error naming the problem.
  explicit ProxyServer(ProxyOptions options);
  ~ProxyServer();  // not copyable: it owns its listening socket through state_

  // Binds the listening socket; returns the port (the one chosen when options.port is 0).
  // Throws lumen::Error when it cannot.
  int bind();
  // Accepts connections until shutdown(); returns once every connection's handler has returned.
  void serve();
  // From another thread (or before serve()): stop accepting, let in-flight requests finish for
  // the grace period, then cut the rest (their upstream exchanges are closed, so the instances
  // abort them) and shut every client connection down. Returns when that is done.
  void shutdown();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace lumen::proxy
