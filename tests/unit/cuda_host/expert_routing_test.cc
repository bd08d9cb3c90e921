// The router's per-token arithmetic (backend/expert_routing.h) as route_experts.cu splits it over
// a warp, emulated on the host: lane i's best candidate among experts i, i + 32, ... after the last
// pick, reduced with the butterfly the kernel's shuffles take, must be the sequential pick; the
// picks must be what a partial sort by the same order gives (the host router before the order was
// written for the device); the kept groups what a stable sort by score keeps.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "backend/expert_routing.h"

namespace lumen::backend {
namespace {

using routing::Pick;

// The kernel's pick: each lane's best after `last`, then xor-butterfly rounds over the 32 lanes.
Pick warp_pick(const std::vector<float>& v, Pick last) {
  Pick lanes[32];
  for (int lane = 0; lane < 32; ++lane) {
    lanes[lane] = routing::no_pick();
    for (size_t e = static_cast<size_t>(lane); e < v.size(); e += 32) {
      if (routing::after(v[e], static_cast<int32_t>(e), last)) {
        lanes[lane] = routing::earlier(lanes[lane], {v[e], static_cast<int32_t>(e)});
      }
    }
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    Pick next[32];
    for (int lane = 0; lane < 32; ++lane) next[lane] = routing::earlier(lanes[lane], lanes[lane ^ offset]);
    std::copy(next, next + 32, lanes);
  }
  for (int lane = 1; lane < 32; ++lane) EXPECT_EQ(lanes[lane].index, lanes[0].index) << "lanes disagree";
  return lanes[0];
}

std::vector<float> values_with_ties_and_nan(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> level(-6, 6);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(level(rng)) * 0.125f;  // many equal values
  std::uniform_int_distribution<size_t> at(0, n - 1);
  v[at(rng)] = NAN;
  v[at(rng)] = -INFINITY;
  v[at(rng)] = INFINITY;
  return v;
}

TEST(ExpertRouting, WarpPicksAreTheSortedOrder) {
  for (const size_t n : {8u, 60u, 64u, 128u, 256u, 300u}) {
    for (uint32_t seed = 0; seed < 20; ++seed) {
      const std::vector<float> v = values_with_ties_and_nan(n, seed);
      std::vector<int32_t> order(n);
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(),
                       [&](int32_t a, int32_t b) { return routing::before(v[a], a, v[b], b); });
      Pick last = routing::no_pick();
      const size_t k = std::min<size_t>(n, 12);
      for (size_t s = 0; s < k; ++s) {
        const Pick pick = warp_pick(v, last);
        ASSERT_EQ(pick.index, order[s]) << "n " << n << " seed " << seed << " slot " << s;
        last = pick;
      }
    }
  }
}

TEST(ExpertRouting, NanSortsLastAndTiesGoToTheLowerExpert) {
  const std::vector<float> v = {NAN, 1.0f, 2.0f, 2.0f, -INFINITY, 1.0f};
  const int32_t expected[] = {2, 3, 1, 5, 4, 0};
  Pick last = routing::no_pick();
  for (const int32_t e : expected) {
    last = warp_pick(v, last);
    EXPECT_EQ(last.index, e);
  }
}

TEST(ExpertRouting, KeptGroupsAreTheBestByStableSort) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> level(0, 5);
  for (int trial = 0; trial < 500; ++trial) {
    const int64_t groups = 2 + trial % 15, used = 1 + trial % groups;
    std::vector<float> scores(static_cast<size_t>(groups));
    for (float& s : scores) s = static_cast<float>(level(rng));
    std::vector<int32_t> order(static_cast<size_t>(groups));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return scores[a] > scores[b]; });
    uint64_t expected = 0;
    for (int64_t r = 0; r < used; ++r) expected |= uint64_t{1} << order[static_cast<size_t>(r)];
    EXPECT_EQ(routing::kept_groups(scores.data(), groups, used), expected) << "trial " << trial;
  }
}

TEST(ExpertRouting, GroupScoreIsTheTwoHighest) {
  routing::TopTwo top;
  for (const float x : {0.25f, 3.0f, -1.0f, 3.0f, 2.0f}) routing::add_to_top_two(top, x);
  EXPECT_EQ(routing::group_score(top), 6.0f);
  routing::TopTwo masked;
  routing::add_to_top_two(masked, -INFINITY);
  EXPECT_EQ(routing::group_score(masked), -INFINITY);
}

TEST(ExpertRouting, SharedExpertGateIsSigmoidWithItsLimitAtZero) {
  EXPECT_EQ(routing::shared_expert_gate(0.0f), 0.5f);
  for (const float g : {-8.0f, -1.0f, 0.5f, 3.0f}) {
    EXPECT_NEAR(routing::shared_expert_gate(g), 1.0 / (1.0 + std::exp(-static_cast<double>(g))), 1e-6);
  }
}

}  // namespace
}  // namespace lumen::backend
