// src/backend/cuda/attention_plan.cc on the host: every key a query row may see lies in the
// splits its item covers, for causal slices and for token trees, whose windows count back from
// each row's own position (a tree node's is its depth past the last token, earlier than its cache
// slot); and a tree's flags and positions reach the plan's arrays at each sequence's offsets.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "backend/cuda/attention_plan.h"
#include "random_token_tree.h"

namespace lumen::backend::cuda {
namespace {

struct TreeSlice {
  std::vector<int32_t> table;
  std::vector<uint8_t> visible;
  std::vector<int32_t> positions;
};

// A random tree of n rows under start_pos (random_token_tree.h) with a block table for them.
TreeSlice tree_slice(int64_t start_pos, int64_t n, uint32_t seed) {
  lumen::testing::RandomTokenTree tree = lumen::testing::random_token_tree(n, start_pos, seed);
  TreeSlice t{std::vector<int32_t>(static_cast<size_t>((start_pos + n) / 16 + 1)), std::move(tree.visible),
              std::move(tree.positions)};
  std::iota(t.table.begin(), t.table.end(), 0);
  return t;
}

// The lowest cache position row `row` of `seq` may see (the CPU's window_start), and its highest.
int64_t lowest_key(const SequenceSlice& seq, int64_t row, int64_t window) {
  const int64_t position = seq.positions.empty() ? seq.start_pos + row : seq.positions[static_cast<size_t>(row)];
  return window > 0 ? std::max<int64_t>(0, position - window + 1) : 0;
}

void expect_items_cover_every_visible_key(std::span<const SequenceSlice> seqs, const AttentionConfig& config) {
  const AttentionPlan plan = plan_attention(seqs, config, 16, int64_t{1} << 40);
  std::vector<const SequenceSlice*> planned;
  for (const SequenceSlice& s : seqs) {
    if (s.n_tokens > 0) planned.push_back(&s);
  }
  ASSERT_EQ(plan.seqs.size(), planned.size());
  for (const AttentionItem& item : plan.items) {
    const SequenceSlice& seq = *planned[static_cast<size_t>(item.seq)];
    const int64_t first_key = static_cast<int64_t>(item.first_split) * kSplitKeys;
    const int64_t end_key = static_cast<int64_t>(item.first_split + item.n_splits) * kSplitKeys;
    for (int64_t r = item.q_begin; r < item.q_begin + item.n_q; ++r) {
      EXPECT_GE(lowest_key(seq, r, config.sliding_window), first_key) << "row " << r;
      EXPECT_LT(seq.start_pos + r, end_key) << "row " << r;  // the row's own slot
      if (!seq.key_ends.empty()) {
        EXPECT_LE(seq.key_ends[static_cast<size_t>(r)], end_key) << "row " << r;
      }
    }
  }
  for (size_t i = 0; i < planned.size(); ++i) {
    const SequenceSlice& seq = *planned[i];
    const AttentionSeq& record = plan.seqs[i];
    EXPECT_EQ(record.n_tokens, seq.n_tokens);
    if (seq.visible.empty()) {
      EXPECT_EQ(record.mask_offset, -1);
    } else {
      ASSERT_GE(record.mask_offset, 0);
      EXPECT_TRUE(std::equal(seq.visible.begin(), seq.visible.end(), plan.masks.begin() + record.mask_offset));
    }
    if (seq.key_ends.empty()) {
      EXPECT_EQ(record.key_ends_offset, -1);
    } else {
      ASSERT_GE(record.key_ends_offset, 0);
      EXPECT_TRUE(std::equal(seq.key_ends.begin(), seq.key_ends.end(), plan.key_ends.begin() + record.key_ends_offset));
    }
    if (seq.positions.empty()) {
      EXPECT_EQ(record.positions_offset, -1);
    } else {
      ASSERT_GE(record.positions_offset, 0);
      EXPECT_TRUE(
          std::equal(seq.positions.begin(), seq.positions.end(), plan.positions.begin() + record.positions_offset));
    }
  }
}

TEST(AttentionPlan, ItemsCoverEveryKeyTheirRowsSeeWithTreesAndWindows) {
  const TreeSlice a = tree_slice(300, 24, 1), b = tree_slice(60, 9, 2), c = tree_slice(0, 13, 3);
  std::vector<int32_t> causal_table(40);
  std::iota(causal_table.begin(), causal_table.end(), 100);
  for (int64_t window : {int64_t{0}, int64_t{1}, int64_t{5}, int64_t{40}, int64_t{64}, int64_t{300}}) {
    for (int64_t heads : {int64_t{4}, int64_t{32}}) {
      AttentionConfig config;
      config.n_heads = heads;
      config.n_kv_heads = 4;
      config.head_dim = 64;
      config.sliding_window = window;
      std::vector<SequenceSlice> seqs;
      seqs.push_back({0, 24, 300, a.table, a.visible, a.positions});
      seqs.push_back({24, 30, 200, causal_table});
      seqs.push_back({54, 9, 60, b.table, b.visible, b.positions});
      seqs.push_back({63, 0, 10, causal_table});  // no rows: not planned
      seqs.push_back({63, 13, 0, c.table, c.visible, c.positions});
      SCOPED_TRACE(::testing::Message() << "window " << window << ", " << heads << " heads");
      expect_items_cover_every_visible_key(seqs, config);
    }
  }
}

// Spans that attend both ways (a Gemma 3 image's rows see the whole image): an item's splits
// reach the furthest key end of its rows, past the last row's own position, and each slice's
// key ends reach the plan's array at its offset.
TEST(AttentionPlan, ItemsReachTheEndOfTheirRowsSpans) {
  std::vector<int32_t> table(40);
  std::iota(table.begin(), table.end(), 0);
  // Slice a: rows 0-9 causal, rows 10-139 one span (each sees up to 130 + 140), the rest causal.
  const int64_t a_start = 130, a_rows = 150;
  std::vector<int32_t> a_ends(static_cast<size_t>(a_rows));
  for (int64_t r = 0; r < a_rows; ++r) {
    a_ends[static_cast<size_t>(r)] = static_cast<int32_t>(r >= 10 && r < 140 ? a_start + 140 : a_start + r + 1);
  }
  // Slice b: its whole 70 rows one span.
  const std::vector<int32_t> b_ends(70, 70);
  for (int64_t window : {int64_t{0}, int64_t{32}}) {
    for (int64_t heads : {int64_t{4}, int64_t{16}}) {
      AttentionConfig config;
      config.n_heads = heads;
      config.n_kv_heads = 4;
      config.head_dim = 64;
      config.sliding_window = window;
      std::vector<SequenceSlice> seqs;
      seqs.push_back({0, 12, 40, table});
      seqs.push_back({12, a_rows, a_start, table, {}, {}, a_ends});
      seqs.push_back({12 + a_rows, 70, 0, table, {}, {}, b_ends});
      SCOPED_TRACE(::testing::Message() << "window " << window << ", " << heads << " heads");
      expect_items_cover_every_visible_key(seqs, config);
    }
  }
}

// The backend reuses an uploaded plan while the key stays equal, so the key must change with
// everything either plan reads: a layer of another head dim (the prefill kernel's tasks hold 64
// query vectors at 64-128 dims, 32 at 256; a latent cache's value width is not its head dim) or
// another block must not find the last call's plan.
TEST(AttentionPlanKey, ChangesWithEverythingThePlansRead) {
  const std::vector<int32_t> table = {5, 2, 7, 1}, moved = {5, 2, 9, 1};
  // A tree of 4 rows: its row x row flags and positions.
  const std::vector<uint8_t> visible = {1, 0, 0, 0, 1, 1, 0, 0, 1, 0, 1, 0, 1, 1, 0, 1};
  const std::vector<int32_t> positions = {40, 41, 41, 42};
  AttentionConfig config;
  config.n_heads = 8;
  config.n_kv_heads = 2;
  config.head_dim = 128;
  const std::vector<SequenceSlice> base = {{0, 20, 30, table}, {20, 1, 12, table}};
  const std::vector<int64_t> key = attention_plan_key(base, config, 16);
  EXPECT_EQ(key, attention_plan_key(std::vector<SequenceSlice>(base), config, 16));

  std::vector<std::pair<const char*, std::vector<int64_t>>> changed;
  const auto with_config = [&](const char* what, auto change) {
    AttentionConfig c = config;
    change(c);
    changed.push_back({what, attention_plan_key(base, c, 16)});
  };
  with_config("head dim", [](AttentionConfig& c) { c.head_dim = 256; });
  with_config("value dim", [](AttentionConfig& c) { c.value_dim = 64; });
  with_config("query heads", [](AttentionConfig& c) { c.n_heads = 16; });
  with_config("KV heads", [](AttentionConfig& c) { c.n_kv_heads = 4; });
  with_config("window", [](AttentionConfig& c) { c.sliding_window = 16; });
  changed.push_back({"block size", attention_plan_key(base, config, 32)});
  const auto with_seqs = [&](const char* what, std::vector<SequenceSlice> seqs) {
    changed.push_back({what, attention_plan_key(seqs, config, 16)});
  };
  with_seqs("a block", {{0, 20, 30, moved}, {20, 1, 12, table}});
  with_seqs("first row", {{1, 20, 30, table}, {21, 1, 12, table}});
  with_seqs("rows", {{0, 19, 30, table}, {19, 1, 12, table}});
  with_seqs("start", {{0, 20, 31, table}, {20, 1, 12, table}});
  with_seqs("a sequence fewer", {{0, 20, 30, table}});
  with_seqs("a tree", {{0, 20, 30, table}, {20, 4, 40, table, visible, positions}});
  for (const auto& [what, other] : changed) EXPECT_NE(key, other) << what;
}

}  // namespace
}  // namespace lumen::backend::cuda
