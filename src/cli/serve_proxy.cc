// `lumen serve --role proxy`: the proxy's server, stopped as every role of `lumen serve` is
// (serve_until_stopped.h).
#include "cli/serve_proxy.h"

#include <fmt/format.h>

#include <cstdio>
#include <string>
#include <vector>

#include "cli/serve_until_stopped.h"
#include "proxy/proxy_server.h"

namespace lumen::cli {

namespace {

std::string joined(const std::vector<std::string>& urls) {
  std::string out;
  for (const std::string& url : urls) out += (out.empty() ? "" : " ") + url;
  return out;
}

}  // namespace

int serve_proxy(const proxy::ProxyOptions& options) {
  const sigset_t stop_signals = block_stop_signals();  // before any thread starts
  proxy::ProxyServer server(options);  // checks the options (throws lumen::Error)
  const int port = server.bind();
  fmt::print(stderr, "lumen serve: proxy listening on http://{}:{} (prefill: {}, decode: {})\n", options.host, port,
             joined(options.prefill), joined(options.decode));
  std::fflush(stderr);

  serve_until_stopped(stop_signals, options.shutdown_grace_s, [&server] { server.serve(); },
                      [&server] { server.shutdown(); });
  fmt::print(stderr, "lumen serve: proxy stopped\n");
  return 0;
}

}  // namespace lumen::cli
