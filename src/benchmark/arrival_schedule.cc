#include "benchmark/arrival_schedule.h"

#include <cmath>
#include <random>

#include "util/error.h"

namespace lumen::benchmark {

std::vector<double> poisson_arrivals(size_t count, double rate, uint64_t seed) {
  if (!(rate > 0)) fail("the request rate must be positive, not {}", rate);
  std::vector<double> times(count, 0.0);
  if (std::isinf(rate)) return times;
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> gap(rate);
  for (size_t i = 1; i < count; ++i) times[i] = times[i - 1] + gap(rng);
  return times;
}

}  // namespace lumen::benchmark
