#pragma once
// What the proxy's routes share: its options, the two instance pools, the metrics, the upstream
// exchanges under way (for shutdown to cut), and whether it is draining.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <utility>
#include <vector>

#include "proxy/proxy_metrics.h"
#include "proxy/proxy_options.h"
#include "proxy/upstream_address.h"
#include "proxy/upstream_call.h"
#include "proxy/upstream_pool.h"

namespace lumen::proxy {

struct ProxyContext {
  ProxyContext(ProxyOptions proxy_options, std::vector<UpstreamAddress> prefill_instances,
               std::vector<UpstreamAddress> decode_instances)
      : options(std::move(proxy_options)),
        prefill("prefill", std::move(prefill_instances)),
        decode("decode", std::move(decode_instances)) {}

  const ProxyOptions options;
  UpstreamPool prefill;
  UpstreamPool decode;
  ProxyMetrics metrics;
  CallRegistry calls;
  std::atomic<bool> draining{false};
  std::atomic<int64_t> generations_in_flight{0};

  std::chrono::milliseconds upstream_timeout() const {
    return std::chrono::milliseconds(static_cast<int64_t>(options.upstream_timeout_s * 1000.0));
  }
  // For generation requests: connecting is quick or never (an instance that is down should be
  // skipped soon), reading may wait as long as generating takes.
  UpstreamTimeouts generation_timeouts() const {
    const std::chrono::milliseconds timeout = upstream_timeout();
    return {std::min(timeout, std::chrono::milliseconds(5'000)), timeout, timeout};
  }
};

}  // namespace lumen::proxy
