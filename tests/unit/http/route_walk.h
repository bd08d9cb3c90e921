#pragma once
// Walks a route table through the request gate with API keys set and no key sent: what each
// route and method answered. Shared by the tests of serve's and the proxy's tables, which
// prove that every route not marked public refuses the request before its handler runs.
#include <httplib.h>

#include <string>
#include <vector>

#include "http/request_gate.h"
#include "http/route_table.h"

namespace lumen::http::testing {

struct WalkedRoute {
  std::string path;
  std::string method;
  Access access;
  int status;  // the gate's answer; 0 when it let the request through to the handler
};

// A request for a route's path (a prefix route's '*' made concrete) and method, without a key.
inline httplib::Request request_without_key(const Route& route, const std::string& method) {
  httplib::Request request;
  request.method = method;
  request.path = route.path.back() == '*' ? route.path.substr(0, route.path.size() - 1) + "m" : route.path;
  request.headers.emplace("Host", "localhost");
  if (method == "POST") {
    request.headers.emplace("Content-Length", "2");
    request.headers.emplace("Content-Type", "application/json");
  }
  return request;
}

inline std::vector<WalkedRoute> walk_without_key(const RouteTable& table) {
  GateRules rules;
  rules.api_keys = {"secret"};
  const RequestGate gate(table, rules);
  std::vector<WalkedRoute> walked;
  for (const Route& route : table.routes()) {
    for (const std::string& method : route.methods) {
      httplib::Response response;
      const bool handled =
          gate.check(request_without_key(route, method), response) == httplib::Server::HandlerResponse::Handled;
      walked.push_back({route.path, method, route.access, handled ? response.status : 0});
    }
  }
  return walked;
}

}  // namespace lumen::http::testing
