#include "model/moe_router.h"

#include <algorithm>
#include <cmath>

#include "util/error.h"

namespace lumen::model {

namespace {

// ggml_soft_max: exp(l - max) with the sum in double, then each times (float)(1 / sum).
void softmax_row(const float* logits, int64_t n, float* probs) {
  float max = -INFINITY;
  for (int64_t i = 0; i < n; ++i) max = std::max(max, logits[i]);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    probs[i] = std::exp(logits[i] - max);
    sum += static_cast<double>(probs[i]);
  }
  const auto scale = static_cast<float>(1.0 / sum);
  for (int64_t i = 0; i < n; ++i) probs[i] *= scale;
}

// Masks (to -inf) the selection probabilities of every group but the n_groups_used best, a
// group's score being the sum of its two highest values (ties: the lower group first).
void keep_best_groups(const RouterConfig& config, float* selection, std::vector<int32_t>& order,
                      std::vector<float>& scores) {
  const int64_t per_group = config.n_experts / config.n_groups;
  scores.resize(static_cast<size_t>(config.n_groups));
  for (int64_t g = 0; g < config.n_groups; ++g) {
    const float* x = selection + g * per_group;
    float first = -INFINITY, second = -INFINITY;
    for (int64_t e = 0; e < per_group; ++e) {
      if (x[e] > first) {
        second = first;
        first = x[e];
      } else if (x[e] > second) {
        second = x[e];
      }
    }
    scores[static_cast<size_t>(g)] = first + second;
  }
  order.resize(static_cast<size_t>(config.n_groups));
  for (int64_t g = 0; g < config.n_groups; ++g) order[static_cast<size_t>(g)] = static_cast<int32_t>(g);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return scores[static_cast<size_t>(a)] > scores[static_cast<size_t>(b)];
  });
  for (int64_t rank = config.n_groups_used; rank < config.n_groups; ++rank) {
    float* x = selection + order[static_cast<size_t>(rank)] * per_group;
    std::fill(x, x + per_group, -INFINITY);
  }
}

}  // namespace

void route_tokens(std::span<const float> logits, const RouterConfig& config, Routing& out,
                  std::span<const float> selection_bias) {
  const int64_t n_experts = config.n_experts, k = config.n_used;
  if (n_experts <= 0 || k <= 0 || k > n_experts) fail("router: {} of {} experts per token", k, n_experts);
  if (!selection_bias.empty() && selection_bias.size() != static_cast<size_t>(n_experts)) {
    fail("router: a selection bias of {} values for {} experts", selection_bias.size(), n_experts);
  }
  const bool grouped = config.n_groups > 1;
  if (grouped && (n_experts % config.n_groups != 0 || config.n_groups_used < 1 ||
                  config.n_groups_used > config.n_groups || n_experts / config.n_groups < 2 ||
                  config.n_groups_used * (n_experts / config.n_groups) < k)) {
    fail("router: {} experts in {} groups, {} used, cannot give {} experts per token", n_experts, config.n_groups,
         config.n_groups_used, k);
  }
  if (logits.size() % static_cast<size_t>(n_experts) != 0) {
    fail("router: {} logits are not whole rows of {} experts", logits.size(), n_experts);
  }
  const auto n_tokens = static_cast<int64_t>(logits.size()) / n_experts;
  out.experts.resize(static_cast<size_t>(n_tokens * k));
  out.weights.resize(static_cast<size_t>(n_tokens * k));
  std::vector<float> probs(static_cast<size_t>(n_experts)), selection, group_scores;
  std::vector<int32_t> order(static_cast<size_t>(n_experts)), group_order;
  const bool separate_selection = grouped || !selection_bias.empty();
  for (int64_t t = 0; t < n_tokens; ++t) {
    const float* row = logits.data() + t * n_experts;
    if (config.gating == ExpertGating::Softmax) {
      softmax_row(row, n_experts, probs.data());
    } else {
      for (int64_t e = 0; e < n_experts; ++e) probs[static_cast<size_t>(e)] = 1.0f / (1.0f + std::exp(-row[e]));
    }
    // What experts are chosen by: the probabilities, or a copy biased and group-masked.
    const float* chooser = probs.data();
    if (separate_selection) {
      selection.assign(probs.begin(), probs.end());
      for (size_t e = 0; e < selection_bias.size(); ++e) selection[e] += selection_bias[e];
      if (grouped) keep_best_groups(config, selection.data(), group_order, group_scores);
      chooser = selection.data();
    }
    for (int64_t e = 0; e < n_experts; ++e) order[static_cast<size_t>(e)] = static_cast<int32_t>(e);
    // The k largest, largest first; equal probabilities keep the lower id first. A NaN (from a
    // broken activation) sorts last rather than breaking the ordering.
    const auto before = [&](int32_t a, int32_t b) {
      const float pa = chooser[a], pb = chooser[b];
      if (std::isnan(pa) != std::isnan(pb)) return std::isnan(pb);
      return pa > pb || (!(pb > pa) && a < b);
    };
    std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
    int32_t* experts = out.experts.data() + t * k;
    float* weights = out.weights.data() + t * k;
    for (int64_t s = 0; s < k; ++s) {
      experts[s] = order[static_cast<size_t>(s)];
      weights[s] = probs[static_cast<size_t>(experts[s])];
    }
    if (config.normalize) {
      // ggml_sum_rows (a double sum), clamped at the smallest f16 normal as llama.cpp does.
      double sum = 0.0;
      for (int64_t s = 0; s < k; ++s) sum += static_cast<double>(weights[s]);
      const float total = std::max(static_cast<float>(sum), 6.103515625e-5f);
      for (int64_t s = 0; s < k; ++s) weights[s] /= total;
    }
    if (config.scale != 0.0f && config.scale != 1.0f) {
      for (int64_t s = 0; s < k; ++s) weights[s] *= config.scale;
    }
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

}  // namespace lumen::model
