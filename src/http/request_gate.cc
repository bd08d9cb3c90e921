#include "http/request_gate.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "http/error_response.h"
#include "http/request_body_check.h"

namespace lumen::http {

namespace {

using HandlerResponse = httplib::Server::HandlerResponse;

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

bool route_takes(const Route& route, const std::string& method) {
  const auto listed = [&](std::string_view name) {
    return std::find(route.methods.begin(), route.methods.end(), name) != route.methods.end();
  };
  return listed(method) || (method == "HEAD" && listed("GET"));  // httplib answers HEAD from GET
}

// A refusal before the body is read: the connection closes, its unread body with it.
HandlerResponse refuse(httplib::Response& response, const ApiError& error) {
  response.set_header("Connection", "close");
  write_error(response, error);
  return HandlerResponse::Handled;
}

HandlerResponse answer_preflight(const Route& route, httplib::Response& response) {
  response.status = 204;
  response.set_header("Access-Control-Allow-Methods", join(route.methods) + ", OPTIONS");
  response.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type");
  response.set_header("Access-Control-Max-Age", "600");
  return HandlerResponse::Handled;
}

}  // namespace

HandlerResponse RequestGate::check(const httplib::Request& request, httplib::Response& response) const {
  const std::string host = request.get_header_value("Host");
  if (!rules_.hosts.allows(host)) {
    return refuse(
        response,
        ApiError(421, fmt::format("this server does not answer for host '{}' (--allowed-hosts)", host.substr(0, 100)),
                 "", "host_not_allowed"));
  }
  const Route* route = routes_.find(request.path);
  if (route == nullptr) return refuse(response, ApiError(404, "no such route", "", "not_found"));
  if (request.method == "OPTIONS" && rules_.cors.enabled()) return answer_preflight(*route, response);
  if (!route_takes(*route, request.method)) {
    response.set_header("Allow", join(route->methods));
    return refuse(response, ApiError(405,
                                     fmt::format("{} takes {}, not {}", request.path.substr(0, 200),
                                                 join(route->methods), request.method.substr(0, 16)),
                                     "", "method_not_allowed"));
  }
  if (route->access != Access::Public && !rules_.api_keys.empty()) {
    const std::string given = request.get_header_value("Authorization");
    if (!carries_api_key(given, rules_.api_keys)) {
      return refuse(response,
                    ApiError(401, given.empty() ? "missing API key (Authorization: Bearer ...)" : "invalid API key", "",
                             "invalid_api_key"));
    }
  }
  if (std::optional<BodyRefusal> refusal = body_refusal(request, rules_.max_body_bytes)) {
    return refuse(response, ApiError(refusal->status, refusal->message, "", refusal->code));
  }
  if (rules_.json_bodies_only && request.method == "POST" &&
      !acceptable_body_type(request.get_header_value("Content-Type"))) {
    // Checked before httplib reads the body (it caps form-encoded bodies at 8 KB with a 413
    // that hid the real problem: `curl -d` sends application/x-www-form-urlencoded).
    return refuse(response,
                  ApiError(415,
                           fmt::format("the request body must be JSON, sent with 'Content-Type: application/json' "
                                       "(got '{}'; with curl: -H 'Content-Type: application/json')",
                                       media_type(request.get_header_value("Content-Type"))),
                           "", "unsupported_media_type"));
  }
  return HandlerResponse::Unhandled;
}

void RequestGate::add_cors_headers(const httplib::Request& request, httplib::Response& response) const {
  if (!rules_.cors.enabled()) return;
  if (const std::optional<std::string> origin = rules_.cors.allow_origin(request.get_header_value("Origin"))) {
    response.set_header("Access-Control-Allow-Origin", *origin);
    response.set_header("Vary", "Origin");
  }
}

void RequestGate::register_handlers(httplib::Server& server) const {
  for (const Route& route : routes_.routes()) {
    const std::string pattern = httplib_pattern(route.path);
    for (const std::string& method : route.methods) {
      if (method == "GET") server.Get(pattern, route.handler);
      if (method == "POST") server.Post(pattern, route.handler);
      if (method == "PUT") server.Put(pattern, route.handler);
      if (method == "DELETE") server.Delete(pattern, route.handler);
    }
  }
}

}  // namespace lumen::http
