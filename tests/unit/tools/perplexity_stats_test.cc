#include "tools/perplexity_stats.h"

#include <gtest/gtest.h>

#include <cmath>

namespace lumen::tools {
namespace {

TEST(PerplexityStats, MeanAndStandardError) {
  // Samples 1..4: mean 2.5, population variance 1.25, standard error sqrt(1.25 / 3).
  const Estimate e = mean_with_error(10, 30, 4);
  EXPECT_DOUBLE_EQ(e.value, 2.5);
  EXPECT_NEAR(e.error, std::sqrt(1.25 / 3), 1e-12);
  EXPECT_EQ(mean_with_error(3, 9, 1).error, 0.0);
  EXPECT_EQ(mean_with_error(0, 0, 0).value, 0.0);
}

TEST(PerplexityStats, PerplexityIsExpOfTheMeanNll) {
  NllSums sums;
  for (double nll : {1.0, 2.0, 3.0}) sums.add(nll);
  const Estimate ppl = sums.perplexity();
  EXPECT_NEAR(ppl.value, std::exp(2.0), 1e-12);
  EXPECT_NEAR(ppl.error, std::exp(2.0) * std::sqrt((14.0 / 3 - 4) / 2), 1e-12);
}

TEST(PerplexityStats, PercentilesInterpolateBetweenNeighbours) {
  const std::vector<float> v = {0, 10, 20, 30, 40};
  EXPECT_DOUBLE_EQ(percentile(v, 0.0), 0);
  EXPECT_DOUBLE_EQ(percentile(v, 0.5), 20);
  EXPECT_DOUBLE_EQ(percentile(v, 0.1), 4);
  EXPECT_DOUBLE_EQ(percentile(v, 1.0), 40);
  EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 4}, 0.5), 2.5);  // an even count's median
}

TEST(PerplexityStats, KldReport) {
  KldSums sums;
  for (int i = 0; i < 10; ++i) {
    KldSample s;
    s.kld = 0.1 * i;
    s.p_diff = i % 2 ? 0.1f : -0.1f;
    s.nll = 1.0 + 0.1 * i;
    s.nll_base = 1.0 + 0.1 * i;
    s.same_top = i < 7;
    sums.add(s);
  }
  const KldReport r = sums.report();
  EXPECT_EQ(r.count, 10);
  EXPECT_NEAR(r.kld.value, 0.45, 1e-12);
  EXPECT_NEAR(r.kld_median, 0.45, 1e-6);
  EXPECT_NEAR(r.kld_max, 0.9, 1e-6);
  EXPECT_NEAR(r.same_top.value, 0.7, 1e-12);
  EXPECT_NEAR(r.p_diff.value, 0.0, 1e-7);
  EXPECT_NEAR(r.p_diff_rms.value, 0.1, 1e-6);
  EXPECT_NEAR(r.log_ppl_ratio.value, 0.0, 1e-12);  // the same nll on both sides
  EXPECT_NEAR(r.log_ppl_correlation, 1.0, 1e-9);
}

}  // namespace
}  // namespace lumen::tools
