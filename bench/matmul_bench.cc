// Throughput of the CPU matmul (Google Benchmark; built with -DLUMEN_BENCH=ON):
//  - decode GEMV (1 token): GB/s of weight bytes, next to the machine's read bandwidth
//    (BM_MemoryRead, a plain streaming sum over 512 MiB) -- decode is memory-bound;
//  - prefill GEMM (512 tokens): GFLOP/s (2 * rows * cols * tokens per call);
//  - a verification step's 6 tokens (speculative decoding): both, with the weight in cache;
//  - Stream: 1 to 6 tokens through a ring of copies of SmolLM2's gate+up weight, past the L3,
//    packed back to back on 2 MiB pages as the backend packs a model, so the weights come from
//    memory as a model's layers do (GB/s of weight bytes);
//  - StreamGlu: the same for SmolLM2's gate and up pair through matmul_glu (the FFN's first half).
// at SmolLM2-135M and llama-1B shapes, 1 and 2 threads, on the selected ISA (LUMEN_ISA lowers it).
//
//   build/release/bench/matmul_bench --benchmark_filter=Decode
//   build/release/bench/matmul_bench --benchmark_filter='Decode/type:2/rows:8192/.*'
#include <benchmark/benchmark.h>

#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "backend/cpu/activation.h"
#include "backend/cpu/matmul.h"
#include "backend/cpu/matmul_packed.h"
#include "backend/cpu/packed_arena.h"
#include "tensor/quantize.h"

