#include "benchmark/latency_summary.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace lumen::benchmark {
namespace {

// Expected values are numpy.percentile(values, p) (linear interpolation).
TEST(LatencySummary, PercentilesInterpolateLikeNumpy) {
  const std::vector<double> sorted = {1, 2, 3, 4, 10};
  EXPECT_DOUBLE_EQ(percentile_of_sorted(sorted, 0), 1);
  EXPECT_DOUBLE_EQ(percentile_of_sorted(sorted, 50), 3);
  EXPECT_DOUBLE_EQ(percentile_of_sorted(sorted, 90), 7.6);   // rank 3.6: 4 + 0.6 * 6
  EXPECT_DOUBLE_EQ(percentile_of_sorted(sorted, 99), 9.76);  // rank 3.96
  EXPECT_DOUBLE_EQ(percentile_of_sorted(sorted, 100), 10);
  EXPECT_DOUBLE_EQ(percentile_of_sorted(std::vector<double>{1, 2}, 50), 1.5);
}

TEST(LatencySummary, OneValueIsEveryPercentileAndNoneIsNaN) {
  EXPECT_DOUBLE_EQ(percentile_of_sorted(std::vector<double>{7}, 99), 7);
  EXPECT_TRUE(std::isnan(percentile_of_sorted(std::vector<double>{}, 50)));
}

TEST(LatencySummary, SummarizesAnUnsortedSample) {
  const LatencySummary s = summarize({10, 4, 1, 3, 2});
  EXPECT_EQ(s.count, 5u);
  EXPECT_DOUBLE_EQ(s.mean, 4);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 10);
  EXPECT_DOUBLE_EQ(s.p50, 3);
  EXPECT_DOUBLE_EQ(s.p90, 7.6);
  EXPECT_DOUBLE_EQ(s.p99, 9.76);
  EXPECT_NEAR(s.stddev, std::sqrt(10.0), 1e-12);  // population: (9+4+1+0+36)/5
}

TEST(LatencySummary, PercentilesAreOrderedOnAnySample) {
  std::vector<double> values;
  for (int i = 0; i < 1000; ++i) values.push_back(std::fmod(i * 7919.0, 1000.0) / 3.0);
  const LatencySummary s = summarize(values);
  EXPECT_LE(s.min, s.p50);
  EXPECT_LE(s.p50, s.p90);
  EXPECT_LE(s.p90, s.p99);
  EXPECT_LE(s.p99, s.max);
}

TEST(LatencySummary, EmptySampleIsAllZero) {
  const LatencySummary s = summarize({});
  EXPECT_EQ(s.count, 0u);
  EXPECT_EQ(s.mean, 0);
  EXPECT_EQ(s.p99, 0);
}

}  // namespace
}  // namespace lumen::benchmark
