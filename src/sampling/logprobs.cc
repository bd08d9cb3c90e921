#include "sampling/logprobs.h"

#include <cmath>

#include "sampling/dense_ops.h"
#include "util/error.h"

namespace lumen::sampling {

float token_logprobs(std::span<const float> logits, int32_t token, int32_t top_n,
                     std::vector<TokenLogprob>& top, std::vector<Candidate>& scratch) {
  if (token < 0 || static_cast<size_t>(token) >= logits.size()) {
    fail("token id {} is outside the vocabulary [0, {})", token, logits.size());
  }
  const float max = max_value(logits);
  if (!std::isfinite(max)) fail("no finite logit to take log-probabilities of");
  // log q_i = z_i - max - ln sum_j exp(z_j - max), in double so that the subtraction of two
  // nearly equal numbers keeps its digits.
  const double log_total = std::log(sum_exp(logits, max, 1.0f));
  auto logprob = [&](float z) {
    return static_cast<float>(static_cast<double>(z) - static_cast<double>(max) - log_total);
  };
  top.clear();
  if (top_n > 0) {
    top.reserve(static_cast<size_t>(top_n));  // one allocation, not one per doubling
    select_top(logits, static_cast<size_t>(top_n), scratch);
    for (const Candidate& c : scratch) top.push_back({c.id, logprob(c.logit)});
  }
  return logprob(logits[static_cast<size_t>(token)]);
}

}  // namespace lumen::sampling
