#pragma once
// The stages of the chain that rewrite logits in place, before temperature and the filters:
// logit bias, then the penalties (definitions in sampling_params.h). Each is a plain function
// of its inputs so that tests can check it against hand-computed values.
#include <cstdint>
#include <span>
#include <utility>

#include "sampling/penalty_window.h"

namespace lumen::sampling {

// logits[token] += bias for each pair. Throws lumen::Error for a token outside the logits
// (SamplingParams::validate_for_vocab catches that when the request arrives).
void apply_logit_bias(std::span<float> logits, std::span<const std::pair<int32_t, float>> bias);

struct Penalties {
  float repetition = 1.0f;
  float frequency = 0.0f;
  float presence = 0.0f;
};

// For each distinct token t of the window (ids outside the logits are skipped):
//   repetition (count(t) > 0):  logits[t] = logits[t] > 0 ? logits[t] / r : logits[t] * r
//   then                        logits[t] -= output_count(t) * f + (output_count(t) > 0) * p
void apply_penalties(std::span<float> logits, const PenaltyWindow& window,
                     const Penalties& penalties);

}  // namespace lumen::sampling
