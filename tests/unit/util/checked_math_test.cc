#include "util/checked_math.h"

#include <gtest/gtest.h>

#include <limits>

namespace lumen {
namespace {

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

TEST(CheckedMath, AddDetectsWrap) {
  EXPECT_EQ(checked_add(uint64_t{2}, uint64_t{3}), 5u);
  EXPECT_EQ(checked_add(kMax, uint64_t{0}), kMax);
  EXPECT_FALSE(checked_add(kMax, uint64_t{1}).has_value());
}

TEST(CheckedMath, MulDetectsWrap) {
  EXPECT_EQ(checked_mul(uint64_t{1} << 31, uint64_t{2}), uint64_t{1} << 32);
  EXPECT_FALSE(checked_mul(uint64_t{1} << 62, uint64_t{4}).has_value());
  EXPECT_FALSE(checked_mul(int64_t{1} << 62, int64_t{2}).has_value());
  EXPECT_EQ(checked_mul(int64_t{-3}, int64_t{4}), -12);
}

TEST(CheckedMath, AlignUp) {
  EXPECT_EQ(checked_align_up(0, 32), 0u);
  EXPECT_EQ(checked_align_up(1, 32), 32u);
  EXPECT_EQ(checked_align_up(64, 32), 64u);
  EXPECT_FALSE(checked_align_up(kMax - 3, 32).has_value());
}

TEST(CheckedMath, PowerOfTwo) {
  EXPECT_FALSE(is_power_of_two(0));
  EXPECT_TRUE(is_power_of_two(1));
  EXPECT_TRUE(is_power_of_two(uint64_t{1} << 63));
  EXPECT_FALSE(is_power_of_two(48));
}

}  // namespace
}  // namespace lumen
