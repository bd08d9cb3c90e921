#include "sampling/sampler.h"

#include <algorithm>
#include <cmath>

namespace lumen::sampling {

int32_t argmax(std::span<const float> logits) {
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

Sampler::Sampler(SamplingParams params) : params_(params), rng_(params.seed) {}

int32_t Sampler::sample(std::span<const float> logits) {
  if (params_.temperature <= 0.0f) return argmax(logits);
  candidates_.resize(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) {
    candidates_[i] = {static_cast<int32_t>(i), logits[i]};
  }
  auto by_logit = [](const Candidate& a, const Candidate& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
  };
  // Top-k keeps only k candidates, found in O(n) (no sort of the whole vocabulary).
  size_t keep = candidates_.size();
  if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < keep) {
    keep = static_cast<size_t>(params_.top_k);
    std::nth_element(candidates_.begin(), candidates_.begin() + static_cast<std::ptrdiff_t>(keep),
                     candidates_.end(), by_logit);
    candidates_.resize(keep);
  }
  std::sort(candidates_.begin(), candidates_.end(), by_logit);

  // Softmax at the temperature, then the smallest prefix whose mass reaches top_p.
  const float inv_t = 1.0f / params_.temperature;
  const float max_logit = candidates_.front().logit;
  std::vector<double>& probs = probs_;
  probs.resize(candidates_.size());
  double total = 0.0;
  for (size_t i = 0; i < candidates_.size(); ++i) {
    probs[i] = std::exp(static_cast<double>((candidates_[i].logit - max_logit) * inv_t));
    total += probs[i];
  }
  size_t nucleus = candidates_.size();
  if (params_.top_p < 1.0f) {
    double mass = 0.0;
    for (size_t i = 0; i < candidates_.size(); ++i) {
      mass += probs[i] / total;
      if (mass >= params_.top_p) {
        nucleus = i + 1;
        break;
      }
    }
  }
  double nucleus_total = 0.0;
  for (size_t i = 0; i < nucleus; ++i) nucleus_total += probs[i];
  double u = std::uniform_real_distribution<double>(0.0, nucleus_total)(rng_);
  for (size_t i = 0; i < nucleus; ++i) {
    u -= probs[i];
    if (u < 0.0) return candidates_[i].id;
  }
  return candidates_[nucleus - 1].id;
}

}  // namespace lumen::sampling
