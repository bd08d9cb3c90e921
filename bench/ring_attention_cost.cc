// Not a Google Benchmark: ring attention's kernel (model/partial_attention.h) against the CPU
// backend's attention over the same query rows and keys, in one run, JSON on stdout (issue 53).
// Gemma 3 270M's attention shape (4 query heads over 1 KV head of 256), a prompt of T tokens
// split as context parallelism splits it over N ranks: rank 0's rows (chunks 0 and 2N-1) attend
// every rank's block in turn, f16 blocks (what the ring sends with an f16 cache) or f32, merged
// by log-sum-exp; the backend attends the same rows over an f16 paged cache holding all T
// positions (what one process does for those rows). Both count the same work: 4 x head_dim
// flops per query head and visible (row, key) pair. Global layers (causal only) and Gemma's
// sliding-window layers (512) are timed separately. Best of --repeats.
//
//   build/release/bench/ring_attention_cost --tokens 4096 --ranks 2 --repeats 3
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <ctime>
#include <vector>

#include "backend/cpu/attention.h"
#include "backend/cpu/cpu_features.h"
#include "model/context_chunks.h"
#include "model/partial_attention.h"
#include "tensor/fp16.h"
#include "util/thread_pool.h"

namespace {

namespace cpu = lumen::backend::cpu;
namespace model = lumen::model;
using lumen::backend::AttentionConfig;
using lumen::backend::KvLayer;
using lumen::backend::SequenceSlice;
using lumen::backend::TensorView;
using lumen::tensor::DType;

constexpr int64_t kHeadDim = 256, kHeads = 4, kKvHeads = 1, kBlock = 16;

// The best wall and process CPU seconds of `repeats` runs: on a shared machine the wall time also
// counts waits for a core, the CPU time only the work.
struct Seconds {
  double wall = 1e300, cpu = 1e300;
};

double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

Seconds best_seconds(int repeats, const std::function<void()>& fn) {
  Seconds best;
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = process_cpu_seconds();
    fn();
    best.cpu = std::min(best.cpu, process_cpu_seconds() - c0);
    best.wall = std::min(best.wall, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

std::vector<int32_t> rows_of(const model::ContextChunks& c) {
  std::vector<int32_t> rows;
  for (const model::RowRange& r : {c.early, c.late}) {
    for (int64_t i = r.first; i < r.first + r.count; ++i) rows.push_back(static_cast<int32_t>(i));
  }
  return rows;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t tokens = 4096;
  int ranks = 2, repeats = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--tokens") tokens = std::atoll(argv[i + 1]);
    if (flag == "--ranks") ranks = std::atoi(argv[i + 1]);
    if (flag == "--repeats") repeats = std::atoi(argv[i + 1]);
  }
  const int64_t kv_dim = kHeadDim * kKvHeads;
  std::mt19937 rng(53);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  // Every position's K and V, rounded to f16 as the cache holds them.
  std::vector<uint16_t> k16(static_cast<size_t>(tokens * kv_dim)), v16(k16.size());
  for (auto& h : k16) h = lumen::tensor::float_to_fp16(normal(rng));
  for (auto& h : v16) h = lumen::tensor::float_to_fp16(normal(rng));
  // The backend's paged cache: position p in block p / 16, blocks in order.
  const int64_t blocks = (tokens + kBlock - 1) / kBlock;
  std::vector<uint16_t> cache_k(static_cast<size_t>(blocks * kBlock * kv_dim)), cache_v(cache_k.size());
  std::copy(k16.begin(), k16.end(), cache_k.begin());
  std::copy(v16.begin(), v16.end(), cache_v.begin());
  std::vector<int32_t> table(static_cast<size_t>(blocks));
  for (int64_t b = 0; b < blocks; ++b) table[static_cast<size_t>(b)] = static_cast<int32_t>(b);
  KvLayer cache;
  cache.block_size = kBlock;
  cache.k = TensorView{DType::F16, {kv_dim, kBlock, blocks, 1}, static_cast<size_t>(kv_dim) * 2, cache_k.data()};
  cache.v = TensorView{DType::F16, {kv_dim, kBlock, blocks, 1}, static_cast<size_t>(kv_dim) * 2, cache_v.data()};

  const model::ContextChunks mine = model::context_chunks(tokens, 0, ranks);
  const std::vector<int32_t> rows = rows_of(mine);
  const auto n = static_cast<int64_t>(rows.size());
  std::vector<float> q(static_cast<size_t>(n * kHeads * kHeadDim)), out(q.size()), part(q.size());
  for (auto& x : q) x = normal(rng);
  std::vector<float> lse(static_cast<size_t>(n * kHeads)), part_lse(lse.size());
  // Each rank's block as the ring carries it: f16 rows, and the same widened to f32.
  struct Block {
    std::vector<int32_t> positions;
    std::vector<uint16_t> k16, v16;
    std::vector<float> k32, v32;
  };
  std::vector<Block> ring(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    Block& b = ring[static_cast<size_t>(r)];
    b.positions = rows_of(model::context_chunks(tokens, r, ranks));
    for (int32_t p : b.positions) {
      for (int64_t d = 0; d < kv_dim; ++d) {
        const uint16_t kh = k16[static_cast<size_t>(p * kv_dim + d)], vh = v16[static_cast<size_t>(p * kv_dim + d)];
        b.k16.push_back(kh), b.v16.push_back(vh);
        b.k32.push_back(lumen::tensor::fp16_to_float(kh)), b.v32.push_back(lumen::tensor::fp16_to_float(vh));
      }
    }
  }
  std::printf("{\"tokens\": %lld, \"ranks\": %d, \"rank0_rows\": %lld, \"isa\": \"%s\", \"repeats\": %d,\n",
              static_cast<long long>(tokens), ranks, static_cast<long long>(n),
              std::string(cpu::isa_name(cpu::selected_isa())).c_str(), repeats);
  std::printf(" \"shape\": {\"heads\": %lld, \"kv_heads\": %lld, \"head_dim\": %lld}, \"runs\": [\n",
              static_cast<long long>(kHeads), static_cast<long long>(kKvHeads), static_cast<long long>(kHeadDim));
  bool first_line = true;
  for (const int64_t window : {int64_t{0}, int64_t{512}}) {
    AttentionConfig config;
    config.n_heads = kHeads;
    config.n_kv_heads = kKvHeads;
    config.head_dim = kHeadDim;
    config.scale = 1.0f / 16.0f;
    config.sliding_window = window;
    // Visible (row, key) pairs: the work both sides do.
    double pairs = 0;
    for (int32_t p : rows) pairs += window > 0 ? std::min<double>(p + 1, static_cast<double>(window)) : p + 1.0;
    const double gflop = pairs * kHeads * 4.0 * kHeadDim * 1e-9;
    for (const unsigned threads : {1u, 2u}) {
      lumen::ThreadPool pool(threads);
      cpu::AttentionScratch scratch;
      TensorView qv{DType::F32, {kHeadDim, kHeads, n, 1}, kHeadDim * 4, q.data()};
      TensorView ov{DType::F32, {kHeadDim, kHeads, n, 1}, kHeadDim * 4, out.data()};
      const SequenceSlice seqs[] = {{0, mine.early.count, mine.early.first, table},
                                    {mine.early.count, mine.late.count, mine.late.first, table}};
      const Seconds backend =
          best_seconds(repeats, [&] { cpu::attention(qv, cache, seqs, config, ov, pool, scratch); });
      const model::PartialAttentionRun run{nullptr, &pool};
      const auto ring_pass = [&](bool f16) {
        for (size_t s = 0; s < ring.size(); ++s) {
          const Block& b = ring[s];
          std::span<float> o = s == 0 ? std::span<float>(out) : std::span<float>(part);
          std::span<float> l = s == 0 ? std::span<float>(lse) : std::span<float>(part_lse);
          if (f16) {
            model::partial_attention({q, rows}, model::F16KvRows{b.k16, b.v16, b.positions}, config, o, l, run);
          } else {
            model::partial_attention({q, rows}, {b.k32, b.positions}, b.v32, config, o, l, run);
          }
          if (s > 0) model::merge_partial_attention(out, lse, part, part_lse, kHeadDim);
        }
      };
      const Seconds ring_f16 = best_seconds(repeats, [&] { ring_pass(true); });
      const Seconds ring_f32 = best_seconds(repeats, [&] { ring_pass(false); });
      std::printf(
          "%s  {\"window\": %lld, \"threads\": %u, \"gflop\": %.3f, \"backend_wall_s\": %.4f, "
          "\"backend_cpu_s\": %.4f, \"ring_f16_wall_s\": %.4f, \"ring_f16_cpu_s\": %.4f, "
          "\"ring_f32_wall_s\": %.4f, \"ring_f32_cpu_s\": %.4f, \"ring_f16_over_backend_cpu\": %.3f}",
          first_line ? "" : ",\n", static_cast<long long>(window), threads, gflop, backend.wall, backend.cpu,
          ring_f16.wall, ring_f16.cpu, ring_f32.wall, ring_f32.cpu, ring_f16.cpu / backend.cpu);
      first_line = false;
    }
  }
  std::printf("\n]}\n");
  return 0;
}
