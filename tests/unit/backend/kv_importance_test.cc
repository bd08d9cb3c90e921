// The CPU kernels of importance-based KV eviction against the definition, computed here from
// the cache's own rows (and, an f16 cache's scores being the attention's, the query rounded to
// f16 as its q.k takes it): attention_scores adds each scored row's softmax (summed over the query
// heads of a KV head, within the causal range and the sliding window) to the score table;
// gather_kv_rows moves each KV head's kept slots, keys and values, to the destination blocks,
// in place included, and refuses slots and blocks out of range.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "backend/cpu/kv_importance.h"
#include "kernel_test_util.h"
#include "paged_cache_fixture.h"
#include "tensor/fp16.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace lumen::backend::cpu {
namespace {

using testing::PagedCache;
using testing::random_values;

constexpr int64_t kHeadDim = 16, kKvHeads = 2, kHeads = 6, kBlock = 4, kBlocks = 8, kRow = kHeadDim * kKvHeads;

void fill(PagedCache& cache, const std::vector<int32_t>& table, int64_t n, uint32_t seed) {
  const std::vector<float> k = random_values(static_cast<size_t>(n * kRow), seed);
  const std::vector<float> v = random_values(static_cast<size_t>(n * kRow), seed + 1);
  for (int64_t p = 0; p < n; ++p)
    cache.write(PagedCache::row_of(table, p, kBlock), k.data() + p * kRow, v.data() + p * kRow);
}

void check_scores(int64_t window) {
  PagedCache cache(tensor::DType::F16, kRow, kBlock, kBlocks);
  const std::vector<int32_t> table = {5, 1, 7, 2, 0};
  const int64_t n_slots = 18, n_tokens = 5, start = n_slots - n_tokens, first_row = 2;
  fill(cache, table, n_slots, 11);
  std::vector<float> q = random_values(static_cast<size_t>(n_tokens * kHeads * kHeadDim), 12, -2.0f, 2.0f);
  const TensorView qv{tensor::DType::F32, {kHeadDim, kHeads, n_tokens, 1}, kHeadDim * sizeof(float), q.data()};
  AttentionConfig config{kHeads, kKvHeads, kHeadDim, 0.25f, window, 0.0f, 0};
  const SequenceSlice seq{0, n_tokens, start, table};
  const int64_t stride = 3;  // a column per KV head, and one that must stay untouched
  std::vector<float> scores(static_cast<size_t>(n_slots * stride), 1.0f);
  ThreadPool pool(2);
  attention_scores(qv, cache.layer(), seq, first_row, config, scores.data(), stride, pool);

  std::vector<double> expected(static_cast<size_t>(n_slots * stride), 1.0);
  for (int64_t r = first_row; r < n_tokens; ++r) {
    const int64_t pos = start + r, lo = window > 0 ? std::max<int64_t>(0, pos - window + 1) : 0;
    for (int64_t h = 0; h < kHeads; ++h) {
      const int64_t kvh = h / (kHeads / kKvHeads);
      std::vector<double> s(static_cast<size_t>(n_slots), 0.0);
      double max = -1e300, sum = 0.0;
      for (int64_t p = lo; p <= pos; ++p) {
        double dot = 0.0;
        for (int64_t d = 0; d < kHeadDim; ++d) {
          // The attention's own probabilities (an f16 cache): the query rounded to f16.
          const float qd =
              tensor::fp16_to_float(tensor::float_to_fp16(q[static_cast<size_t>((r * kHeads + h) * kHeadDim + d)]));
          dot += static_cast<double>(qd) * cache.k_at(PagedCache::row_of(table, p, kBlock), kvh * kHeadDim + d);
        }
        s[static_cast<size_t>(p)] = dot * 0.25;
        max = std::max(max, s[static_cast<size_t>(p)]);
      }
      for (int64_t p = lo; p <= pos; ++p) sum += std::exp(s[static_cast<size_t>(p)] - max);
      for (int64_t p = lo; p <= pos; ++p) {
        expected[static_cast<size_t>(p * stride + kvh)] += std::exp(s[static_cast<size_t>(p)] - max) / sum;
      }
    }
  }
  // Each probability rounded to f16 as P V uses it: 2^-11 of itself.
  for (size_t i = 0; i < scores.size(); ++i) {
    EXPECT_NEAR(scores[i], expected[i], 1e-5 + 5e-4 * std::abs(expected[i])) << "entry " << i;
  }
}

TEST(KvImportanceKernels, AttentionScoresAreTheSoftmaxSummedOverAKvHeadsQueries) { check_scores(0); }

TEST(KvImportanceKernels, AttentionScoresRespectTheSlidingWindow) { check_scores(6); }

TEST(KvImportanceKernels, AttentionScoresRefuseAQuantizedCache) {
  PagedCache cache(tensor::DType::F16, kRow, kBlock, kBlocks);
  cache.layer().k.type = tensor::DType::Q8_0;
  std::vector<float> q(static_cast<size_t>(kHeads * kHeadDim), 0.0f);
  const TensorView qv{tensor::DType::F32, {kHeadDim, kHeads, 1, 1}, kHeadDim * sizeof(float), q.data()};
  const std::vector<int32_t> table = {0};
  std::vector<float> scores(8);
  ThreadPool pool(1);
  EXPECT_THROW(attention_scores(qv, cache.layer(), {0, 1, 0, table}, 0, {kHeads, kKvHeads, kHeadDim, 1.0f, 0, 0.0f, 0},
                                scores.data(), kKvHeads, pool),
               Error);
}

TEST(KvImportanceKernels, GatherMovesEachHeadsKeptSlotsInPlaceAndIntoFreshBlocks) {
  PagedCache cache(tensor::DType::F16, kRow, kBlock, kBlocks);
  const std::vector<int32_t> src = {3, 6, 1, 4};  // 16 slots
  fill(cache, src, 16, 21);
  // What every source row holds before the gather.
  std::vector<std::vector<float>> k_before(16), v_before(16);
  for (int64_t p = 0; p < 16; ++p) {
    for (int64_t d = 0; d < kRow; ++d) {
      k_before[static_cast<size_t>(p)].push_back(cache.k_at(PagedCache::row_of(src, p, kBlock), d));
      v_before[static_cast<size_t>(p)].push_back(cache.v_at(PagedCache::row_of(src, p, kBlock), d));
    }
  }
  // Head 0 keeps the early slots, head 1 late ones; the destination is block 3 (in place, a
  // source too) then block 7 (fresh).
  const std::vector<int32_t> keep = {0, 2, 3, 5, 8, 13, /* head 1 */ 1, 9, 10, 11, 14, 15};
  const std::vector<int32_t> dst = {3, 7};
  gather_kv_rows(cache.layer(), src, dst, keep, kHeadDim, kHeadDim);
  for (int64_t h = 0; h < kKvHeads; ++h) {
    for (int64_t j = 0; j < 6; ++j) {
      const auto from = static_cast<size_t>(keep[static_cast<size_t>(h * 6 + j)]);
      const int64_t row = PagedCache::row_of(dst, j, kBlock);
      for (int64_t d = h * kHeadDim; d < (h + 1) * kHeadDim; ++d) {
        ASSERT_EQ(cache.k_at(row, d), k_before[from][static_cast<size_t>(d)]) << "head " << h << " slot " << j;
        ASSERT_EQ(cache.v_at(row, d), v_before[from][static_cast<size_t>(d)]) << "head " << h << " slot " << j;
      }
    }
  }
  EXPECT_THROW(gather_kv_rows(cache.layer(), src, dst, std::vector<int32_t>{0, 16}, kHeadDim, kHeadDim), Error);
  EXPECT_THROW(
      gather_kv_rows(cache.layer(), src, std::vector<int32_t>{9}, std::vector<int32_t>{0, 1}, kHeadDim, kHeadDim),
      Error);
  EXPECT_THROW(gather_kv_rows(cache.layer(), src, dst, std::vector<int32_t>{0, 1, 2}, kHeadDim, kHeadDim), Error);
}

}  // namespace
}  // namespace lumen::backend::cpu
