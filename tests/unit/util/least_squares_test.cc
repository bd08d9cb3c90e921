#include "util/least_squares.h"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "lumen/error.h"

namespace lumen::util {
namespace {

TEST(LeastSquares, RecoversAnExactLinearLaw) {
  NormalEquations eq(3);
  for (int a = 0; a < 5; ++a) {
    for (int b = 0; b < 4; ++b) {
      const std::vector<double> x{1.0, static_cast<double>(a), static_cast<double>(b * b)};
      eq.add(x, 2.0 + 0.5 * a - 0.25 * b * b);
    }
  }
  const auto beta = eq.solve(0.0, 1);
  ASSERT_TRUE(beta.has_value());
  EXPECT_NEAR((*beta)[0], 2.0, 1e-9);
  EXPECT_NEAR((*beta)[1], 0.5, 1e-9);
  EXPECT_NEAR((*beta)[2], -0.25, 1e-9);
}

TEST(LeastSquares, AFeatureThatNeverMovedGetsNoSlopeFromTheRidge) {
  // The second feature is 7 in every sample: without a ridge the system is singular; with one
  // its slope goes to ~0 and the intercept carries the level.
  NormalEquations eq(3);
  for (int a = 0; a < 10; ++a) {
    const std::vector<double> x{1.0, static_cast<double>(a), 7.0};
    eq.add(x, 1.0 + 3.0 * a);
  }
  EXPECT_FALSE(eq.solve(0.0, 1).has_value());
  const auto beta = eq.solve(1e-4, 1);
  ASSERT_TRUE(beta.has_value());
  EXPECT_NEAR((*beta)[1], 3.0, 2e-3);  // the ridge shrinks a real slope only slightly
  // Any weight on the stuck feature could move to the unpenalized intercept at no loss, so the
  // ridge leaves it none, and the predictions at the seen points stay right.
  EXPECT_NEAR((*beta)[2], 0.0, 1e-6);
  for (int a : {0, 5, 9}) EXPECT_NEAR((*beta)[0] + (*beta)[1] * a + (*beta)[2] * 7.0, 1.0 + 3.0 * a, 1e-2);
}

TEST(LeastSquares, ScalingForgetsOldSamples) {
  NormalEquations eq(2);
  for (int a = 0; a < 10; ++a) eq.add(std::vector<double>{1.0, static_cast<double>(a)}, 100.0 * a);
  eq.scale(1e-9);
  for (int a = 0; a < 10; ++a) eq.add(std::vector<double>{1.0, static_cast<double>(a)}, 1.0 * a);
  const auto beta = eq.solve(0.0, 1);
  ASSERT_TRUE(beta.has_value());
  EXPECT_NEAR((*beta)[1], 1.0, 1e-3);
  EXPECT_NEAR(eq.total_weight(), 10.0, 1e-6);
}

TEST(LeastSquares, NoSamplesNoSolutionAndBadShapesAreRefused) {
  NormalEquations eq(2);
  EXPECT_FALSE(eq.solve(1e-4, 1).has_value());
  EXPECT_THROW(eq.add(std::vector<double>{1.0}, 1.0), Error);
  EXPECT_THROW(NormalEquations(0), Error);
  // Non-finite targets and non-positive weights are skipped, not absorbed.
  eq.add(std::vector<double>{1.0, 1.0}, std::numeric_limits<double>::quiet_NaN());
  eq.add(std::vector<double>{1.0, 1.0}, 1.0, 0.0);
  EXPECT_EQ(eq.total_weight(), 0.0);
}

}  // namespace
}  // namespace lumen::util
