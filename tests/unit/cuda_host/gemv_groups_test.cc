// Which of one input's outputs share a tiled GEMV launch (backend/cuda/gemv_groups.h).
#include "backend/cuda/gemv_groups.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace lumen::backend::cuda {
namespace {

using tensor::DType;
using Launches = std::vector<std::vector<size_t>>;

GemvGroupCandidate out(DType type, size_t row_bytes, bool groupable = true) { return {type, row_bytes, groupable}; }

TEST(GemvLaunchGroups, QkvOfOneTypeIsOneLaunchAndGateUpAnother) {
  const GemvGroupCandidate qkv[] = {out(DType::Q4_0, 1152), out(DType::Q4_0, 1152), out(DType::Q4_0, 1152)};
  EXPECT_EQ(gemv_launch_groups(qkv, 4), (Launches{{0, 1, 2}}));
  const GemvGroupCandidate gate_up[] = {out(DType::Q4_K, 1152), out(DType::Q4_K, 1152)};
  EXPECT_EQ(gemv_launch_groups(gate_up, 4), (Launches{{0, 1}}));
}

// A Q4_K_M layer: Q and K in Q4_K, V in Q6_K. Types, and widths within a type, never share.
TEST(GemvLaunchGroups, DifferentTypesOrWidthsRunApart) {
  const GemvGroupCandidate mixed[] = {out(DType::Q4_K, 1152), out(DType::Q4_K, 1152), out(DType::Q6_K, 1680)};
  EXPECT_EQ(gemv_launch_groups(mixed, 4), (Launches{{0, 1}, {2}}));
  const GemvGroupCandidate alternating[] = {out(DType::Q4_K, 1152), out(DType::Q6_K, 1680), out(DType::Q4_K, 1152),
                                            out(DType::Q4_K, 2304)};
  EXPECT_EQ(gemv_launch_groups(alternating, 4), (Launches{{0, 2}, {1}, {3}}));
}

TEST(GemvLaunchGroups, OutputsTheTiledKernelCannotTakeRunAlone) {
  const GemvGroupCandidate some[] = {out(DType::Q4_0, 1152), out(DType::Q4_0, 1152, false), out(DType::Q4_0, 1152),
                                     out(DType::F16, 4096, false), out(DType::F16, 4096, false)};
  EXPECT_EQ(gemv_launch_groups(some, 4), (Launches{{0, 2}, {1}, {3}, {4}}));
}

TEST(GemvLaunchGroups, ALaunchTakesAtMostItsLimitAndALimitBelowTwoGroupsNothing) {
  std::vector<GemvGroupCandidate> many(7, out(DType::Q8_0, 2176));
  EXPECT_EQ(gemv_launch_groups(many, 3), (Launches{{0, 1, 2}, {3, 4, 5}, {6}}));
  EXPECT_EQ(gemv_launch_groups(std::span(many).first(2), 1), (Launches{{0}, {1}}));
  EXPECT_TRUE(gemv_launch_groups({}, 4).empty());
}

// Whatever the mix, every output is in exactly one launch, a launch's outputs share type and
// width and are groupable (or it has one output), and a launch keeps its outputs' order.
TEST(GemvLaunchGroups, EveryOutputRunsOnceInAnyMix) {
  const DType types[] = {DType::Q4_0, DType::Q4_K, DType::Q6_K};
  uint32_t state = 12345;
  const auto next = [&] { return state = state * 1664525u + 1013904223u; };
  for (int trial = 0; trial < 500; ++trial) {
    std::vector<GemvGroupCandidate> outputs(next() % 9);
    for (GemvGroupCandidate& o : outputs) o = out(types[next() % 3], 1152 * (1 + next() % 2), next() % 4 != 0);
    const size_t limit = 1 + next() % 4;
    const Launches launches = gemv_launch_groups(outputs, limit);
    std::vector<int> seen(outputs.size(), 0);
    for (const std::vector<size_t>& l : launches) {
      ASSERT_FALSE(l.empty());
      ASSERT_LE(l.size(), std::max<size_t>(limit, 1));
      EXPECT_TRUE(std::is_sorted(l.begin(), l.end()));
      for (size_t i : l) {
        ++seen[i];
        if (l.size() > 1) {
          EXPECT_TRUE(outputs[i].groupable);
          EXPECT_EQ(outputs[i].type, outputs[l[0]].type);
          EXPECT_EQ(outputs[i].row_bytes, outputs[l[0]].row_bytes);
        }
      }
    }
    EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), static_cast<long>(outputs.size()));
  }
}

}  // namespace
}  // namespace lumen::backend::cuda
