#pragma once
// What every request passes before its route's handler runs, driven by the route table
// (route_table.h) and the same for `lumen serve` and the proxy. In order: the Host header
// (421), a CORS preflight (204 with the route's methods, without the key: browsers send none),
// a path not in the table (404), a method the route does not list (405 + Allow), the API key
// for a route that needs it (401), the body's framing (411/413/415/501/400, before any of it is
// read) and, where asked, its media type (415). A refusal closes the connection, since the body
// stays unread.
#include <httplib.h>

#include <cstddef>
#include <string>
#include <vector>

#include "http/http_policy.h"
#include "http/route_table.h"

namespace lumen::http {

struct GateRules {
  std::vector<std::string> api_keys;  // empty: no route needs a key; any one of them admits
  HostPolicy hosts;
  CorsPolicy cors;
  size_t max_body_bytes = size_t{1} << 20;
  // POST bodies must be JSON (`lumen serve` parses them; the proxy passes them on unread).
  bool json_bodies_only = false;
};

class RequestGate {
 public:
  RequestGate(RouteTable routes, GateRules rules) : routes_(std::move(routes)), rules_(std::move(rules)) {}

  // For the pre-routing handler: Handled when the gate answered the request itself.
  httplib::Server::HandlerResponse check(const httplib::Request& request, httplib::Response& response) const;
  // For the post-routing handler: every answer, errors and preflights included, names an
  // allowed origin back to it.
  void add_cors_headers(const httplib::Request& request, httplib::Response& response) const;
  // Gives httplib each route's handler, for each of its methods.
  void register_handlers(httplib::Server& server) const;

  const RouteTable& routes() const { return routes_; }

 private:
  const RouteTable routes_;
  const GateRules rules_;
};

}  // namespace lumen::http
