// Once a Sampler and its workspace have seen a row, sampling allocates nothing: every buffer is
// reused. Counted by replacing the global operator new, so this test is a binary of its own.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <random>
#include <vector>

#include "sampling/sampler.h"
#include "sampling/stopping.h"

namespace {
std::atomic<long> g_allocations{0};
}

void* operator new(std::size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace lumen::sampling {
namespace {

std::vector<float> random_logits(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 2.5f);
  std::vector<float> z(n);
  for (float& v : z) v = normal(rng);
  return z;
}

TEST(SamplerAllocation, NoneAfterWarmUp) {
  std::vector<SamplingParams> configs(6);
  for (SamplingParams& p : configs) {
    p.seed = 1;
    p.temperature = 0.8f;
  }
  configs[0].temperature = 0.0f;
  configs[1].top_k = 40;
  configs[2].top_p = 0.9f;
  configs[3].min_p = 0.05f;
  configs[4].typical_p = 0.9f;
  configs[5].top_k = 100;
  configs[5].top_p = 0.95f;
  configs[5].min_p = 0.02f;
  configs[5].typical_p = 0.95f;
  configs[5].repetition_penalty = 1.1f;
  configs[5].frequency_penalty = 0.3f;
  configs[5].presence_penalty = 0.3f;
  configs[5].penalty_last_n = 64;
  configs[5].logit_bias = {{3, 1.0f}};
  const std::vector<int32_t> prompt(100, 5);
  for (size_t c = 0; c < configs.size(); ++c) {
    SCOPED_TRACE(c);
    Sampler sampler(configs[c], prompt);
    TokenStopCondition stop(configs[c], std::vector<int32_t>{2});
    SamplerWorkspace workspace;
    std::vector<std::vector<float>> rows;
    for (uint64_t i = 0; i < 8; ++i) rows.push_back(random_logits(8192, i));
    // Warm-up: buffers grow to the row size, the penalty window to its 64 tokens.
    for (int i = 0; i < 200; ++i)
      sampler.accept(sampler.sample(rows[static_cast<size_t>(i) % 8], workspace).token);
    const long before = g_allocations.load();
    for (int i = 0; i < 200; ++i) {
      const int32_t t = sampler.sample(rows[static_cast<size_t>(i) % 8], workspace).token;
      sampler.accept(t);
      (void)stop.check(t);
    }
    EXPECT_EQ(g_allocations.load() - before, 0);
  }
}

}  // namespace
}  // namespace lumen::sampling
