#pragma once
// The routes the proxy answers, as its one route table (http/route_table.h), the same form as
// `lumen serve`'s: the generation routes and /v1/models need the key (when keys are set),
// /health never does, /metrics unless --metrics-public.
#include "http/route_table.h"
#include "proxy/proxy_context.h"

namespace lumen::proxy {

// The handlers serve `context`, which must outlive the table.
http::RouteTable proxy_route_table(ProxyContext& context);

}  // namespace lumen::proxy
