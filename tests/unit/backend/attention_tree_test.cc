// Tree attention (SequenceSlice::visible): each row of a slice with a tree mask must attend
// exactly as the last row of the plain causal chain it selects would: the context, then its
// ancestors and itself, in order. The check builds a random tree over a context, and for every
// row a second sequence holding the same context followed by that row's path, and compares the
// two outputs (every instruction-set level, f16 and f32 caches, context and tree rows spanning
// blocks, with and without a sliding window counted from the rows' positions). A mask that let
// a row see a sibling or a cousin would change its output by far more than the tolerance
// (checked too), and malformed masks and row positions are refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "backend/cpu/attention.h"
#include "backend/cpu/attention_tiles.h"
#include "backend/cpu/cpu_features.h"
#include "attention_tile_levels.h"
#include "paged_cache_fixture.h"
#include "util/error.h"

namespace lumen::backend::cpu {
namespace {

using testing::PagedCache;
using testing::tile_levels;

constexpr int64_t kHeadDim = 64, kHeads = 4, kKvHeads = 2, kBlock = 8;
constexpr int64_t kKvDim = kHeadDim * kKvHeads;

struct TreeCase {
  int64_t context;           // cached positions before the tree
  std::vector<int32_t> parent;  // per tree row: the row it extends, -1 for the root (row 0)
};

// A tree slice and, for every row, a chain slice of its path, in one batch over one cache.
struct TreeBatch {
  PagedCache cache;
  std::vector<std::vector<int32_t>> tables;
  std::vector<SequenceSlice> slices;
  std::vector<uint8_t> visible;
  std::vector<int32_t> positions;  // the tree rows': context + depth (the root's depth is 0)
  std::vector<float> q;
  int64_t window = 0;  // the attention's sliding window (0: none)
  int64_t n_tokens = 0;
  std::vector<int64_t> chain_row;  // per tree row: the batch row of its chain's last query

  TreeBatch(tensor::DType type, const TreeCase& c, bool leak_sibling = false)
      : cache(type, kKvDim, kBlock, 256) {
    std::mt19937 rng(7);
    const auto n = static_cast<int64_t>(c.parent.size());
    std::vector<std::vector<float>> ctx_k, ctx_v, row_k, row_v, row_q;
    for (int64_t p = 0; p < c.context; ++p) {
      ctx_k.push_back(testing::random_values(kKvDim, static_cast<uint32_t>(rng())));
      ctx_v.push_back(testing::random_values(kKvDim, static_cast<uint32_t>(rng())));
    }
    for (int64_t r = 0; r < n; ++r) {
      row_k.push_back(testing::random_values(kKvDim, static_cast<uint32_t>(rng())));
      row_v.push_back(testing::random_values(kKvDim, static_cast<uint32_t>(rng())));
      row_q.push_back(testing::random_values(kHeadDim * kHeads, static_cast<uint32_t>(rng()), -3.0f, 3.0f));
    }
    int32_t next_block = 0;
    auto new_table = [&](int64_t length) {
      std::vector<int32_t> t;
      for (int64_t b = 0; b * kBlock < length; ++b) t.push_back(next_block++);
      return t;
    };
    // The tree: context, then row r at position context + r.
    tables.push_back(new_table(c.context + n));
    for (int64_t p = 0; p < c.context; ++p) cache.write(PagedCache::row_of(tables[0], p, kBlock), ctx_k[p].data(), ctx_v[p].data());
    for (int64_t r = 0; r < n; ++r) {
      cache.write(PagedCache::row_of(tables[0], c.context + r, kBlock), row_k[r].data(), row_v[r].data());
      q.insert(q.end(), row_q[r].begin(), row_q[r].end());
    }
    visible.assign(static_cast<size_t>(n * n), 0);
    for (int64_t r = 0; r < n; ++r) {
      for (int64_t a = r; a >= 0; a = c.parent[static_cast<size_t>(a)]) visible[static_cast<size_t>(r * n + a)] = 1;
    }
    if (leak_sibling) {  // row 2 (a child of the root beside row 1, see the cases) also sees row 1
      visible[static_cast<size_t>(2 * n + 1)] = 1;
    }
    for (int64_t r = 0; r < n; ++r) {
      int32_t depth = 0;
      for (int64_t a = r; c.parent[static_cast<size_t>(a)] >= 0; a = c.parent[static_cast<size_t>(a)]) ++depth;
      positions.push_back(static_cast<int32_t>(c.context + depth));
    }
    slices.push_back({0, n, c.context, tables[0], visible, positions});
    n_tokens = n;
    // One chain per row: context, then its path from the root; only the last row is compared.
    for (int64_t r = 0; r < n; ++r) {
      std::vector<int64_t> path;
      for (int64_t a = r; a >= 0; a = c.parent[static_cast<size_t>(a)]) path.push_back(a);
      std::reverse(path.begin(), path.end());
      const auto len = static_cast<int64_t>(path.size());
      tables.push_back(new_table(c.context + len));
      const std::vector<int32_t>& t = tables.back();
      for (int64_t p = 0; p < c.context; ++p) cache.write(PagedCache::row_of(t, p, kBlock), ctx_k[p].data(), ctx_v[p].data());
      for (int64_t i = 0; i < len; ++i) {
        const auto a = static_cast<size_t>(path[static_cast<size_t>(i)]);
        cache.write(PagedCache::row_of(t, c.context + i, kBlock), row_k[a].data(), row_v[a].data());
        q.insert(q.end(), row_q[a].begin(), row_q[a].end());
      }
      slices.push_back({n_tokens, len, c.context, t});
      n_tokens += len;
      chain_row.push_back(n_tokens - 1);
    }
  }

