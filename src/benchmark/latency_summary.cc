#include "benchmark/latency_summary.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace lumen::benchmark {

double percentile_of_sorted(std::span<const double> sorted, double p) {
  if (sorted.empty()) return std::numeric_limits<double>::quiet_NaN();
  const double rank = std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(sorted.size() - 1);
  const auto below = static_cast<size_t>(std::floor(rank));
  const size_t above = std::min(below + 1, sorted.size() - 1);
  const double weight = rank - static_cast<double>(below);
  return sorted[below] + (sorted[above] - sorted[below]) * weight;
}

LatencySummary summarize(std::vector<double> values) {
  LatencySummary s;
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  const auto n = static_cast<double>(values.size());
  s.count = values.size();
  s.mean = std::accumulate(values.begin(), values.end(), 0.0) / n;
  double squares = 0;
  for (double v : values) squares += (v - s.mean) * (v - s.mean);
  s.stddev = std::sqrt(squares / n);
  s.min = values.front();
  s.max = values.back();
  s.p50 = percentile_of_sorted(values, 50);
  s.p90 = percentile_of_sorted(values, 90);
  s.p99 = percentile_of_sorted(values, 99);
  return s;
}

}  // namespace lumen::benchmark
