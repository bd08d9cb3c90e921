// Throughput of the CPU attention over an f16 paged cache (Google Benchmark; built with
// -DLUMEN_BENCH=ON), in SmolLM2-135M's shape (head size 64, 9 query heads over 3 KV heads,
// blocks of 16 positions): one sequence at a given context, 1 row (a decode step) or several
// (a speculative verification step's rows), 1 or 2 threads. GFLOP/s counts q.k and p.v
// (4 * head size per query head, row and key); compare with `lumen bench profile`'s f32 peak.
// Also the exact f16 path's inner loops alone on one tile: the score and value products for
// one task's query vectors and the exponentials of a score row.
//
//   build/release/bench/attention_bench --benchmark_filter=Attention
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "backend/cpu/attention.h"
#include "backend/cpu/attention_tiles.h"
#include "tensor/fp16.h"
#include "util/thread_pool.h"

namespace {

namespace cpu = lumen::backend::cpu;
using lumen::backend::AttentionConfig;
using lumen::backend::KvLayer;
using lumen::backend::SequenceSlice;
using lumen::backend::TensorView;
using lumen::tensor::DType;

constexpr int64_t kHeadDim = 64, kHeads = 9, kKvHeads = 3, kBlock = 16;

std::vector<uint16_t> random_f16(size_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<uint16_t> out(n);
  for (auto& h : out) h = lumen::tensor::float_to_fp16(normal(rng));
  return out;
}

// GFLOP/s from the floating-point operations one iteration does.
void report_gflops(benchmark::State& state, double flops_per_iteration) {
  state.counters["GFLOP/s"] = benchmark::Counter(flops_per_iteration * 1e-9 * static_cast<double>(state.iterations()),
                                                 benchmark::Counter::kIsRate);
}

// A tile of 64 random f16 rows of one head, and the per-key row pointers the f16 loops read.
struct F16Tile {
  static constexpr int64_t kKeys = 64;
  std::vector<uint16_t> values;
  std::vector<const uint16_t*> rows;

  explicit F16Tile(uint32_t seed) : values(random_f16(static_cast<size_t>(kKeys * kHeadDim), seed, 1.0f)) {
    for (int64_t j = 0; j < kKeys; ++j) rows.push_back(values.data() + j * kHeadDim);
  }
};

// args: context (keys before the rows), rows, threads
void BM_Attention(benchmark::State& state) {
  const int64_t context = state.range(0), rows = state.range(1);
  const auto threads = static_cast<unsigned>(state.range(2));
  const int64_t positions = context + rows, kv_dim = kHeadDim * kKvHeads;
  const int64_t blocks = (positions + kBlock - 1) / kBlock;
  // The blocks in a shuffled order, as a paged cache hands them out.
  std::vector<int32_t> table(static_cast<size_t>(blocks));
  std::iota(table.begin(), table.end(), 0);
  std::shuffle(table.begin(), table.end(), std::mt19937(3));
  std::vector<uint16_t> k = random_f16(static_cast<size_t>(kv_dim * kBlock * blocks), 1, 1.0f);
  std::vector<uint16_t> v = random_f16(static_cast<size_t>(kv_dim * kBlock * blocks), 2, 1.0f);
  KvLayer cache;
  cache.block_size = kBlock;
  const size_t row_bytes = static_cast<size_t>(kv_dim) * 2;
  cache.k = TensorView{DType::F16, {kv_dim, kBlock, blocks, 1}, row_bytes, k.data()};
  cache.v = TensorView{DType::F16, {kv_dim, kBlock, blocks, 1}, row_bytes, v.data()};
  std::mt19937 rng(4);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> q(static_cast<size_t>(kHeadDim * kHeads * rows)), out(q.size());
  for (auto& x : q) x = normal(rng);
  TensorView qv{DType::F32, {kHeadDim, kHeads, rows, 1}, kHeadDim * 4, q.data()};
  TensorView ov{DType::F32, {kHeadDim, kHeads, rows, 1}, kHeadDim * 4, out.data()};
  const SequenceSlice seqs[] = {{0, rows, context, table}};
  AttentionConfig config;
  config.n_heads = kHeads;
  config.n_kv_heads = kKvHeads;
  config.head_dim = kHeadDim;
  config.scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
  lumen::ThreadPool pool(threads);
  cpu::AttentionScratch scratch;
  for (auto _ : state) {
    cpu::attention(qv, cache, seqs, config, ov, pool, scratch);
    benchmark::DoNotOptimize(out.data());
  }
  report_gflops(state, 4.0 * kHeadDim * kHeads * static_cast<double>(rows) * static_cast<double>(context));
}
BENCHMARK(BM_Attention)
    ->ArgNames({"context", "rows", "threads"})
    ->ArgsProduct({{900}, {1, 4, 6}, {1, 2}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// One task's score products on a tile of 64 keys: args: query vectors (3 heads x rows).
void BM_TileScores(benchmark::State& state) {
  const int64_t nq = state.range(0), nk = F16Tile::kKeys;
  const auto& tiles = cpu::best_attention_tiles();
  const F16Tile k(1);
  std::vector<float> q(static_cast<size_t>(nq * kHeadDim), 0.5f), scores(static_cast<size_t>(nq * nk));
  for (auto _ : state) {
    tiles.qk_f16(q.data(), nq, k.rows.data(), nk, kHeadDim, scores.data(), nk);
    benchmark::DoNotOptimize(scores.data());
  }
  report_gflops(state, 2.0 * kHeadDim * static_cast<double>(nq * nk));
}
BENCHMARK(BM_TileScores)->ArgName("queries")->Arg(3)->Arg(12)->Arg(18);

// One task's value products on a tile of 64 keys.
void BM_TileValues(benchmark::State& state) {
  const int64_t nq = state.range(0), nk = F16Tile::kKeys;
  const auto& tiles = cpu::best_attention_tiles();
  const F16Tile v(2);
  std::vector<float> p(static_cast<size_t>(nq * nk), 1.0f / 64), acc(static_cast<size_t>(nq * kHeadDim));
  for (auto _ : state) {
    tiles.pv_f16(p.data(), nq, nk, v.rows.data(), nk, kHeadDim, acc.data());
    benchmark::DoNotOptimize(acc.data());
  }
  report_gflops(state, 2.0 * kHeadDim * static_cast<double>(nq * nk));
}
BENCHMARK(BM_TileValues)->ArgName("queries")->Arg(3)->Arg(12)->Arg(18);

// The exponentials of one query's score row over 256 keys (one key chunk), summed in double.
void BM_ExpRow(benchmark::State& state) {
  const auto& tiles = cpu::best_attention_tiles();
  std::vector<float> base(256), row(256);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> uniform(-20.0f, 0.0f);
  for (auto& x : base) x = uniform(rng);
  for (auto _ : state) {
    std::memcpy(row.data(), base.data(), sizeof(float) * row.size());
    benchmark::DoNotOptimize(tiles.exp_shifted_f64(row.data(), 256, 0.0f));
  }
  state.counters["ns/exp"] = benchmark::Counter(256.0 * static_cast<double>(state.iterations()),
                                                benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_ExpRow);

}  // namespace

BENCHMARK_MAIN();
