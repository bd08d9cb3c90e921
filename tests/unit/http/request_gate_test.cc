// The gate every request passes before its handler: unknown paths are 404 before any handler,
// wrong methods 405 with Allow, keyed routes 401 without the key, preflights 204 without it.
#include "http/request_gate.h"

#include <gtest/gtest.h>

namespace lumen::http {
namespace {

using Verdict = httplib::Server::HandlerResponse;

Handler noop() {
  return [](const httplib::Request&, httplib::Response&) {};
}

RequestGate gate(std::vector<std::string> keys, CorsPolicy cors = {}) {
  return RequestGate(RouteTable({{"/health", {"GET"}, Access::Public, noop()},
                                 {"/v1/completions", {"POST"}, Access::ApiKey, noop()},
                                 {"/v1/models/*", {"GET"}, Access::ApiKey, noop()}}),
                     GateRules{.api_keys = std::move(keys),
                               .hosts = HostPolicy({}, true),
                               .cors = std::move(cors),
                               .max_body_bytes = 100,
                               .json_bodies_only = true});
}

httplib::Request request(std::string method, std::string path, httplib::Headers headers = {}) {
  httplib::Request r;
  r.method = std::move(method);
  r.path = std::move(path);
  r.headers = std::move(headers);
  r.headers.emplace("Host", "localhost");
  if (r.method == "POST") r.headers.emplace("Content-Length", "2");
  return r;
}

// The status the gate answered with; 0 when it let the request through.
int status_of(const RequestGate& g, const httplib::Request& r, httplib::Response* out = nullptr) {
  httplib::Response response;
  const Verdict verdict = g.check(r, response);
  if (out != nullptr) *out = response;
  return verdict == Verdict::Handled ? response.status : 0;
}

TEST(RequestGate, APathNotInTheTableIs404WhateverItCarries) {
  const RequestGate g = gate({"k"});
  EXPECT_EQ(status_of(g, request("GET", "/nope")), 404);
  EXPECT_EQ(status_of(g, request("POST", "/v1/completions/")), 404);
  EXPECT_EQ(status_of(g, request("GET", "/nope", {{"Authorization", "Bearer k"}})), 404);
}

TEST(RequestGate, AMethodTheRouteDoesNotListIs405WithAllow) {
  httplib::Response response;
  EXPECT_EQ(status_of(gate({}), request("GET", "/v1/completions"), &response), 405);
  EXPECT_EQ(response.get_header_value("Allow"), "POST");
  EXPECT_EQ(response.get_header_value("Connection"), "close");
  EXPECT_EQ(status_of(gate({}), request("HEAD", "/health")), 0);       // HEAD is answered from GET
  EXPECT_EQ(status_of(gate({}), request("OPTIONS", "/health")), 405);  // no CORS, no preflight
}

TEST(RequestGate, KeyedRoutesNeedTheKeyPublicOnesDoNot) {
  const RequestGate g = gate({"k1", "k2"});
  EXPECT_EQ(status_of(g, request("POST", "/v1/completions")), 401);
  EXPECT_EQ(status_of(g, request("POST", "/v1/completions", {{"Authorization", "Bearer k3"}})), 401);
  EXPECT_EQ(status_of(g, request("GET", "/v1/models/m")), 401);
  EXPECT_EQ(status_of(g, request("POST", "/v1/completions", {{"Authorization", "Bearer k2"}})), 0);
  EXPECT_EQ(status_of(g, request("GET", "/health")), 0);
  EXPECT_EQ(status_of(gate({}), request("POST", "/v1/completions")), 0);  // no keys set: open
}

TEST(RequestGate, PreflightsNameTheRouteMethodsWithoutTheKey) {
  const RequestGate g = gate({"k"}, CorsPolicy({"http://localhost:3000"}));
  httplib::Response response;
  EXPECT_EQ(status_of(g, request("OPTIONS", "/v1/completions"), &response), 204);
  EXPECT_EQ(response.get_header_value("Access-Control-Allow-Methods"), "POST, OPTIONS");
  EXPECT_EQ(status_of(g, request("OPTIONS", "/nope")), 404);
}

TEST(RequestGate, HostAndBodyRulesComeFromTheHttpPolicy) {
  const RequestGate g = gate({});
  httplib::Request evil = request("GET", "/health");
  evil.headers.erase("Host");
  evil.headers.emplace("Host", "attacker.example");
  EXPECT_EQ(status_of(g, evil), 421);
  httplib::Request big = request("GET", "/health", {{"Content-Length", "101"}});
  EXPECT_EQ(status_of(g, big), 413);
  EXPECT_EQ(status_of(g, request("POST", "/v1/completions", {{"Content-Type", "text/plain"}})), 415);
}

}  // namespace
}  // namespace lumen::http
