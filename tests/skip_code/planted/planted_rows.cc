// Planted cases: one passes, one fails, two skip (as CUDA rows do without a device).
#include <gtest/gtest.h>

TEST(Rows, Passes) { EXPECT_EQ(1 + 1, 2); }
TEST(Rows, Fails) { EXPECT_EQ(1 + 1, 3) << "the planted failure"; }
TEST(Rows, Skips) { GTEST_SKIP() << "no CUDA device"; }
TEST(Rows, SkipsToo) { GTEST_SKIP() << "no CUDA device"; }
