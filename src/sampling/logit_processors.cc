#include "sampling/logit_processors.h"

#include "util/error.h"

namespace lumen::sampling {

void apply_logit_bias(std::span<float> logits, std::span<const std::pair<int32_t, float>> bias) {
  for (const auto& [token, value] : bias) {
    if (token < 0 || static_cast<size_t>(token) >= logits.size()) {
      fail("logit_bias names token id {}, outside the vocabulary [0, {})", token, logits.size());
    }
    logits[static_cast<size_t>(token)] += value;
  }
}

void apply_penalties(std::span<float> logits, const PenaltyWindow& window,
                     const Penalties& penalties) {
  const bool repetition = penalties.repetition != 1.0f;
  window.for_each([&](const PenaltyWindow::Entry& e) {
    // A prompt token outside the vocabulary cannot be penalized (the engine rejects such
    // prompts; here it is simply not a logit).
    if (static_cast<size_t>(e.token) >= logits.size()) return;
    float& logit = logits[static_cast<size_t>(e.token)];
    if (repetition)
      logit = logit > 0.0f ? logit / penalties.repetition : logit * penalties.repetition;
    if (e.output_count > 0) {
      logit -= static_cast<float>(e.output_count) * penalties.frequency + penalties.presence;
    }
  });
}

}  // namespace lumen::sampling
