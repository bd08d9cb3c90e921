#pragma once
// The synthetic workload of the serving benchmarks (bench throughput, bench serve): prompts of
// random token ids, with input and output lengths drawn from a seeded uniform range around the
// asked lengths, so two runs with one seed send exactly the same requests.
#include <cstdint>
#include <random>
#include <vector>

namespace lumen::benchmark {

// A length uniform in [len * (1 - ratio), len * (1 + ratio)], at least 1; ratio 0: len itself.
int64_t draw_length(int64_t len, double ratio, std::mt19937_64& rng);

struct RandomWorkload {
  int64_t count = 0;
  int64_t input_len = 128;
  int64_t output_len = 128;
  double range_ratio = 0.0;
  int64_t vocab_size = 0;  // token ids are drawn from [0, vocab_size)
  uint64_t seed = 0;
};

struct RandomTokenRequest {
  std::vector<int32_t> prompt;
  int64_t output_len = 0;
};

// Per request, in this order: its input length, its output length, then its tokens.
std::vector<RandomTokenRequest> random_token_requests(const RandomWorkload& workload);

}  // namespace lumen::benchmark
