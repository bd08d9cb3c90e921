#pragma once
// What `lumen serve --role proxy` is told on its command line.
#include <cstddef>
#include <string>
#include <vector>

namespace lumen::proxy {

struct ProxyOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                          // 0: any free port (bind() says which)
  std::vector<std::string> prefill;         // http://host:port of each prefill instance (at least one)
  std::vector<std::string> decode;          // http://host:port of each decode instance (at least one)
  size_t max_body_bytes = size_t{1} << 20;  // a larger request body is a 413
  double upstream_timeout_s = 600;          // the prefill step's whole exchange; each read from a decode
  // Connections served at once (each streaming client holds one thread); past them up to
  // max_queued_connections wait, the rest get a 503 at once. Debian's cpp-httplib waits on
  // sockets with select(), which cannot watch a descriptor past 1023, and a generation request
  // holds two (its client's and its instance's): past about 480 at once, new ones fail (503).
  int http_threads = 512;
  int max_queued_connections = 64;
  // Host headers answered (a DNS-rebinding defence, as `lumen serve --allowed-hosts`): empty
  // means loopback names only when bound to a loopback address, any otherwise; "*" is any.
  std::vector<std::string> allowed_hosts;
  double shutdown_grace_s = 30;  // how long shutdown() lets in-flight requests finish
  double request_read_timeout_s = 30;  // a request's head and body must arrive within it (408)
  // The client-facing rules of `lumen serve` (http/http_policy.h), applied the same way: with
  // keys, every route but /health needs `Authorization: Bearer KEY` (one of them), /metrics too
  // unless metrics_public; CORS answers only the listed origins ("*": any; empty: no CORS).
  std::vector<std::string> api_keys;
  bool metrics_public = false;
  std::vector<std::string> cors_origins;
};

}  // namespace lumen::proxy
