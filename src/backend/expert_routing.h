#pragma once
// What a mixture-of-experts router is told (RouterConfig) and the arithmetic of its choice for
// one token, written once for the host and the device: the CPU's route_tokens
// (backend/common/expert_router.h) runs these functions token by token, and the CUDA router
// kernel runs the same ones with a warp's lanes splitting the experts, so tests on a CPU
// (tests/unit/cuda_host) can check the lane-split order against the sequential one.
//
// llama.cpp's build_moe_ffn is the definition: softmax over the experts (the sum in double,
// as ggml_soft_max) or a sigmoid per expert; a selection copy with DeepSeek-V3's per-expert
// bias added and all but the best groups masked; the top n_used of that, largest first; their
// unbiased probabilities as weights, renormalized (a double sum clamped at f16's smallest
// normal) and scaled where the architecture says.
#include <math.h>

#include <cmath>
#include <cstdint>

#include "backend/cuda/hd_math.h"  // LUMEN_HD: host and device

namespace lumen::backend {

// How a router turns its logits into expert probabilities. SoftmaxWeight (gpt-oss, llama.cpp's
// SOFTMAX_WEIGHT): the experts are chosen by their raw logits and weighted by a softmax over the
// chosen ones' logits only.
enum class ExpertGating : uint8_t { Softmax, Sigmoid, SoftmaxWeight };

struct RouterConfig {
  int64_t n_experts = 0;
  int64_t n_used = 0;  // experts per token (top-k), 1..n_experts
  ExpertGating gating = ExpertGating::Softmax;
  bool normalize = false;  // renormalize the chosen weights to sum to 1
  float scale = 0.0f;      // then multiply them by this (0 or 1: leave them)
  // DeepSeek-V3's group-limited routing (n_groups > 1): experts form n_groups equal groups, each
  // scored by the sum of its two highest selection values; a token chooses its experts from the
  // n_groups_used best groups only.
  int64_t n_groups = 0;
  int64_t n_groups_used = 0;
};

// Groups a router may have: the kept groups of a token fit one 64-bit mask.
inline constexpr int64_t kMaxExpertGroups = 64;

namespace routing {

// The order experts are chosen in: larger value first, equal values the lower index first, NaN
// (from a broken activation) after every number. A total order, so picking "the first after
// the last pick" n_used times gives the sorted top n_used, however the experts are split.
LUMEN_HD bool before(float va, int32_t a, float vb, int32_t b) {
  const bool na = va != va, nb = vb != vb;
  if (na != nb) return nb;
  return va > vb || (!(vb > va) && a < b);
}

// A candidate (value, expert); index -1: none yet.
struct Pick {
  float value;
  int32_t index;
};
LUMEN_HD Pick no_pick() { return {0.0f, -1}; }
// The earlier of two candidates in `before`'s order (associative and commutative).
LUMEN_HD Pick earlier(Pick a, Pick b) {
  if (a.index < 0) return b;
  if (b.index < 0) return a;
  return before(a.value, a.index, b.value, b.index) ? a : b;
}
// Whether expert (v, e) is still a candidate after `last` was picked (last.index -1: first pick).
LUMEN_HD bool after(float v, int32_t e, Pick last) { return last.index < 0 || before(last.value, last.index, v, e); }

// The value expert e is chosen by: its probability plus its selection bias (bias may be null),
// or -inf where its group (e / per_group; per_group 0: no groups) is not in `kept`.
LUMEN_HD float chooser_value(const float* probs, const float* bias, uint64_t kept, int64_t per_group, int64_t e) {
  if (per_group > 0 && ((kept >> (e / per_group)) & 1) == 0) return -INFINITY;
  return bias != nullptr ? probs[e] + bias[e] : probs[e];
}

// A softmax probability from the row's max and its (double) sum of exps: exp(l - max) times the
// f32 reciprocal of the sum, as ggml_soft_max rounds it.
LUMEN_HD float softmax_exp(float logit, float max) { return expf(cuda::hd::sub_rn(logit, max)); }
LUMEN_HD float softmax_scale(double sum) { return static_cast<float>(1.0 / sum); }
LUMEN_HD float sigmoid(float logit) { return 1.0f / (1.0f + expf(-logit)); }

// gpt-oss's weights (ExpertGating::SoftmaxWeight): the k chosen logits, largest first, become a
// softmax over themselves (the sum in double), in place.
LUMEN_HD void softmax_over_chosen(float* weights, int64_t k) {
  const float max = weights[0];
  double sum = 0.0;
  for (int64_t s = 0; s < k; ++s) {
    weights[s] = softmax_exp(weights[s], max);
    sum += static_cast<double>(weights[s]);
  }
  const float scale = softmax_scale(sum);
  for (int64_t s = 0; s < k; ++s) weights[s] = cuda::hd::mul_rn(weights[s], scale);
}

// A group's score from its selection values: the sum of its two highest.
struct TopTwo {
  float first = -INFINITY, second = -INFINITY;
};
LUMEN_HD void add_to_top_two(TopTwo& t, float x) {
  if (x > t.first) {
    t.second = t.first;
    t.first = x;
  } else if (x > t.second) {
    t.second = x;
  }
}
LUMEN_HD float group_score(const TopTwo& t) { return cuda::hd::add_rn(t.first, t.second); }

// The kept groups (bit g) of a token whose n_groups scores are given: the n_groups_used first in
// `before`'s order (equal scores: the lower group).
LUMEN_HD uint64_t kept_groups(const float* scores, int64_t n_groups, int64_t n_groups_used) {
  uint64_t kept = 0;
  for (int64_t g = 0; g < n_groups; ++g) {
    int64_t rank = 0;
    for (int64_t h = 0; h < n_groups; ++h) {
      if (h != g && before(scores[h], static_cast<int32_t>(h), scores[g], static_cast<int32_t>(g))) ++rank;
    }
    if (rank < n_groups_used) kept |= uint64_t{1} << g;
  }
  return kept;
}

// The weights' divisor when they are renormalized: their double sum, clamped at 2^-14 (the
// smallest normal f16) as llama.cpp clamps it.
LUMEN_HD float normalizer(double sum) {
  const auto total = static_cast<float>(sum);
  return total > 6.103515625e-5f ? total : 6.103515625e-5f;
}

// llama.cpp's shared-expert gate: silu(g) / g, which is sigmoid(g) rounded as ggml rounds it
// (silu is g / (1 + exp(-g)) in f32); its limit 1/2 at g = 0, where the division has none.
LUMEN_HD float shared_expert_gate(float g) {
  if (g == 0.0f) return 0.5f;
  const float silu = g / (1.0f + expf(-g));
  return silu / g;
}

}  // namespace routing
}  // namespace lumen::backend
