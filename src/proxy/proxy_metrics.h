#pragma once
// The proxy's own Prometheus metrics (text exposition format 0.0.4), served at GET /metrics:
//   lumen_proxy_requests_total{route}                       requests by route ("other": the rest)
//   lumen_proxy_prefill_fallbacks_total                     requests sent on without K/V from a prefill
//   lumen_proxy_unauthorized_total                          requests refused for a missing or wrong API key
//   lumen_proxy_upstream_failures_total{role,upstream}      instances unreachable, timed out, 5xx...
//   lumen_proxy_upstream_requests_in_flight{role,upstream}  gauge: requests at each instance now
//   lumen_proxy_prefill_seconds                             histogram of the prefill step
// Labels come only from the route table and the configured instance URLs, never from a client,
// so a client cannot grow the metrics without bound. Thread-safe.
#include <array>
#include <atomic>
#include <cstdint>
#include <string>

#include "proxy/route_label.h"
#include "proxy/seconds_histogram.h"
#include "proxy/upstream_pool.h"

namespace lumen::proxy {

class ProxyMetrics {
 public:
  ProxyMetrics();

  void count_request(Route route) { requests_[static_cast<size_t>(route)] += 1; }
  void count_prefill_fallback() { prefill_fallbacks_ += 1; }
  void count_unauthorized() { unauthorized_ += 1; }
  void observe_prefill_seconds(double seconds) { prefill_seconds_.observe(seconds); }

  std::string render(const UpstreamPool& prefill, const UpstreamPool& decode) const;

 private:
  std::array<std::atomic<uint64_t>, kRouteCount> requests_{};
  std::atomic<uint64_t> prefill_fallbacks_{0};
  std::atomic<uint64_t> unauthorized_{0};
  SecondsHistogram prefill_seconds_;
};

}  // namespace lumen::proxy
