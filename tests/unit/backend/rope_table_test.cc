// RopeTable keeps one batch's cos/sin rows between rope calls. It must give exactly
// rope_cache's rows, and recompute whenever the positions (even in the same buffer) or any
// parameter change, or a later batch would be rotated at stale angles.
#include <gtest/gtest.h>

#include <vector>

#include "backend/cpu/rope.h"
#include "backend/cpu/rope_table.h"

namespace lumen::backend::cpu {
namespace {

RopeParams params(int64_t dims, float base) {
  RopeParams p;
  p.rope_dims = dims;
  p.freq_base = base;
  return p;
}

void expect_rows_equal_rope_cache(const float* table, const RopeParams& p,
                                  const std::vector<int32_t>& positions) {
  std::vector<float> row(static_cast<size_t>(p.rope_dims));
  for (size_t t = 0; t < positions.size(); ++t) {
    rope_cache(p, positions[t], row.data());
    for (int64_t i = 0; i < p.rope_dims; ++i) {
      ASSERT_EQ(table[t * static_cast<size_t>(p.rope_dims) + static_cast<size_t>(i)], row[static_cast<size_t>(i)])
          << "token " << t << " value " << i;
    }
  }
}

TEST(RopeTable, RowsAreRopeCachesOfEachPosition) {
  ThreadPool pool(3);
  RopeTable table;
  std::vector<int32_t> positions(77);
  for (size_t t = 0; t < positions.size(); ++t) positions[t] = static_cast<int32_t>(3 * t + 1);
  const RopeParams p = params(64, 10000.0f);
  expect_rows_equal_rope_cache(table.rows(p, positions, pool), p, positions);
  // Asked again, the same rows.
  expect_rows_equal_rope_cache(table.rows(p, positions, pool), p, positions);
}

TEST(RopeTable, RecomputesWhenPositionsChangeInTheSameBuffer) {
  ThreadPool pool(2);
  RopeTable table;
  std::vector<int32_t> positions = {5};
  const RopeParams p = params(32, 10000.0f);
  table.rows(p, positions, pool);
  positions[0] = 6;  // the next decode step reuses the caller's buffer
  expect_rows_equal_rope_cache(table.rows(p, positions, pool), p, positions);
  positions = {6, 7, 8};  // a longer batch
  expect_rows_equal_rope_cache(table.rows(p, positions, pool), p, positions);
  positions = {6};  // a shorter one whose first position is unchanged
  expect_rows_equal_rope_cache(table.rows(p, positions, pool), p, positions);
}

TEST(RopeTable, RecomputesWhenAnyParameterChanges) {
  ThreadPool pool(1);
  RopeTable table;
  const std::vector<int32_t> positions = {100, 2000};
  const float factors[16] = {1, 1, 2, 2, 4, 4, 8, 8, 1, 1, 2, 2, 4, 4, 8, 8};
  std::vector<RopeParams> variants;
  variants.push_back(params(32, 10000.0f));
  variants.push_back(params(32, 500000.0f));
  variants.push_back(params(16, 500000.0f));
  RopeParams scaled = params(16, 500000.0f);
  scaled.freq_scale = 0.25f;
  variants.push_back(scaled);
  RopeParams yarn = scaled;
  yarn.ext_factor = 1.0f;
  yarn.corr_dims[0] = 2.0f;
  yarn.corr_dims[1] = 6.0f;
  variants.push_back(yarn);
  RopeParams factored = params(32, 500000.0f);
  factored.freq_factors = factors;
  variants.push_back(factored);
  for (size_t i = 0; i < variants.size(); ++i) {
    SCOPED_TRACE("variant " + std::to_string(i));
    expect_rows_equal_rope_cache(table.rows(variants[i], positions, pool), variants[i], positions);
  }
}

}  // namespace
}  // namespace lumen::backend::cpu
