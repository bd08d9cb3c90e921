// The pipelined GEMV's work layout and loop (backend/cuda/gemv_pipeline.h), walked on a CPU for
// every warp of a launch as gemv_pipelined.cu's kernel walks it: every row of every matrix is
// written once, by one warp that computed its tiles in order, and no stage is copied into while
// the item it holds is still to be computed.
#include "backend/cuda/gemv_pipeline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace lumen::backend::cuda {
namespace {

struct Launch {
  std::vector<int64_t> rows;  // per matrix
  int64_t tiles_per_row;
  int64_t warps;
};

// Walks every warp of the launch; returns, per (matrix, row), the warps that stored it.
std::map<std::pair<int, int64_t>, int> walk(const Launch& launch) {
  std::vector<int64_t> row_start = {0};
  for (const int64_t r : launch.rows) row_start.push_back(row_start.back() + r);
  const int n = static_cast<int>(launch.rows.size());
  std::map<std::pair<int, int64_t>, int> stored;
  for (int64_t warp = 0; warp < launch.warps; ++warp) {
    const GemvWarpWork work = gemv_warp_work(warp, launch.warps, row_start.back(), launch.tiles_per_row);
    std::optional<GemvItem> held[2];  // what each stage holds, until computed
    int64_t expected_tile = 0, computed = 0, staged = 0, groups = 0;
    std::optional<int64_t> current_row;
    const auto stage = [&](bool copy, const GemvItem& it, int s) {
      ++groups;
      if (!copy) return;
      ASSERT_FALSE(held[s].has_value()) << "stage " << s << " copied into before its item was computed";
      held[s] = it;
      ++staged;
    };
    const auto compute = [&](const GemvItem& it, int s) {
      // "All but the newest group" done: this item's group is not the newest.
      ASSERT_LT(computed + 1, groups);
      ASSERT_TRUE(held[s].has_value());
      EXPECT_EQ(held[s]->row, it.row);
      EXPECT_EQ(held[s]->tile, it.tile);
      held[s].reset();
      // Rows of this warp only, tiles in order, a row finished before the next starts.
      EXPECT_EQ((it.row - warp) % launch.warps, 0);
      EXPECT_EQ(it.tile, expected_tile);
      if (it.tile == 0) {
        EXPECT_FALSE(current_row.has_value());
        current_row = it.row;
      }
      EXPECT_EQ(current_row, it.row);
      if (it.last_tile(work)) {
        const GemvRowRef r = locate_gemv_row(row_start.data(), n, it.row);
        ASSERT_GE(r.m, 0);
        ASSERT_LT(r.m, n);
        ASSERT_GE(r.row, 0);
        ASSERT_LT(r.row, launch.rows[static_cast<size_t>(r.m)]);
        ++stored[{r.m, r.row}];
        expected_tile = 0;
        current_row.reset();
      } else {
        ++expected_tile;
      }
      ++computed;
    };
    walk_gemv_items(work, stage, compute);
    EXPECT_EQ(computed, work.items());
    EXPECT_EQ(staged, work.items());
    EXPECT_FALSE(current_row.has_value()) << "warp " << warp << " left a row unfinished";
  }
  return stored;
}

void expect_every_row_once(const Launch& launch) {
  const auto stored = walk(launch);
  int64_t total = 0;
  for (size_t m = 0; m < launch.rows.size(); ++m) {
    for (int64_t r = 0; r < launch.rows[m]; ++r) {
      const auto it = stored.find({static_cast<int>(m), r});
      ASSERT_NE(it, stored.end()) << "matrix " << m << " row " << r << " never written";
      EXPECT_EQ(it->second, 1) << "matrix " << m << " row " << r;
    }
    total += launch.rows[m];
  }
  EXPECT_EQ(static_cast<int64_t>(stored.size()), total);
}

TEST(PipelinedGemvLayout, EveryRowOfEveryMatrixOnceWithItsTilesInOrder) {
  // An 8B gate/up pair on a device holding 4 752 warps; Q/K/V of a 1B model (fewer rows than
  // warps); an 8B down projection (4 tiles a row); odd counts everywhere.
  expect_every_row_once({{14336, 14336}, 1, 4752});
  expect_every_row_once({{2048, 512, 512}, 1, 4752});
  expect_every_row_once({{4096}, 4, 4752});
  expect_every_row_once({{67}, 3, 8});
  expect_every_row_once({{1, 0, 5, 3}, 2, 4});
  expect_every_row_once({{9001}, 1, 1});  // one warp walks them all
  expect_every_row_once({{13, 7}, 5, 40});
}

TEST(PipelinedGemvLayout, RowsSplitEvenlyAmongWarps) {
  const int64_t total = 14336 * 2, warps = 4752;
  int64_t most = 0, least = total;
  for (int64_t w = 0; w < warps; ++w) {
    const GemvWarpWork work = gemv_warp_work(w, warps, total, 1);
    most = std::max(most, work.rows);
    least = std::min(least, work.rows);
  }
  EXPECT_LE(most - least, 1);
  EXPECT_EQ(gemv_warp_work(5, 8, 5, 2).rows, 0);  // past the rows: nothing
  EXPECT_EQ(gemv_warp_work(4, 8, 5, 2).items(), 2);
}

TEST(PipelinedGemvLayout, RowsAreFoundInTheirMatrix) {
  const int64_t row_start[] = {0, 2048, 2560, 3072};
  EXPECT_EQ(locate_gemv_row(row_start, 3, 0).m, 0);
  EXPECT_EQ(locate_gemv_row(row_start, 3, 2047).row, 2047);
  EXPECT_EQ(locate_gemv_row(row_start, 3, 2048).m, 1);
  EXPECT_EQ(locate_gemv_row(row_start, 3, 2048).row, 0);
  EXPECT_EQ(locate_gemv_row(row_start, 3, 3071).m, 2);
  EXPECT_EQ(locate_gemv_row(row_start, 3, 3071).row, 511);
  // An empty matrix between two others is skipped.
  const int64_t with_empty[] = {0, 4, 4, 9};
  EXPECT_EQ(locate_gemv_row(with_empty, 3, 4).m, 2);
}

TEST(PipelinedGemvLayout, ALaunchHasTheBlocksTheDeviceHoldsOrFewer) {
  EXPECT_EQ(pipelined_gemv_blocks(28672, 4, 1188), 1188);  // 8B gate/up: one wave, several rows a warp
  EXPECT_EQ(pipelined_gemv_blocks(2048, 4, 1188), 512);    // 1B attn_q: one row a warp
  EXPECT_EQ(pipelined_gemv_blocks(5, 4, 1188), 2);
  EXPECT_EQ(pipelined_gemv_blocks(100, 4, 0), 1);  // an occupancy query that failed
}

}  // namespace
}  // namespace lumen::backend::cuda
