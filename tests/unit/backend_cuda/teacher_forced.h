#pragma once
// What the CUDA model tests share (cuda_greedy_model_test.cc, cuda_split_model_test.cc): the
// prompts, the CPU's greedy continuation, teacher-forced logits along it, and the measures the
// backends are compared by (cuda_greedy_model_test.cc says why teacher-forced).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "default_model_path.h"
#include "engine/loaded_model.h"
#include "engine/single_sequence_forward.h"

namespace lumen::testing {

// $LUMEN_GPU_TEST_MODEL, else the default model.
inline std::string gpu_test_model_path() {
  const char* given = std::getenv("LUMEN_GPU_TEST_MODEL");
  return given != nullptr && *given != '\0' ? given : default_model_path();
}

inline const char* const kPrompts[] = {
    "The lighthouse keeper climbed the spiral stairs every evening,",
    "def fibonacci(n):\n    a, b = 0, 1\n",
    "Paris is the capital of",
    "List three uses of copper: 1.",
    "In 1969, the first humans to walk on the Moon were",
};

inline constexpr int kNewTokens = 64;
inline constexpr float kConfidentMargin = 1.0f;

// The logits after each token of prompt + continuation: row i follows token i of the prompt's
// last token onwards (row 0 is the prompt's next-token distribution).
inline std::vector<std::vector<float>> teacher_forced_logits(engine::LoadedModel& model, backend::Backend& backend,
                                                             const std::vector<int32_t>& prompt,
                                                             const std::vector<int32_t>& continuation) {
  engine::SingleSequenceForward generator(model, backend, 512);
  std::vector<std::vector<float>> rows;
  std::span<const float> logits = generator.feed(prompt);
  rows.emplace_back(logits.begin(), logits.end());
  for (size_t i = 0; i + 1 < continuation.size(); ++i) {
    const std::vector<int32_t> next = {continuation[i]};
    logits = generator.feed(next);
    rows.emplace_back(logits.begin(), logits.end());
  }
  return rows;
}

inline std::vector<int32_t> greedy_continuation(engine::LoadedModel& model, backend::Backend& backend,
                                                const std::vector<int32_t>& prompt) {
  engine::SingleSequenceForward generator(model, backend, 512);
  std::vector<int32_t> tokens;
  std::span<const float> logits = generator.feed(prompt);
  for (int i = 0; i < kNewTokens; ++i) {
    tokens.push_back(static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin()));
    const std::vector<int32_t> next = {tokens.back()};
    logits = generator.feed(next);
  }
  return tokens;
}

// KL(p || q) of the softmax distributions of two logit rows.
inline double kl_divergence(const std::vector<float>& p_logits, const std::vector<float>& q_logits) {
  auto log_softmax = [](const std::vector<float>& logits) {
    const double top = *std::max_element(logits.begin(), logits.end());
    double sum = 0.0;
    for (float v : logits) sum += std::exp(v - top);
    std::vector<double> out(logits.size());
    for (size_t i = 0; i < logits.size(); ++i) out[i] = logits[i] - top - std::log(sum);
    return out;
  };
  const std::vector<double> lp = log_softmax(p_logits), lq = log_softmax(q_logits);
  double kl = 0.0;
  for (size_t i = 0; i < lp.size(); ++i) kl += std::exp(lp[i]) * (lp[i] - lq[i]);
  return kl;
}

inline float top2_margin(const std::vector<float>& logits) {
  float first = -1e30f, second = -1e30f;
  for (float v : logits) {
    if (v > first) {
      second = first;
      first = v;
    } else if (v > second) {
      second = v;
    }
  }
  return first - second;
}

}  // namespace lumen::testing
