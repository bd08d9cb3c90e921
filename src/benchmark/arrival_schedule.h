#pragma once
// When each request of a load test is sent: a Poisson process (exponential gaps with mean
// 1/rate, drawn from a seeded generator so runs repeat), or all at once when the rate is
// infinite. Times are seconds from the start of the run; the first request goes at 0.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace lumen::benchmark {

// rate: requests per second, > 0; +infinity sends everything at time 0.
std::vector<double> poisson_arrivals(size_t count, double rate, uint64_t seed);

}  // namespace lumen::benchmark
