// src/backend/cuda/decode_attention.h on the host: for decode calls (one query row per sequence)
// the items the kernels derive from their block index and the sequence's position are the items
// plan_attention builds on the host (same sequence, heads, KV head and splits, same per-vector
// stats index), every split of every item is covered by the launch's split bound, and no two
// items' partial slots overlap. So the graph-safe decode path does the explicit path's work.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "backend/cuda/attention_plan.h"
#include "backend/cuda/decode_attention.h"

namespace lumen::backend::cuda {
namespace {

struct HeadShape {
  int64_t n_heads, n_kv_heads;
};

// n_seqs decode sequences at the given positions, each with its own block table.
struct DecodeBatch {
  std::vector<std::vector<int32_t>> tables;
  std::vector<SequenceSlice> seqs;
};

DecodeBatch decode_batch(const std::vector<int64_t>& positions, int64_t block_size) {
  DecodeBatch batch;
  batch.tables.resize(positions.size());
  for (size_t i = 0; i < positions.size(); ++i) {
    batch.tables[i].resize(static_cast<size_t>(positions[i] / block_size + 1));
    std::iota(batch.tables[i].begin(), batch.tables[i].end(), static_cast<int32_t>(1000 * i));
  }
  for (size_t i = 0; i < positions.size(); ++i) {
    batch.seqs.push_back({static_cast<int64_t>(i), 1, positions[i], batch.tables[i]});
  }
  return batch;
}

void expect_same_items(const std::vector<int64_t>& positions, HeadShape heads, int64_t window) {
  constexpr int64_t kBlock = 16;
  const DecodeBatch batch = decode_batch(positions, kBlock);
  AttentionConfig config;
  config.n_heads = heads.n_heads;
  config.n_kv_heads = heads.n_kv_heads;
  config.head_dim = 64;
  config.sliding_window = window;
  const AttentionPlan plan = plan_attention(batch.seqs, config, kBlock, int64_t{1} << 40);
  ASSERT_EQ(plan.ranges.size(), 1u);

  DecodeShape shape;
  shape.n_seqs = static_cast<int32_t>(positions.size());
  shape.n_kv_heads = static_cast<int32_t>(heads.n_kv_heads);
  shape.group = static_cast<int32_t>(heads.n_heads / heads.n_kv_heads);
  shape.max_splits = decode_split_bound(*std::max_element(positions.begin(), positions.end()));
  ASSERT_EQ(decode_items(shape), static_cast<int64_t>(plan.items.size()));

  int64_t previous_end = 0;  // the first partial slot after the previous item's
  size_t task = 0;
  for (size_t i = 0; i < plan.items.size(); ++i) {
    const AttentionItem& want = plan.items[i];
    const int64_t position = positions[static_cast<size_t>(i / decode_items_per_seq(shape))];
    const AttentionItem got = decode_item(shape, static_cast<int64_t>(i), position, window);
    SCOPED_TRACE(testing::Message() << "item " << i << " at position " << position);
    EXPECT_EQ(got.seq, want.seq);
    EXPECT_EQ(got.q_begin, want.q_begin);
    EXPECT_EQ(got.n_q, want.n_q);
    EXPECT_EQ(got.head_begin, want.head_begin);
    EXPECT_EQ(got.n_heads, want.n_heads);
    EXPECT_EQ(got.kv_head, want.kv_head);
    EXPECT_EQ(got.first_split, want.first_split);
    EXPECT_EQ(got.n_splits, want.n_splits);
    EXPECT_EQ(got.stats_base, want.stats_base);
    // The launch's blocks (item, s < max_splits) cover the plan's tasks of the item, in order.
    EXPECT_LE(got.n_splits, shape.max_splits);
    for (int32_t s = 0; s < want.n_splits; ++s, ++task) {
      ASSERT_LT(task, plan.tasks.size());
      EXPECT_EQ(plan.tasks[task].item, static_cast<int32_t>(i));
      EXPECT_EQ(plan.tasks[task].split, got.first_split + s);
    }
    // Slots partial_base + s * n_vec + v for s < n_splits, v < n_vec: after the last item's,
    // and inside the launch's slots.
    EXPECT_GE(got.partial_base, previous_end);
    previous_end = got.partial_base + static_cast<int64_t>(got.n_splits) * got.n_q * got.n_heads;
    EXPECT_LE(previous_end, decode_partial_slots(shape));
  }
  EXPECT_EQ(task, plan.tasks.size());
}

TEST(DecodeAttention, ItemsAreThePlansItems) {
  const HeadShape shapes[] = {{32, 8}, {9, 3}, {16, 1}, {24, 2}, {8, 8}, {14, 2}, {1, 1}};
  std::mt19937 rng(7);
  std::uniform_int_distribution<int64_t> position(0, 5000);
  for (const HeadShape& heads : shapes) {
    for (int64_t window : {int64_t{0}, int64_t{1}, int64_t{64}, int64_t{100}, int64_t{4096}}) {
      for (size_t n_seqs : {size_t{1}, size_t{3}, size_t{8}}) {
        std::vector<int64_t> positions(n_seqs);
        for (int64_t& p : positions) p = position(rng);
        positions[0] = 0;                   // the first query of a sequence
        if (n_seqs > 1) positions[1] = 63;  // the last key of a split, and its first
        if (n_seqs > 2) positions[2] = 64;
        SCOPED_TRACE(testing::Message() << heads.n_heads << " heads, " << heads.n_kv_heads << " KV heads, window "
                                        << window << ", " << n_seqs << " sequences");
        expect_same_items(positions, heads, window);
      }
    }
  }
}

TEST(DecodeAttention, TheSplitBoundIsAPowerOfTwoCoveringThePosition) {
  EXPECT_EQ(decode_split_bound(0), 8);
  EXPECT_EQ(decode_split_bound(8 * kSplitKeys - 1), 8);
  EXPECT_EQ(decode_split_bound(8 * kSplitKeys), 16);
  EXPECT_EQ(decode_split_bound(100000), 2048);  // 100000 / 64 + 1 = 1563 splits
  for (int64_t p = 0; p < 70000; p += 997) {
    const int32_t bound = decode_split_bound(p);
    EXPECT_GE(bound, p / kSplitKeys + 1);
    EXPECT_EQ(bound & (bound - 1), 0);
  }
}

}  // namespace
}  // namespace lumen::backend::cuda
