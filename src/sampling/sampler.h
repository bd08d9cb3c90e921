#pragma once
// Picks the next token from a row of logits: greedy at temperature 0, otherwise temperature,
// top-k and top-p (nucleus) filtering and a draw from a per-request seeded generator. The full
// processor chain (penalties, min-p, typical-p, logit bias, grammar) builds on this.
#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace lumen::sampling {

struct SamplingParams {
  float temperature = 0.8f;  // 0: greedy
  int32_t top_k = 40;        // <= 0: no limit
  float top_p = 0.95f;       // 1: no limit
  uint64_t seed = 0;
};

class Sampler {
 public:
  explicit Sampler(SamplingParams params);
  int32_t sample(std::span<const float> logits);

 private:
  struct Candidate {
    int32_t id;
    float logit;
  };
  SamplingParams params_;
  std::mt19937_64 rng_;
  std::vector<Candidate> candidates_;  // reused across calls: no allocation per token
  std::vector<double> probs_;
};

// The index of the largest logit (the lowest index among equals).
int32_t argmax(std::span<const float> logits);

}  // namespace lumen::sampling
