#include "proxy/proxy_metrics.h"

#include <fmt/format.h>

namespace lumen::proxy {

namespace {

// A label value as the exposition format wants it (the URLs are validated; this is belt and braces).
std::string label_value(const std::string& value) {
  std::string out;
  for (const char c : value) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

}  // namespace

// Prefill steps run from milliseconds (a short prompt) to minutes (a long one on a busy instance).
ProxyMetrics::ProxyMetrics()
    : prefill_seconds_({0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}) {}

std::string ProxyMetrics::render(const UpstreamPool& prefill, const UpstreamPool& decode) const {
  std::string out;
  out += "# HELP lumen_proxy_requests_total Requests received, by route.\n# TYPE lumen_proxy_requests_total counter\n";
  for (size_t i = 0; i < kRouteCount; ++i) {
    out += fmt::format("lumen_proxy_requests_total{{route=\"{}\"}} {}\n", route_label(static_cast<Route>(i)),
                       requests_[i].load());
  }
  out +=
      "# HELP lumen_proxy_prefill_fallbacks_total Generation requests sent to a decode instance without K/V "
      "from a prefill instance (the prefill step failed).\n# TYPE lumen_proxy_prefill_fallbacks_total counter\n";
  out += fmt::format("lumen_proxy_prefill_fallbacks_total {}\n", prefill_fallbacks_.load());
  out +=
      "# HELP lumen_proxy_unauthorized_total Requests refused (401) for a missing or wrong API key.\n"
      "# TYPE lumen_proxy_unauthorized_total counter\n";
  out += fmt::format("lumen_proxy_unauthorized_total {}\n", unauthorized_.load());

  const std::array<const UpstreamPool*, 2> pools = {&prefill, &decode};
  out +=
      "# HELP lumen_proxy_upstream_failures_total Exchanges with an instance that failed (unreachable, timed "
      "out, broken off, or a 5xx).\n# TYPE lumen_proxy_upstream_failures_total counter\n";
  for (const UpstreamPool* pool : pools) {
    for (const UpstreamPool::InstanceState& state : pool->states()) {
      out += fmt::format("lumen_proxy_upstream_failures_total{{role=\"{}\",upstream=\"{}\"}} {}\n", pool->role(),
                         label_value(state.url), state.failures);
    }
  }
  out +=
      "# HELP lumen_proxy_upstream_requests_in_flight Requests this proxy has at each instance now.\n"
      "# TYPE lumen_proxy_upstream_requests_in_flight gauge\n";
  for (const UpstreamPool* pool : pools) {
    for (const UpstreamPool::InstanceState& state : pool->states()) {
      out += fmt::format("lumen_proxy_upstream_requests_in_flight{{role=\"{}\",upstream=\"{}\"}} {}\n", pool->role(),
                         label_value(state.url), state.in_flight);
    }
  }
  prefill_seconds_.render(out, "lumen_proxy_prefill_seconds",
                          "Seconds of the prefill step, from sending to the whole answer.");
  return out;
}

}  // namespace lumen::proxy
