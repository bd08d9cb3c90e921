#pragma once
// `lumen serve --role proxy`: the routing proxy of disaggregated prefill/decode (proxy/), run
// until SIGINT or SIGTERM.
#include "proxy/proxy_options.h"

namespace lumen::cli {

// Binds, says where it listens on stderr, and serves until SIGINT/SIGTERM: the first signal
// drains (in-flight requests get the grace period), a second one exits at once with status
// 128 + the signal. Returns the exit status (0 after a drain). Throws lumen::Error for bad
// options (an instance URL that is not http://host:port, no --prefill or --decode) or a port it
// cannot listen on.
int serve_proxy(const proxy::ProxyOptions& options);

}  // namespace lumen::cli
