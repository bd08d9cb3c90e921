#include "benchmark/request_lengths.h"

#include <algorithm>

#include "util/error.h"

namespace lumen::benchmark {

int64_t draw_length(int64_t len, double ratio, std::mt19937_64& rng) {
  const auto lo = std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(len) * (1 - ratio)));
  const auto hi = std::max<int64_t>(lo, static_cast<int64_t>(static_cast<double>(len) * (1 + ratio)));
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

std::vector<RandomTokenRequest> random_token_requests(const RandomWorkload& workload) {
  if (workload.vocab_size <= 0 || workload.vocab_size > INT32_MAX) {
    fail("a vocabulary of {} tokens cannot make random prompts", workload.vocab_size);
  }
  std::mt19937_64 rng(workload.seed);
  const auto vocab = static_cast<int32_t>(workload.vocab_size);
  std::vector<RandomTokenRequest> requests;
  requests.reserve(static_cast<size_t>(std::max<int64_t>(workload.count, 0)));
  for (int64_t i = 0; i < workload.count; ++i) {
    const int64_t in = draw_length(workload.input_len, workload.range_ratio, rng);
    const int64_t out = draw_length(workload.output_len, workload.range_ratio, rng);
    RandomTokenRequest request;
    request.prompt.resize(static_cast<size_t>(in));
    for (int32_t& t : request.prompt) t = std::uniform_int_distribution<int32_t>(0, vocab - 1)(rng);
    request.output_len = out;
    requests.push_back(std::move(request));
  }
  return requests;
}

}  // namespace lumen::benchmark
