#pragma once
// Summaries of a latency sample (TTFT, TPOT, ITL, end-to-end): mean, standard deviation,
// extremes and percentiles. Percentiles interpolate linearly between the two nearest ranks
// (numpy's default), so they agree with the Python serving benchmarks people compare against.
#include <cstddef>
#include <span>
#include <vector>

namespace lumen::benchmark {

// The p-th percentile (0..100) of values sorted ascending; NaN when there are none.
double percentile_of_sorted(std::span<const double> sorted, double p);

struct LatencySummary {
  size_t count = 0;
  double mean = 0, stddev = 0, min = 0, max = 0;
  double p50 = 0, p90 = 0, p99 = 0;
};

// All fields 0 (count 0) for an empty sample.
LatencySummary summarize(std::vector<double> values);

}  // namespace lumen::benchmark
