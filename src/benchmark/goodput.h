#pragma once
// Goodput: the rate of requests that met every service-level objective given, e.g.
// `--goodput ttft:500 tpot:50` (milliseconds). The metrics are ttft (time to first token),
// tpot (time per output token after the first) and e2el (end-to-end latency).
#include <optional>
#include <span>
#include <string>

#include "benchmark/request_result.h"

namespace lumen::benchmark {

struct ServiceLevelObjectives {
  std::optional<double> ttft_ms, tpot_ms, e2el_ms;

  bool empty() const { return !ttft_ms && !tpot_ms && !e2el_ms; }
};

// Parses "name:milliseconds" items; throws lumen::Error naming a bad one.
ServiceLevelObjectives parse_slos(std::span<const std::string> items);

// A successful request whose every measured metric is within its objective.
bool meets_slos(const RequestResult& request, const ServiceLevelObjectives& slos);

}  // namespace lumen::benchmark
