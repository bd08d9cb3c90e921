#pragma once
// The routes `lumen serve` answers, as its one route table (http/route_table.h): the only place
// a route is listed, with its methods and whether it needs the API key. The caller says how a
// route function becomes an httplib handler (the server binds its context and turns exceptions
// into OpenAI errors; a test can bind anything), so the table can be checked without an engine.
#include <httplib.h>

#include <functional>

#include "http/route_table.h"
#include "server/server_context.h"

namespace lumen::server {

using RouteFunction = void (*)(ServerContext&, const httplib::Request&, httplib::Response&);
using BindRoute = std::function<http::Handler(RouteFunction)>;

struct RouteChoices {
  bool metrics_public = false;  // /metrics without the API key (--metrics-public)
  bool web_ui = true;           // the chat page's files at / (web_assets.h)
};

http::RouteTable server_route_table(const RouteChoices& choices, const BindRoute& bind_route);

}  // namespace lumen::server