  AttentionConfig config() const {
    AttentionConfig c;
    c.n_heads = kHeads;
    c.n_kv_heads = kKvHeads;
    c.head_dim = kHeadDim;
    c.scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
    c.sliding_window = window;
    return c;
  }

  std::vector<float> run(const AttentionTileKernels& tiles, unsigned threads) {
    ThreadPool pool(threads);
    AttentionScratch scratch;
    std::vector<float> out(static_cast<size_t>(kHeadDim * kHeads * n_tokens), std::nanf(""));
    const TensorView qt{tensor::DType::F32, {kHeadDim, kHeads, n_tokens, 1}, kHeadDim * 4, q.data()};
    TensorView ot{tensor::DType::F32, {kHeadDim, kHeads, n_tokens, 1}, kHeadDim * 4, out.data()};
    attention_with(tiles, qt, cache.layer(), slices, config(), ot, pool, scratch);
    return out;
  }

  // The largest difference between tree row r's output and its chain's, over every row.
  double worst_difference(const std::vector<float>& out) const {
    double worst = 0.0;
    const int64_t width = kHeadDim * kHeads;
    for (size_t r = 0; r < chain_row.size(); ++r) {
      for (int64_t d = 0; d < width; ++d) {
        const double diff = std::abs(out[r * width + d] - out[chain_row[r] * width + d]);
        if (!(diff <= worst)) worst = std::isnan(diff) ? INFINITY : diff;
      }
    }
    return worst;
  }
};

// Rows 1 and 2 are siblings under the root in both cases (the leak check relies on it).
const TreeCase kCases[] = {
    // Lookahead's shape: a chain (the draft), and a window of columns beside it.
    {13, {-1, 0, 0, 1, 2, 3, 0, 6, 7, 4, 9}},
    // A wide, shallow tree right at the start of a block, with a long context.
    {40, {-1, 0, 0, 0, 1, 1, 2, 3, 5, 5, 8, 8, 8, 10, 0, 14, 15, 16, 17}},
};

TEST(AttentionTree, EachRowAttendsAsTheChainOfItsAncestors) {
  for (const TreeCase& c : kCases) {
    for (const tensor::DType type : {tensor::DType::F16, tensor::DType::F32}) {
      TreeBatch batch(type, c);
      for (const AttentionTileKernels* tiles : tile_levels()) {
        for (const unsigned threads : {1u, 2u}) {
          EXPECT_LT(batch.worst_difference(batch.run(*tiles, threads)), 1e-5)
              << tensor::dtype_name(type) << " cache, context " << c.context << ", " << threads << " threads";
        }
      }
    }
  }
}

// With a sliding window a tree row sees what its chain's last row sees: the window counts from
// the row's position (the root's plus its depth), not from where the tree put it in the cache,
// for the context and for its ancestors alike (windows shorter than the tree is deep included).
TEST(AttentionTree, ASlidingWindowCountsFromEachRowsPosition) {
  for (const TreeCase& c : kCases) {
    for (const int64_t window : {3, 10, 30}) {
      for (const tensor::DType type : {tensor::DType::F16, tensor::DType::F32}) {
        TreeBatch batch(type, c);
        batch.window = window;
        for (const AttentionTileKernels* tiles : tile_levels()) {
          EXPECT_LT(batch.worst_difference(batch.run(*tiles, 2)), 1e-5)
              << tensor::dtype_name(type) << " cache, context " << c.context << ", window " << window;
        }
      }
    }
  }
  // Counting from the cache position instead (no row positions) shows up.
  TreeBatch batch(tensor::DType::F32, kCases[1]);
  batch.window = 10;
  batch.slices[0].positions = {};
  EXPECT_GT(batch.worst_difference(batch.run(best_attention_tiles(), 2)), 1e-3);
}

TEST(AttentionTree, ASiblingLeakingIntoTheMaskWouldBeCaught) {
  TreeBatch batch(tensor::DType::F32, kCases[0], /*leak_sibling=*/true);
  EXPECT_GT(batch.worst_difference(batch.run(best_attention_tiles(), 2)), 1e-3);
}

TEST(AttentionTree, MalformedMasksAreRefused) {
  TreeBatch batch(tensor::DType::F16, kCases[0]);
  ThreadPool pool(1);
  AttentionScratch scratch;
  std::vector<float> out(batch.q.size());
  const TensorView qt{tensor::DType::F32, {kHeadDim, kHeads, batch.n_tokens, 1}, kHeadDim * 4, batch.q.data()};
  TensorView ot{tensor::DType::F32, {kHeadDim, kHeads, batch.n_tokens, 1}, kHeadDim * 4, out.data()};
  auto slices = batch.slices;
  std::vector<uint8_t> mask = batch.visible;
  mask.pop_back();  // not n x n
  slices[0].visible = mask;
  EXPECT_THROW(attention(qt, batch.cache.layer(), slices, batch.config(), ot, pool, scratch), Error);
  mask = batch.visible;
  mask[1] = 1;  // row 0 sees the later row 1
  slices[0].visible = mask;
  EXPECT_THROW(attention(qt, batch.cache.layer(), slices, batch.config(), ot, pool, scratch), Error);
  // Row positions: one per row, each in [start_pos, start_pos + row], and only with a mask.
  slices = batch.slices;
  std::vector<int32_t> positions(batch.positions.begin(), batch.positions.end() - 1);
  slices[0].positions = positions;
  EXPECT_THROW(attention(qt, batch.cache.layer(), slices, batch.config(), ot, pool, scratch), Error);
  positions = batch.positions;
  positions[3] = static_cast<int32_t>(slices[0].start_pos + 4);  // later than its cache position
  slices[0].positions = positions;
  EXPECT_THROW(attention(qt, batch.cache.layer(), slices, batch.config(), ot, pool, scratch), Error);
  positions[3] = static_cast<int32_t>(slices[0].start_pos - 1);  // before the slice
  EXPECT_THROW(attention(qt, batch.cache.layer(), slices, batch.config(), ot, pool, scratch), Error);
  slices = batch.slices;
  slices[1].positions = batch.positions;  // a chain slice: no mask
  EXPECT_THROW(attention(qt, batch.cache.layer(), slices, batch.config(), ot, pool, scratch), Error);
}

}  // namespace
}  // namespace lumen::backend::cpu
