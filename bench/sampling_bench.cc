// Time per token of the sampling chain (Google Benchmark; built with -DLUMEN_BENCH=ON), for
// each sampler alone and the whole chain, at SmolLM2's vocabulary (49152) and Gemma 3's (262144).
// One iteration = Sampler::sample + Sampler::accept on one row of logits, as a decode step
// does. The budget (issue 6): the whole chain under 5% of a SmolLM2 decode step on 2 threads
// (~8 ms), i.e. under 0.4 ms at 49k.
//
//   build/<dir>/bench/sampling_bench
//
// The logits look like a language model's: a Gaussian body (sd 2.5) and a handful of peaks
// 6-14 above it, so the top few tokens hold most of the mass but the body is not negligible.
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "sampling/dense_kernels.h"
#include "sampling/dense_ops.h"
#include "sampling/sampler.h"

namespace {

using lumen::sampling::Sampler;
using lumen::sampling::SamplerWorkspace;
using lumen::sampling::SamplingParams;

std::vector<float> realistic_logits(size_t vocab, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> body(0.0f, 2.5f);
  std::vector<float> logits(vocab);
  for (float& z : logits) z = body(rng);
  std::uniform_int_distribution<size_t> pick(0, vocab - 1);
  std::uniform_real_distribution<float> height(6.0f, 14.0f);
  for (int i = 0; i < 8; ++i) logits[pick(rng)] += height(rng);
  return logits;
}

enum Config { Greedy, Temperature, TopK, TopP, MinP, Typical, Penalties, Logprobs, FullChain };

const char* config_name(Config c) {
  switch (c) {
    case Greedy:
      return "greedy";
    case Temperature:
      return "temp 0.8";
    case TopK:
      return "top-k 40";
    case TopP:
      return "top-p 0.9";
    case MinP:
      return "min-p 0.05";
    case Typical:
      return "typical 0.9";
    case Penalties:
      return "penalties (rep 1.1, freq 0.5, pres 0.5, last 64) + temp";
    case Logprobs:
      return "greedy + logprobs 20";
    case FullChain:
      return "full chain (bias, penalties, top-k 40, top-p 0.95, min-p 0.05, typical 0.95, "
             "logprobs 5)";
  }
  return "?";
}

SamplingParams params_for(Config c) {
  SamplingParams p;
  p.seed = 1;
  p.temperature = c == Greedy || c == Logprobs ? 0.0f : 0.8f;
  if (c == TopK) p.top_k = 40;
  if (c == TopP) p.top_p = 0.9f;
  if (c == MinP) p.min_p = 0.05f;
  if (c == Typical) p.typical_p = 0.9f;
  if (c == Penalties || c == FullChain) {
    p.repetition_penalty = 1.1f;
    p.frequency_penalty = 0.5f;
    p.presence_penalty = 0.5f;
    p.penalty_last_n = 64;
  }
  if (c == Logprobs) p.logprobs = 20;
  if (c == FullChain) {
    p.top_k = 40;
    p.top_p = 0.95f;
    p.min_p = 0.05f;
    p.typical_p = 0.95f;
    p.logprobs = 5;
    p.logit_bias = {{11, 2.0f}, {42, -100.0f}, {1000, 5.0f}};
  }
  return p;
}

// args: config, vocab
void BM_Sample(benchmark::State& state) {
  const auto config = static_cast<Config>(state.range(0));
  const auto vocab = static_cast<size_t>(state.range(1));
  const std::vector<float> logits = realistic_logits(vocab, 7);
  // A 256-token prompt for the penalty window.
  std::mt19937_64 rng(3);
  std::vector<int32_t> prompt(256);
  for (int32_t& t : prompt) t = static_cast<int32_t>(rng() % vocab);
  Sampler sampler(params_for(config), prompt);
  SamplerWorkspace workspace;
  for (auto _ : state) {
    const auto result = sampler.sample(logits, workspace);
    sampler.accept(result.token);
    benchmark::DoNotOptimize(result.token);
  }
  state.SetLabel(config_name(config));
}

BENCHMARK(BM_Sample)
    ->ArgsProduct({{Greedy, Temperature, TopK, TopP, MinP, Typical, Penalties, Logprobs, FullChain},
                   {49152, 262144}})
    ->Unit(benchmark::kMicrosecond);

// The passes every non-greedy config pays once or twice: max, and the sum of exp.
void BM_RowMax(benchmark::State& state) {
  const std::vector<float> logits = realistic_logits(static_cast<size_t>(state.range(0)), 7);
  for (auto _ : state) benchmark::DoNotOptimize(lumen::sampling::max_value(logits));
  state.SetLabel(lumen::sampling::kernels::best_kernels().name);
}

void BM_RowSumExp(benchmark::State& state) {
  const std::vector<float> logits = realistic_logits(static_cast<size_t>(state.range(0)), 7);
  const float max = lumen::sampling::max_value(logits);
  for (auto _ : state) benchmark::DoNotOptimize(lumen::sampling::sum_exp(logits, max, 1.25f));
  state.SetLabel(lumen::sampling::kernels::best_kernels().name);
}

BENCHMARK(BM_RowMax)->Arg(49152)->Arg(262144)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_RowSumExp)->Arg(49152)->Arg(262144)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
