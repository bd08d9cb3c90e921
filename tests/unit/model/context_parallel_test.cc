// Context parallelism's pieces that need no second process (model/context_chunks.h,
// model/partial_attention.h): which rows each rank holds, and ring attention's arithmetic, held
// to the CPU backend's own attention over the same keys. tests/e2e/test_context_parallel.py runs
// the real model on real ranks under mpirun.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "model/context_chunks.h"
#include "model/kv_cache.h"
#include "model/partial_attention.h"
#include "util/error.h"

namespace lumen::model {
namespace {

TEST(ContextChunks, EveryRowOnceTwoMirroredChunksPerRank) {
  for (int size : {1, 2, 3, 4, 8}) {
    for (int64_t n : {int64_t{2} * size, int64_t{97}, int64_t{300}, int64_t{16384}}) {
      std::vector<int> owner(static_cast<size_t>(n), -1);
      for (int rank = 0; rank < size; ++rank) {
        const ContextChunks c = context_chunks(n, rank, size);
        // Chunk r and chunk 2N-1-r of 2N: sizes within one row of n / 2N, early before late.
        for (const RowRange& r : {c.early, c.late}) {
          EXPECT_GE(r.count, n / (2 * size));
          EXPECT_LE(r.count, n / (2 * size) + 1);
          for (int64_t i = r.first; i < r.first + r.count; ++i) {
            EXPECT_EQ(owner[static_cast<size_t>(i)], -1) << "row " << i << " held twice";
            owner[static_cast<size_t>(i)] = rank;
            EXPECT_EQ(context_rank_of_row(i, n, size), rank);
          }
        }
        EXPECT_LE(c.early.first + c.early.count, c.late.first);
        EXPECT_EQ(c.early.first, rank * n / (2 * size));
        EXPECT_EQ(c.late.first + c.late.count, (2 * size - rank) * n / (2 * size));
      }
      EXPECT_EQ(std::count(owner.begin(), owner.end(), -1), 0) << n << " rows over " << size;
    }
  }
}

TEST(ContextChunks, CausalWorkIsBalanced) {
  // Row p attends to p + 1 keys: each rank's pair of chunks sums to the same work, to a chunk's
  // rounding (a split into N consecutive pieces would give the last rank 2N - 1 times the first's).
  const int64_t n = 16384;
  for (int size : {2, 4, 8}) {
    double least = 1e300, most = 0;
    for (int rank = 0; rank < size; ++rank) {
      const ContextChunks c = context_chunks(n, rank, size);
      double work = 0;
      for (const RowRange& r : {c.early, c.late}) {
        for (int64_t i = r.first; i < r.first + r.count; ++i) work += static_cast<double>(i + 1);
      }
      least = std::min(least, work);
      most = std::max(most, work);
    }
    EXPECT_LT(most / least, 1.001) << size << " ranks";
  }
}

TEST(ContextChunks, RefusesPromptsShorterThanTwoRowsPerRank) {
  EXPECT_THROW(context_chunks(3, 0, 2), Error);
  EXPECT_THROW(context_chunks(100, 2, 2), Error);
  EXPECT_THROW(context_rank_of_row(100, 100, 2), Error);
  EXPECT_NO_THROW(context_chunks(4, 1, 2));
}

// Random queries, keys and values of a grouped-query layer (8 query heads over 2 KV heads).
struct Layer {
  backend::AttentionConfig config;
  int64_t n;
  std::vector<float> q, k, v;
};

Layer random_layer(int64_t n, int64_t window, float softcap) {
  Layer l{
      {.n_heads = 8, .n_kv_heads = 2, .head_dim = 64, .scale = 0.125f, .sliding_window = window, .softcap = softcap},
      n,
      {},
      {},
      {}};
  std::mt19937 rng(53);
  std::normal_distribution<float> normal(0.0f, 1.5f);
  auto fill = [&](std::vector<float>& x, int64_t count) {
    x.resize(static_cast<size_t>(count));
    for (float& value : x) value = normal(rng);
  };
  fill(l.q, n * 8 * 64);
  fill(l.k, n * 2 * 64);
  fill(l.v, n * 2 * 64);
  return l;
}

// The backend's causal attention of every row over every key, through an f32 paged cache.
std::vector<float> backend_attention(Layer& l) {
  backend::CpuBackend backend(1);
  HParams hp;
  hp.block_count = 1;
  hp.head_count = 8;
  hp.head_count_kv = 2;
  hp.head_dim = 64;
  hp.embedding_length = 512;
  const int64_t block = 16, blocks = (l.n + block - 1) / block;
  KvCache cache(backend, hp, blocks, block, tensor::DType::F32, false);
  std::vector<int32_t> table(static_cast<size_t>(blocks));
  for (int64_t b = 0; b < blocks; ++b) table[static_cast<size_t>(b)] = static_cast<int32_t>(b);
  const backend::SequenceSlice seq{0, l.n, 0, table};
  backend.store_kv(backend::f32_matrix(l.k.data(), 128, l.n), backend::f32_matrix(l.v.data(), 128, l.n), {&seq, 1},
                   cache.layer(0));
  std::vector<float> out(l.q.size());
  backend::TensorView q = backend::f32_matrix(l.q.data(), 64, 8 * l.n);
  q.dims = {64, 8, l.n, 1};
  backend::TensorView o = backend::f32_matrix(out.data(), 64, 8 * l.n);
  o.dims = {64, 8, l.n, 1};
  backend.attention(q, cache.layer(0), {&seq, 1}, l.config, o);
  return out;
}

// The keys of rows `rows` (ascending) as one block: its K and V rows and positions.
struct Block {
  std::vector<float> k, v;
  std::vector<int32_t> positions;
};

Block block_of(const Layer& l, const std::vector<int32_t>& rows) {
  Block b;
  for (int32_t r : rows) {
    b.k.insert(b.k.end(), l.k.begin() + r * 128, l.k.begin() + (r + 1) * 128);
    b.v.insert(b.v.end(), l.v.begin() + r * 128, l.v.begin() + (r + 1) * 128);
    b.positions.push_back(r);
  }
  return b;
}

// Every row's attention as ring attention computes it: over the keys of each rank's two chunks
// in turn (in `order`), merged by log-sum-exp.
std::vector<float> merged_attention(const Layer& l, int ranks, const std::vector<int>& order) {
  std::vector<int32_t> all(static_cast<size_t>(l.n));
  for (int64_t i = 0; i < l.n; ++i) all[static_cast<size_t>(i)] = static_cast<int32_t>(i);
  std::vector<float> out(l.q.size()), lse(static_cast<size_t>(l.n * 8));
  std::vector<float> part(out.size()), part_lse(lse.size());
  bool first = true;
  for (int rank : order) {
    const ContextChunks c = context_chunks(l.n, rank, ranks);
    std::vector<int32_t> rows;
    for (const RowRange& r : {c.early, c.late}) {
      for (int64_t i = r.first; i < r.first + r.count; ++i) rows.push_back(static_cast<int32_t>(i));
    }
    const Block b = block_of(l, rows);
    partial_attention({l.q, all}, {b.k, b.positions}, b.v, l.config, first ? out : part, first ? lse : part_lse);
    if (!first) merge_partial_attention(out, lse, part, part_lse, 64);
    first = false;
  }
  return out;
}

void expect_near(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  float worst = 0;
  for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(got[i] - want[i]));
  EXPECT_LT(worst, 2e-5f);
}

TEST(PartialAttention, MergedOverDisjointKeySetsEqualsTheBackendsAttention) {
  Layer l = random_layer(203, 0, 0.0f);
  const std::vector<float> want = backend_attention(l);
  expect_near(merged_attention(l, 1, {0}), want);        // one block: all the keys
  expect_near(merged_attention(l, 2, {0, 1}), want);     // rank 0's view of the ring
  expect_near(merged_attention(l, 3, {2, 0, 1}), want);  // rank 2's: the order does not matter
  expect_near(merged_attention(l, 4, {1, 3, 2, 0}), want);
}

TEST(PartialAttention, SlidingWindowAndSoftcapAsTheBackend) {
  Layer l = random_layer(150, 37, 20.0f);
  const std::vector<float> want = backend_attention(l);
  expect_near(merged_attention(l, 3, {1, 0, 2}), want);
}

TEST(PartialAttention, ARowThatSeesNoKeyOfTheBlockAddsNothing) {
  Layer l = random_layer(40, 0, 0.0f);
  std::vector<int32_t> early = {0, 1, 2}, late;
  for (int32_t i = 30; i < 40; ++i) late.push_back(i);
  const Block b = block_of(l, late);
  std::vector<float> q(l.q.begin(), l.q.begin() + 3 * 8 * 64), out(q.size(), 7.0f), lse(3 * 8, 0.0f);
  partial_attention({q, early}, {b.k, b.positions}, b.v, l.config, out, lse);
  for (float x : lse) EXPECT_EQ(x, -std::numeric_limits<float>::infinity());
  for (float x : out) EXPECT_EQ(x, 0.0f);
  // Merged into a real result, it leaves it as it was.
  std::vector<float> real(out.size(), 0.5f), real_lse(lse.size(), 1.0f);
  merge_partial_attention(real, real_lse, out, lse, 64);
  for (float x : real) EXPECT_EQ(x, 0.5f);
  for (float x : real_lse) EXPECT_EQ(x, 1.0f);
}

TEST(PartialAttention, RefusesMismatchedBuffersAndUnsortedPositions) {
  Layer l = random_layer(8, 0, 0.0f);
  std::vector<int32_t> pos = {0, 1, 2, 3, 4, 5, 6, 7}, shuffled = {1, 0, 2, 3, 4, 5, 6, 7};
  std::vector<float> out(l.q.size()), lse(8 * 8), short_out(10);
  EXPECT_THROW(partial_attention({l.q, pos}, {l.k, pos}, l.v, l.config, short_out, lse), Error);
  EXPECT_THROW(partial_attention({l.q, pos}, {l.k, shuffled}, l.v, l.config, out, lse), Error);
  EXPECT_NO_THROW(partial_attention({l.q, pos}, {l.k, pos}, l.v, l.config, out, lse));
}

}  // namespace
}  // namespace lumen::model