namespace {

using lumen::tensor::DType;
namespace cpu = lumen::backend::cpu;

// A rows x cols weight of `type`: 64 distinct random rows repeated (quantizing a full llama-1B
// matrix with the reference quantizers would take longer than the benchmark).
struct Weight {
  std::vector<uint8_t> bytes;
  cpu::WeightMatrix matrix;
};

Weight make_weight(DType type, int64_t rows, int64_t cols) {
  Weight w;
  const size_t row_bytes = *lumen::tensor::row_bytes(type, cols);
  w.bytes.resize(row_bytes * static_cast<size_t>(rows));
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  std::vector<float> row(static_cast<size_t>(cols));
  const int64_t distinct = std::min<int64_t>(rows, 64);
  for (int64_t r = 0; r < distinct; ++r) {
    for (auto& v : row) v = normal(rng);
    lumen::tensor::quantize_row(type, row.data(), w.bytes.data() + row_bytes * r, cols);
  }
  for (int64_t r = distinct; r < rows; ++r) {
    std::memcpy(w.bytes.data() + row_bytes * r, w.bytes.data() + row_bytes * (r % distinct), row_bytes);
  }
  w.matrix = cpu::WeightMatrix{type, rows, cols, w.bytes.data(), row_bytes};
  return w;
}

// args: type, rows, cols, tokens, threads, packed (weights in the packed layout of
// matmul_packed.h, as CpuBackend uses them when packing pays off)
void BM_Matmul(benchmark::State& state) {
  const auto type = static_cast<DType>(state.range(0));
  const int64_t rows = state.range(1), cols = state.range(2), tokens = state.range(3);
  const auto threads = static_cast<unsigned>(state.range(4));
  const bool pack = state.range(5) != 0;
  Weight w = make_weight(type, rows, cols);
  std::vector<float> x(static_cast<size_t>(cols * tokens)), y(static_cast<size_t>(rows * tokens));
  std::mt19937 rng(2);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (auto& v : x) v = normal(rng);
  lumen::ThreadPool pool(threads);
  cpu::MatmulScratch scratch;
  std::unique_ptr<cpu::PackedWeights> packed;
  if (pack) {
    if (!cpu::packing_pays_off(type)) {
      state.SkipWithError("no packed kernels for this type on this CPU");
      return;
    }
    packed = std::make_unique<cpu::PackedWeights>(w.matrix, pool);
    w.matrix.packed = packed.get();
  }
  for (auto _ : state) {
    cpu::matmul(w.matrix, x.data(), cols, tokens, y.data(), rows, pool, scratch);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  const double calls = static_cast<double>(state.iterations());
  state.counters["weight_GBps"] =
      benchmark::Counter(calls * static_cast<double>(w.bytes.size()) / 1e9, benchmark::Counter::kIsRate);
  state.counters["GFLOPs"] =
      benchmark::Counter(calls * 2.0 * static_cast<double>(rows * cols * tokens) / 1e9, benchmark::Counter::kIsRate);
  state.SetLabel(std::string(lumen::tensor::dtype_name(type)) + " " + std::string(cpu::isa_name(cpu::selected_isa())) +
                 (pack ? " packed" : ""));
}

void matmul_args(benchmark::internal::Benchmark* b, int64_t tokens) {
  for (const DType type : {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q8_0, DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
    // SmolLM2-135M ffn up (1536 x 576) and down (576 x 1536); llama-1B ffn up and down. (576
    // columns are not whole K-quant super-blocks: llama.cpp stores such SmolLM2 tensors in a
    // legacy type, and so is that shape skipped for K-quants here.)
    // The llama-1B output projection (128256 x 2048, 147 MB in Q4_0) is the one decode shape
    // that does not fit in L3: it measures the memory stream (of Q4_0 and Q4_K).
    for (const auto& shape :
         {std::pair<int64_t, int64_t>{1536, 576}, {576, 1536}, {8192, 2048}, {2048, 8192}, {128256, 2048}}) {
      if (shape.second % lumen::tensor::dtype_info(type).block_elements != 0) continue;
      if (shape.first > 8192 && (tokens > 1 || (type != DType::Q4_0 && type != DType::Q4_K))) continue;
      for (const int64_t threads : {1, 2}) {
        for (const int64_t pack : {0, 1}) {
          if (pack && cpu::packed_format(type).qs_bytes == 0) continue;
          b->Args({static_cast<int64_t>(type), shape.first, shape.second, tokens, threads, pack});
        }
      }
    }
  }
  b->ArgNames({"type", "rows", "cols", "tokens", "threads", "packed"})->UseRealTime();
}

BENCHMARK(BM_Matmul)->Name("Decode")->Apply([](auto* b) { matmul_args(b, 1); });
BENCHMARK(BM_Matmul)->Name("Prefill")->Apply([](auto* b) { matmul_args(b, 512); });
// A speculative verification step: the last token and 5 drafts.
BENCHMARK(BM_Matmul)->Name("Verify")->Apply([](auto* b) { matmul_args(b, 6); });

// Packing (matmul_packed.h), as CpuBackend does at a weight's first matmul: GB/s of weights
// packed, fresh memory included (its page faults are part of the cost at load time).
void BM_Pack(benchmark::State& state) {
  const auto type = static_cast<DType>(state.range(0));
  const Weight w = make_weight(type, state.range(1), state.range(2));
  lumen::ThreadPool pool(static_cast<unsigned>(state.range(3)));
  for (auto _ : state) {
    cpu::PackedWeights packed(w.matrix, pool);
    benchmark::DoNotOptimize(packed.group(0));
  }
  state.counters["weight_GBps"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * static_cast<double>(w.bytes.size()) / 1e9, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Pack)
    ->Args({static_cast<int64_t>(DType::Q4_0), 128256, 2048, 1})
    ->Args({static_cast<int64_t>(DType::Q4_0), 128256, 2048, 2})
    ->Args({static_cast<int64_t>(DType::Q8_0), 49152, 576, 2})
    ->Args({static_cast<int64_t>(DType::Q4_K), 8192, 2048, 1})
    ->Args({static_cast<int64_t>(DType::Q6_K), 8192, 2048, 1})
    ->ArgNames({"type", "rows", "cols", "threads"})
    ->UseRealTime();

// Streaming read of 512 MiB on 1 or 2 threads: the bandwidth bound for decode.
void BM_MemoryRead(benchmark::State& state) {
  const size_t n = (size_t{512} << 20) / sizeof(uint64_t);
  std::vector<uint64_t> data(n, 1);
  const auto threads = static_cast<unsigned>(state.range(0));
  lumen::ThreadPool pool(threads);
  std::vector<uint64_t> partial(threads * 8);
  for (auto _ : state) {
    const int64_t chunks = 64;
    pool.parallel_for(chunks, [&](int64_t chunk, unsigned worker) {
      const uint64_t* p = data.data() + static_cast<size_t>(chunk) * (n / chunks);
      uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      for (size_t i = 0; i < n / chunks; i += 4) {
        s0 += p[i];
        s1 += p[i + 1];
        s2 += p[i + 2];
        s3 += p[i + 3];
      }
      partial[worker * 8] += s0 + s1 + s2 + s3;
    });
    benchmark::DoNotOptimize(partial.data());
  }
  state.counters["GBps"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * static_cast<double>(n * sizeof(uint64_t)) / 1e9,
                         benchmark::Counter::kIsRate);
}
BENCHMARK(BM_MemoryRead)->Arg(1)->Arg(2)->UseRealTime();

}  // namespace

namespace {

// `copies` packed copies of a weight, back to back on 2 MiB pages as CpuBackend packs a model,
// each with its matrix description.
struct PackedRing {
  cpu::PackedArena arena;
  std::vector<std::unique_ptr<cpu::PackedWeights>> packed;
  std::vector<cpu::WeightMatrix> matrices;

  PackedRing(const Weight& w, size_t copies, lumen::ThreadPool& pool) {
    for (size_t c = 0; c < copies; ++c) {
      packed.push_back(std::make_unique<cpu::PackedWeights>(w.matrix, pool, arena));
      matrices.push_back(w.matrix);
      matrices.back().packed = packed.back().get();
    }
  }
};

std::vector<float> random_activations(int64_t n) {
  std::vector<float> x(static_cast<size_t>(n));
  std::mt19937 rng(2);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (auto& v : x) v = normal(rng);
  return x;
}

}  // namespace

// The matmul over a ring of copies of the weight (about 128 MB in all, past the L3), as a
// model's layers follow each other, so the weights always come from memory: how much a
// verification step's extra tokens cost on top of the weight stream. args as BM_Matmul's.
void BM_MatmulStream(benchmark::State& state) {
  const auto type = static_cast<DType>(state.range(0));
  const int64_t rows = state.range(1), cols = state.range(2), tokens = state.range(3);
  const auto threads = static_cast<unsigned>(state.range(4));
  if (!cpu::packing_pays_off(type)) {
    state.SkipWithError("no packed kernels for this type on this CPU");
    return;
  }
  Weight w = make_weight(type, rows, cols);
  lumen::ThreadPool pool(threads);
  const size_t copies = std::max<size_t>(2, (size_t{128} << 20) / w.bytes.size());
  const PackedRing ring(w, copies, pool);
  const std::vector<float> x = random_activations(cols * tokens);
  std::vector<float> y(static_cast<size_t>(rows * tokens));
  cpu::MatmulScratch scratch;
  size_t next = 0;
  for (auto _ : state) {
    cpu::matmul(ring.matrices[next], x.data(), cols, tokens, y.data(), rows, pool, scratch);
    next = (next + 1) % copies;
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  const double calls = static_cast<double>(state.iterations());
  state.counters["weight_GBps"] =
      benchmark::Counter(calls * static_cast<double>(w.bytes.size()) / 1e9, benchmark::Counter::kIsRate);
  state.SetLabel(std::string(lumen::tensor::dtype_name(type)) + " " + std::string(cpu::isa_name(cpu::selected_isa())) +
                 " packed");
}
BENCHMARK(BM_MatmulStream)
    ->Name("Stream")
    ->ArgsProduct({{static_cast<int64_t>(DType::Q4_1)}, {3072}, {576}, {1, 2, 4, 6}, {1, 2}})
    ->ArgNames({"type", "rows", "cols", "tokens", "threads"})
    ->UseRealTime();

// matmul_glu over a ring of gate and up pairs (about 128 MB in all), as Stream does for one
// weight: what a verification step's extra tokens cost in the FFN's fused first half.
void BM_GluStream(benchmark::State& state) {
  const auto type = static_cast<DType>(state.range(0));
  const int64_t rows = state.range(1), cols = state.range(2), tokens = state.range(3);
  const auto threads = static_cast<unsigned>(state.range(4));
  if (!cpu::packing_pays_off(type)) {
    state.SkipWithError("no packed kernels for this type on this CPU");
    return;
  }
  Weight w = make_weight(type, rows, cols);
  lumen::ThreadPool pool(threads);
  const size_t pairs = std::max<size_t>(2, (size_t{64} << 20) / w.bytes.size());
  const PackedRing ring(w, 2 * pairs, pool);
  const std::vector<float> x = random_activations(cols * tokens);
  std::vector<float> gate(static_cast<size_t>(rows * tokens)), up(gate.size());
  cpu::MatmulScratch scratch;
  size_t next = 0;
  for (auto _ : state) {
    const cpu::MatmulTarget g{&ring.matrices[2 * next], gate.data(), rows};
    const cpu::MatmulTarget u{&ring.matrices[2 * next + 1], up.data(), rows};
    cpu::matmul_glu(g, u, cpu::swiglu_row, x.data(), cols, tokens, pool, scratch, cpu::selected_isa());
    next = (next + 1) % pairs;
    benchmark::DoNotOptimize(gate.data());
    benchmark::ClobberMemory();
  }
  const double calls = static_cast<double>(state.iterations());
  state.counters["weight_GBps"] =
      benchmark::Counter(calls * 2.0 * static_cast<double>(w.bytes.size()) / 1e9, benchmark::Counter::kIsRate);
  state.SetLabel(std::string(lumen::tensor::dtype_name(type)) + " " + std::string(cpu::isa_name(cpu::selected_isa())) +
                 " packed");
}
BENCHMARK(BM_GluStream)
    ->Name("StreamGlu")
    ->ArgsProduct({{static_cast<int64_t>(DType::Q4_1)}, {1536}, {576}, {1, 2, 4, 6}, {1, 2}})
    ->ArgNames({"type", "rows", "cols", "tokens", "threads"})
    ->UseRealTime();

// The matmul over a ring of copies of a weight in the file's own layout (about 256 MB in all,
// past the L3; packed 0), or packed (1) where the type has packed kernels: a decode step's MoE
// experts, which stay in the file's layout where packing does not pay (MXFP4) and are read once
// per token from memory. gpt-oss-20b's expert shape (2880 x 2880). args as BM_Matmul's.
void BM_MatmulStreamFileLayout(benchmark::State& state) {
  const auto type = static_cast<DType>(state.range(0));
  const int64_t rows = state.range(1), cols = state.range(2), tokens = state.range(3);
  const auto threads = static_cast<unsigned>(state.range(4));
  const bool pack = state.range(5) != 0;
  if (pack && !cpu::packing_pays_off(type)) {
    state.SkipWithError("no packed kernels for this type on this CPU");
    return;
  }
  Weight w = make_weight(type, rows, cols);
  lumen::ThreadPool pool(threads);
  const size_t copies = std::max<size_t>(2, (size_t{256} << 20) / w.bytes.size());
  std::vector<uint8_t> ring_bytes(copies * w.bytes.size());
  std::vector<cpu::WeightMatrix> matrices;
  std::unique_ptr<PackedRing> packed;
  if (pack) {
    packed = std::make_unique<PackedRing>(w, copies, pool);
    matrices = packed->matrices;
  } else {
    for (size_t c = 0; c < copies; ++c) {
      uint8_t* copy = ring_bytes.data() + c * w.bytes.size();
      std::memcpy(copy, w.bytes.data(), w.bytes.size());
      matrices.push_back(w.matrix);
      matrices.back().data = copy;
    }
  }
  const std::vector<float> x = random_activations(cols * tokens);
  std::vector<float> y(static_cast<size_t>(rows * tokens));
  cpu::MatmulScratch scratch;
  size_t next = 0;
  for (auto _ : state) {
    cpu::matmul(matrices[next], x.data(), cols, tokens, y.data(), rows, pool, scratch);
    next = (next + 1) % copies;
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  const double calls = static_cast<double>(state.iterations());
  state.counters["weight_GBps"] =
      benchmark::Counter(calls * static_cast<double>(w.bytes.size()) / 1e9, benchmark::Counter::kIsRate);
  state.SetLabel(std::string(lumen::tensor::dtype_name(type)) + " " + std::string(cpu::isa_name(cpu::selected_isa())) +
                 (pack ? " packed" : " file layout"));
}
BENCHMARK(BM_MatmulStreamFileLayout)
    ->Name("StreamFileLayout")
    ->ArgsProduct({{static_cast<int64_t>(DType::MXFP4), static_cast<int64_t>(DType::Q4_0),
                    static_cast<int64_t>(DType::Q8_0)},
                   {2880},
                   {2880},
                   {1},
                   {1, 2},
                   {0, 1}})
    ->ArgNames({"type", "rows", "cols", "tokens", "threads", "packed"})
    ->UseRealTime();

BENCHMARK_MAIN();
