#include "benchmark/arrival_schedule.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "util/error.h"

namespace lumen::benchmark {
namespace {

TEST(ArrivalSchedule, InfiniteRateSendsEverythingAtOnce) {
  const auto times = poisson_arrivals(5, std::numeric_limits<double>::infinity(), 1);
  ASSERT_EQ(times.size(), 5u);
  for (double t : times) EXPECT_EQ(t, 0.0);
}

TEST(ArrivalSchedule, SameSeedSameScheduleOtherSeedAnother) {
  EXPECT_EQ(poisson_arrivals(100, 4.0, 7), poisson_arrivals(100, 4.0, 7));
  EXPECT_NE(poisson_arrivals(100, 4.0, 7), poisson_arrivals(100, 4.0, 8));
}

// With a fixed seed and many arrivals, the gaps behave as an exponential distribution of
// mean 1/rate: mean and standard deviation both 1/rate, and P(gap > mean) = e^-1.
TEST(ArrivalSchedule, GapsAreExponentialWithMeanOneOverRate) {
  const double rate = 8.0;
  const size_t n = 50000;
  const auto times = poisson_arrivals(n, rate, 42);
  ASSERT_EQ(times.size(), n);
  EXPECT_EQ(times[0], 0.0);
  double sum = 0, squares = 0;
  size_t longer_than_mean = 0;
  for (size_t i = 1; i < n; ++i) {
    const double gap = times[i] - times[i - 1];
    ASSERT_GE(gap, 0.0);
    sum += gap;
    squares += gap * gap;
    if (gap > 1 / rate) ++longer_than_mean;
  }
  const double gaps = static_cast<double>(n - 1);
  const double mean = sum / gaps;
  const double stddev = std::sqrt(squares / gaps - mean * mean);
  EXPECT_NEAR(mean, 1 / rate, 0.02 / rate);
  EXPECT_NEAR(stddev, 1 / rate, 0.03 / rate);
  EXPECT_NEAR(static_cast<double>(longer_than_mean) / gaps, std::exp(-1.0), 0.01);
  // The run's length follows: n requests at 8/s take about n/8 seconds.
  EXPECT_NEAR(times.back(), gaps / rate, 0.02 * gaps / rate);
}

TEST(ArrivalSchedule, RejectsANonPositiveRate) {
  EXPECT_THROW(poisson_arrivals(3, 0.0, 1), Error);
  EXPECT_THROW(poisson_arrivals(3, -2.0, 1), Error);
  EXPECT_THROW(poisson_arrivals(3, std::nan(""), 1), Error);
}

}  // namespace
}  // namespace lumen::benchmark
