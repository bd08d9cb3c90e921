// store_kv writes each token to block_table[pos / block_size], row pos % block_size, and
// nothing else; bad block tables are errors, not out-of-bounds writes.
#include <gtest/gtest.h>

#include <bit>
#include <string>

#include "backend/cpu/kv_store.h"
#include "paged_cache_fixture.h"
#include "util/error.h"

namespace lumen::backend::cpu {
namespace {

using testing::PagedCache;

class KvStore : public ::testing::TestWithParam<tensor::DType> {};

TEST_P(KvStore, WritesEachTokenToItsBlockRow) {
  const int64_t kv_dim = 3 * 80, bs = 16;
  PagedCache cache(GetParam(), kv_dim, bs, 12);
  PagedCache untouched(GetParam(), kv_dim, bs, 12);  // same sentinel bytes, never written
  // Two sequences in one batch: 7 tokens at positions 13..19 (crossing a block boundary) and
  // 5 tokens at 30..34; different, non-contiguous block tables.
  const std::vector<int32_t> table_a = {9, 4};
  const std::vector<int32_t> table_b = {0, 11, 2};
  const std::vector<SequenceSlice> seqs = {{0, 7, 13, table_a}, {7, 5, 30, table_b}};
  const int64_t n_tokens = 12;
  auto k = testing::random_values(static_cast<size_t>(kv_dim * n_tokens), 1);
  auto v = testing::random_values(static_cast<size_t>(kv_dim * n_tokens), 2);
  store_kv(f32_matrix(k.data(), kv_dim, n_tokens), f32_matrix(v.data(), kv_dim, n_tokens), seqs,
           cache.layer());

  std::vector<bool> written(static_cast<size_t>(bs * 12), false);
  for (const auto& seq : seqs) {
    const std::vector<int32_t> table(seq.block_table.begin(), seq.block_table.end());
    for (int64_t i = 0; i < seq.n_tokens; ++i) {
      const int64_t row = PagedCache::row_of(table, seq.start_pos + i, bs);
      written[static_cast<size_t>(row)] = true;
      for (int64_t d = 0; d < kv_dim; ++d) {
        const size_t src = static_cast<size_t>((seq.first_token + i) * kv_dim + d);
        const float want_k = GetParam() == tensor::DType::F16 ? testing::round_to_f16(k[src]) : k[src];
        const float want_v = GetParam() == tensor::DType::F16 ? testing::round_to_f16(v[src]) : v[src];
        ASSERT_EQ(cache.k_at(row, d), want_k) << "row " << row << " d " << d;
        ASSERT_EQ(cache.v_at(row, d), want_v) << "row " << row << " d " << d;
      }
    }
  }
  for (int64_t row = 0; row < bs * 12; ++row) {
    if (written[static_cast<size_t>(row)]) continue;
    for (int64_t d = 0; d < kv_dim; d += 37) {
      ASSERT_EQ(std::bit_cast<uint32_t>(cache.k_at(row, d)), std::bit_cast<uint32_t>(untouched.k_at(row, d)));
    }
  }
}

TEST_P(KvStore, RejectsBadBlockTables) {
  PagedCache cache(GetParam(), 64, 16, 4);
  std::vector<float> k(64 * 2), v(64 * 2);
  const auto kt = f32_matrix(k.data(), 64, 2), vt = f32_matrix(v.data(), 64, 2);
  const std::vector<int32_t> out_of_range = {7};
  const std::vector<int32_t> negative = {-1};
  const std::vector<int32_t> too_short = {1};
  EXPECT_THROW(store_kv(kt, vt, std::vector<SequenceSlice>{{0, 2, 0, out_of_range}}, cache.layer()), Error);
  EXPECT_THROW(store_kv(kt, vt, std::vector<SequenceSlice>{{0, 2, 0, negative}}, cache.layer()), Error);
  EXPECT_THROW(store_kv(kt, vt, std::vector<SequenceSlice>{{0, 2, 15, too_short}}, cache.layer()), Error);
  EXPECT_THROW(store_kv(kt, vt, std::vector<SequenceSlice>{{1, 2, 0, too_short}}, cache.layer()), Error);
  EXPECT_THROW(store_kv(kt, vt, std::vector<SequenceSlice>{{0, 2, -3, too_short}}, cache.layer()), Error);
  const auto wide = f32_matrix(k.data(), 32, 4);  // kv_dim disagrees with the cache
  EXPECT_THROW(store_kv(wide, wide, std::vector<SequenceSlice>{{0, 1, 0, too_short}}, cache.layer()), Error);
}

INSTANTIATE_TEST_SUITE_P(CacheTypes, KvStore, ::testing::Values(tensor::DType::F16, tensor::DType::F32),
                         [](const auto& test_info) { return std::string(tensor::dtype_name(test_info.param)); });

}  // namespace
}  // namespace lumen::backend::cpu
