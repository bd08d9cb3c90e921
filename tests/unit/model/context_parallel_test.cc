// Context parallelism's pieces that need no second process (model/context_chunks.h,
// model/partial_attention.h): which rows each rank holds, and ring attention's arithmetic, held
// to the CPU backend's own attention over the same keys. tests/e2e/test_context_parallel.py runs
// the real model on real ranks under mpirun.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "backend/cpu/attention_tiles.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_features.h"
#include "model/context_chunks.h"
#include "model/kv_cache.h"
#include "model/partial_attention.h"
#include "tensor/fp16.h"
#include "util/error.h"
#include "util/thread_pool.h"

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
std::vector<float> merged_attention(const Layer& l, int ranks, const std::vector<int>& order,
                                    const PartialAttentionRun& run = {}) {
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
    partial_attention({l.q, all}, {b.k, b.positions}, b.v, l.config, first ? out : part, first ? lse : part_lse, run);
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

// The tile tables this CPU can run, each named: the portable one always, AVX2 and AVX-512 when
// both the build and the CPU have them.
std::vector<std::pair<const char*, const backend::cpu::AttentionTileKernels*>> runnable_tiles() {
  using backend::cpu::Isa;
  std::vector<std::pair<const char*, const backend::cpu::AttentionTileKernels*>> tiles = {
      {"portable", &backend::cpu::portable_attention_tiles()}};
  const Isa isa = backend::cpu::detected_isa();
  if (backend::cpu::avx2_attention_tiles() != nullptr && isa >= Isa::kAvx2) {
    tiles.emplace_back("avx2", backend::cpu::avx2_attention_tiles());
  }
  if (backend::cpu::avx512_attention_tiles() != nullptr && isa >= Isa::kAvx512) {
    tiles.emplace_back("avx512", backend::cpu::avx512_attention_tiles());
  }
  return tiles;
}

TEST(PartialAttention, EveryInstructionSetAndThreadCountAsTheBackend) {
  Layer plain = random_layer(203, 0, 0.0f), windowed = random_layer(150, 37, 20.0f);
  const std::vector<float> want_plain = backend_attention(plain), want_windowed = backend_attention(windowed);
  ThreadPool two(2);
  for (const auto& [name, tiles] : runnable_tiles()) {
    for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &two}) {
      SCOPED_TRACE(std::string(name) + (pool != nullptr ? ", 2 threads" : ", 1 thread"));
      const PartialAttentionRun run{tiles, pool};
      const std::vector<float> got = merged_attention(plain, 3, {2, 0, 1}, run);
      expect_near(got, want_plain);
      expect_near(merged_attention(windowed, 2, {1, 0}, run), want_windowed);
      // Tasks write disjoint rows and heads: how many threads run them changes no bit.
      if (pool != nullptr) {
        EXPECT_EQ(got, merged_attention(plain, 3, {2, 0, 1}, {tiles, nullptr}));
      }
    }
  }
}

// Query heads that do not fill a task evenly (6 over 2 KV heads: 21 rows of 3 heads per task).
TEST(PartialAttention, GroupsOfThreeHeadsAsAReferenceInDouble) {
  Layer l = random_layer(90, 0, 0.0f);
  l.config.n_heads = 6;
  l.q.resize(static_cast<size_t>(90 * 6 * 64));
  // backend_attention's cache is built for 8 heads: the reference here is causal softmax
  // attention in double, key by key.
  std::vector<int32_t> all(90);
  for (int32_t i = 0; i < 90; ++i) all[static_cast<size_t>(i)] = i;
  std::vector<float> out(static_cast<size_t>(90 * 6 * 64)), lse(90 * 6);
  ThreadPool two(2);
  partial_attention({l.q, all}, {l.k, all}, l.v, l.config, out, lse, {nullptr, &two});
  float worst = 0;
  for (int64_t r = 0; r < 90; ++r) {
    for (int64_t h = 0; h < 6; ++h) {
      const float* q = l.q.data() + (r * 6 + h) * 64;
      const int64_t kv = h / 3;
      std::vector<double> w(static_cast<size_t>(r + 1));
      double top = -1e30, sum = 0;
      for (int64_t j = 0; j <= r; ++j) {
        double dot = 0;
        for (int64_t d = 0; d < 64; ++d) dot += double{q[d]} * l.k[static_cast<size_t>((j * 2 + kv) * 64 + d)];
        w[static_cast<size_t>(j)] = dot * 0.125;
        top = std::max(top, w[static_cast<size_t>(j)]);
      }
      for (double& x : w) sum += (x = std::exp(x - top));
      for (int64_t d = 0; d < 64; ++d) {
        double o = 0;
        for (int64_t j = 0; j <= r; ++j)
          o += w[static_cast<size_t>(j)] * l.v[static_cast<size_t>((j * 2 + kv) * 64 + d)];
        worst = std::max(worst, static_cast<float>(std::abs(o / sum - out[static_cast<size_t>((r * 6 + h) * 64 + d)])));
      }
      EXPECT_NEAR(lse[static_cast<size_t>(r * 6 + h)], top + std::log(sum), 1e-4);
    }
  }
  EXPECT_LT(worst, 2e-5f);
}

// An f16 block (what the ring sends when the cache is f16) gives, bit for bit, what the f32 form
// gives on the same rows widened: the tiles' f16 forms promise it, and the task loop must keep it.
TEST(PartialAttention, F16BlocksGiveTheF32FormsBitsOnTheWidenedRows) {
  Layer l = random_layer(130, 41, 30.0f);
  std::vector<uint16_t> k16(l.k.size()), v16(l.v.size());
  std::vector<float> k(l.k.size()), v(l.v.size());
  for (size_t i = 0; i < k.size(); ++i) k[i] = tensor::fp16_to_float(k16[i] = tensor::float_to_fp16(l.k[i]));
  for (size_t i = 0; i < v.size(); ++i) v[i] = tensor::fp16_to_float(v16[i] = tensor::float_to_fp16(l.v[i]));
  std::vector<int32_t> all(130);
  for (int32_t i = 0; i < 130; ++i) all[static_cast<size_t>(i)] = i;
  ThreadPool two(2);
  for (const auto& [name, tiles] : runnable_tiles()) {
    SCOPED_TRACE(name);
    std::vector<float> out32(l.q.size()), lse32(130 * 8), out16(l.q.size()), lse16(130 * 8);
    partial_attention({l.q, all}, {k, all}, v, l.config, out32, lse32, {tiles, nullptr});
    partial_attention({l.q, all}, F16KvRows{k16, v16, all}, l.config, out16, lse16, {tiles, &two});
    EXPECT_EQ(out16, out32);
    EXPECT_EQ(lse16, lse32);
  }
  // Refused like the f32 form when a buffer does not match.
  std::vector<float> out(l.q.size()), lse(130 * 8);
  EXPECT_THROW(partial_attention({l.q, all}, F16KvRows{std::span(k16).first(10), v16, all}, l.config, out, lse), Error);
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
