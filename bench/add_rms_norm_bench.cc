// The residual add and the next RMSNorm on the CPU backend: fused (add_rms_norm, one pass over
// the rows) against its peer, the plain add then rms_norm the transformer runs on a backend
// without the op, in the same run (Google Benchmark; built with -DLUMEN_BENCH=ON). Shapes:
// SmolLM2-135M's width (576) and Llama 3.2 1B's (2048), one decode row and a 512-token prefill;
// 1 and 2 threads. GB/s counts the bytes the plain path moves (a, b, sum and out, the sum read
// again), so the two are comparable.
//
//   build/release/bench/add_rms_norm_bench --benchmark_format=json
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "backend/cpu/cpu_backend.h"

namespace {

using lumen::backend::CpuBackend;
using lumen::backend::f32_matrix;
using lumen::backend::TensorView;

std::vector<float> random_values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-2.0f, 2.0f);
  std::vector<float> out(n);
  for (float& v : out) v = uniform(rng);
  return out;
}

// args: fused (1) or plain (0), width, rows, threads. fused varies fastest, so each pair of
// peers runs back to back (the machine's load drifts less between them).
void BM_AddRmsNorm(benchmark::State& state) {
  const bool fused = state.range(0) != 0;
  const int64_t width = state.range(1), rows = state.range(2);
  CpuBackend cpu(static_cast<unsigned>(state.range(3)));
  const auto n = static_cast<size_t>(width * rows);
  std::vector<float> x = random_values(n, 1), h = random_values(n, 2), w = random_values(static_cast<size_t>(width), 3);
  TensorView xv = f32_matrix(x.data(), width, rows), hv = f32_matrix(h.data(), width, rows);
  const TensorView wv = f32_matrix(w.data(), width, 1);
  for (auto _ : state) {
    // As the transformer calls it: the sum over the residual x, the norm over h.
    if (fused) {
      cpu.add_rms_norm(xv, hv, wv, 1e-5f, xv, hv);
    } else {
      cpu.add(xv, hv, xv);
      cpu.rms_norm(xv, wv, 1e-5f, hv);
    }
    benchmark::ClobberMemory();
    // Keep the residual bounded over the iterations (it grows by h each time).
    if (state.iterations() % 64 == 0) std::fill(x.begin(), x.end(), 0.5f);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(n) * 5 * 4);
  state.SetLabel(fused ? "fused" : "plain");
}

BENCHMARK(BM_AddRmsNorm)
    ->ArgNames({"fused", "width", "rows", "threads"})
    ->ArgsProduct({{0, 1}, {576, 2048}, {1, 512}, {1, 2}})
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
