#include "spec/draft_length.h"

#include <algorithm>

namespace lumen::spec {

double expected_tokens(double acceptance, int32_t k) {
  const double a = std::clamp(acceptance, 0.0, 1.0);
  double tokens = 1.0;
  double run = 1.0;  // probability that the first j draft tokens are all accepted
  for (int32_t j = 0; j < k; ++j) {
    run *= a;
    tokens += run;
  }
  return tokens;
}

int32_t best_draft_length(double acceptance, double cost_per_draft_token, int32_t max_k) {
  if (max_k <= 1) return std::max(max_k, 0);
  const double c = std::max(cost_per_draft_token, 0.0);
  int32_t best = 1;
  double best_rate = expected_tokens(acceptance, 1) / (1.0 + c);
  for (int32_t k = 2; k <= max_k; ++k) {
    const double rate = expected_tokens(acceptance, k) / (1.0 + c * k);
    // Ties go to the longer draft: at zero cost every accepted token is free.
    if (rate >= best_rate) {
      best = k;
      best_rate = rate;
    }
  }
  return best;
}

}  // namespace lumen::spec
