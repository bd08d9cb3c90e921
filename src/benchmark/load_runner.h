#pragma once
// Drives a load test: request i is released at its arrival time (seconds from the start) and
// sent by the next free worker, on a connection of its own. With
// max_concurrency C there are C workers, so at most C requests are in flight and a released
// request waits for a free one (rate-limited arrivals capped at C); without it there is a
// worker per request.
#include <httplib.h>

#include <cstdint>
#include <string>
#include <vector>

#include "benchmark/request_result.h"
#include "benchmark/server_target.h"

namespace lumen::benchmark {

struct LoadOptions {
  ServerTarget target;
  httplib::Headers headers;
  int64_t max_concurrency = 0;  // 0: no limit
  double timeout_s = 600;       // per read of the response
  bool progress = false;        // draw a progress bar on stderr
};

struct LoadRun {
  std::vector<RequestResult> results;  // in request order
  double duration_s = 0;               // from the start to the last response's end
  int64_t peak_in_flight = 0;
};

LoadRun run_load(const LoadOptions& options, const std::vector<std::string>& bodies,
                 const std::vector<double>& arrivals);

}  // namespace lumen::benchmark
