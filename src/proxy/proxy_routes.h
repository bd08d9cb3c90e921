#pragma once
// The proxy's route handlers, each called once the request has passed the gate of its route
// table (http/request_gate.h): generation (generation_route.cc) and the rest (info_routes.cc).
#include <httplib.h>

#include "proxy/proxy_context.h"
#include "proxy/route_label.h"

namespace lumen::proxy {

// POST /v1/completions and /v1/chat/completions: prefill, then decode, relayed as it arrives.
void serve_generation(ProxyContext& proxy, Route route, const httplib::Request& request, httplib::Response& response);
// GET /v1/models: a decode instance's answer.
void serve_models(ProxyContext& proxy, const httplib::Request& request, httplib::Response& response);
// GET /health: 200 while some decode instance answers its /health with 200, else 503.
void serve_health(ProxyContext& proxy, httplib::Response& response);
// GET /metrics: the proxy's own counters.
void serve_metrics(const ProxyContext& proxy, httplib::Response& response);

}  // namespace lumen::proxy
