#include "backend/common/expert_router.h"

#include <algorithm>
#include <cmath>

#include "util/error.h"

namespace lumen::backend::common {

void check_router_config(const RouterConfig& config) {
  const int64_t n_experts = config.n_experts, k = config.n_used;
  if (n_experts <= 0 || k <= 0 || k > n_experts) fail("router: {} of {} experts per token", k, n_experts);
  if (config.gating == ExpertGating::SoftmaxWeight && config.n_groups > 1) {
    fail("router: grouped experts with a softmax over the chosen ones only");
  }
  if (config.n_groups > 1 &&
      (config.n_groups > kMaxExpertGroups || n_experts % config.n_groups != 0 || config.n_groups_used < 1 ||
       config.n_groups_used > config.n_groups || n_experts / config.n_groups < 2 ||
       config.n_groups_used * (n_experts / config.n_groups) < k)) {
    fail("router: {} experts in {} groups, {} used, cannot give {} experts per token", n_experts, config.n_groups,
         config.n_groups_used, k);
  }
}

void route_token(const float* row, const RouterConfig& config, const float* bias, float* probs, int32_t* experts,
                 float* weights) {
  const int64_t n_experts = config.n_experts, k = config.n_used;
  if (config.gating == ExpertGating::Softmax) {
    float max = -INFINITY;
    for (int64_t e = 0; e < n_experts; ++e) max = std::max(max, row[e]);
    double sum = 0.0;
    for (int64_t e = 0; e < n_experts; ++e) {
      probs[e] = routing::softmax_exp(row[e], max);
      sum += static_cast<double>(probs[e]);
    }
    const float scale = routing::softmax_scale(sum);
    for (int64_t e = 0; e < n_experts; ++e) probs[e] *= scale;
  } else if (config.gating == ExpertGating::Sigmoid) {
    for (int64_t e = 0; e < n_experts; ++e) probs[e] = routing::sigmoid(row[e]);
  } else {
    for (int64_t e = 0; e < n_experts; ++e) probs[e] = row[e];  // chosen by logit, weighted below
  }
  // Group-limited routing: each group's score from the biased values, the best groups kept.
  uint64_t kept = ~uint64_t{0};
  int64_t per_group = 0;
  if (config.n_groups > 1) {
    float scores[kMaxExpertGroups];
    const int64_t size = n_experts / config.n_groups;
    for (int64_t g = 0; g < config.n_groups; ++g) {
      routing::TopTwo top;
      for (int64_t e = g * size; e < (g + 1) * size; ++e)
        routing::add_to_top_two(top, routing::chooser_value(probs, bias, kept, 0, e));
      scores[g] = routing::group_score(top);
    }
    kept = routing::kept_groups(scores, config.n_groups, config.n_groups_used);
    per_group = size;
  }
  routing::Pick last = routing::no_pick();
  for (int64_t s = 0; s < k; ++s) {
    routing::Pick best = routing::no_pick();
    for (int64_t e = 0; e < n_experts; ++e) {
      const float v = routing::chooser_value(probs, bias, kept, per_group, e);
      if (routing::after(v, static_cast<int32_t>(e), last)) best = routing::earlier(best, {v, static_cast<int32_t>(e)});
    }
    experts[s] = best.index;
    weights[s] = probs[best.index];
    last = best;
  }
  if (config.gating == ExpertGating::SoftmaxWeight) routing::softmax_over_chosen(weights, k);
  if (config.normalize) {
    double sum = 0.0;
    for (int64_t s = 0; s < k; ++s) sum += static_cast<double>(weights[s]);
    const float total = routing::normalizer(sum);
    for (int64_t s = 0; s < k; ++s) weights[s] /= total;
  }
  if (config.scale != 0.0f && config.scale != 1.0f) {
    for (int64_t s = 0; s < k; ++s) weights[s] *= config.scale;
  }
}

void route_tokens(std::span<const float> logits, const RouterConfig& config, Routing& out,
                  std::span<const float> selection_bias) {
  check_router_config(config);
  const int64_t n_experts = config.n_experts, k = config.n_used;
  if (!selection_bias.empty() && selection_bias.size() != static_cast<size_t>(n_experts)) {
    fail("router: a selection bias of {} values for {} experts", selection_bias.size(), n_experts);
  }
  if (logits.size() % static_cast<size_t>(n_experts) != 0) {
    fail("router: {} logits are not whole rows of {} experts", logits.size(), n_experts);
  }
  const auto n_tokens = static_cast<int64_t>(logits.size()) / n_experts;
  out.experts.resize(static_cast<size_t>(n_tokens * k));
  out.weights.resize(static_cast<size_t>(n_tokens * k));
  std::vector<float> probs(static_cast<size_t>(n_experts));
  const float* bias = selection_bias.empty() ? nullptr : selection_bias.data();
  for (int64_t t = 0; t < n_tokens; ++t) {
    route_token(logits.data() + t * n_experts, config, bias, probs.data(), out.experts.data() + t * k,
                out.weights.data() + t * k);
  }
}

void group_by_expert(const Routing& routing, const RouterConfig& config, ExpertGroups& out) {
  const int64_t k = config.n_used;
  const auto entries = static_cast<int64_t>(routing.experts.size());
  if (k <= 0 || entries % k != 0 || routing.weights.size() != routing.experts.size()) {
    fail("router: {} routed entries are not whole tokens of {}", entries, k);
  }
  // A counting sort by expert keeps token order within each expert.
  std::vector<int64_t> count(static_cast<size_t>(config.n_experts) + 1, 0);
  for (int32_t e : routing.experts) {
    if (e < 0 || e >= config.n_experts) fail("router: expert {} is not in [0, {})", e, config.n_experts);
    ++count[static_cast<size_t>(e) + 1];
  }
  out.expert.clear();
  out.begin.clear();
  std::vector<int64_t> next(static_cast<size_t>(config.n_experts));
  int64_t offset = 0;
  for (int64_t e = 0; e < config.n_experts; ++e) {
    next[static_cast<size_t>(e)] = offset;
    if (count[static_cast<size_t>(e) + 1] > 0) {
      out.expert.push_back(static_cast<int32_t>(e));
      out.begin.push_back(offset);
    }
    offset += count[static_cast<size_t>(e) + 1];
  }
  out.begin.push_back(offset);
  out.rows.resize(static_cast<size_t>(entries));
  out.slots.resize(static_cast<size_t>(entries));
  out.weights.resize(static_cast<size_t>(entries));
  for (int64_t i = 0; i < entries; ++i) {
    const auto at = static_cast<size_t>(next[static_cast<size_t>(routing.experts[static_cast<size_t>(i)])]++);
    out.rows[at] = static_cast<int32_t>(i / k);
    out.slots[at] = static_cast<int32_t>(i % k);
    out.weights[at] = routing.weights[static_cast<size_t>(i)];
  }
}

}  // namespace lumen::backend::common
