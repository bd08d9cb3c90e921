#pragma once
// A mixture-of-experts router's decision for each token of a batch, from its logits (host
// arrays): the probabilities, the n_used most probable experts and their weights, with the
// arithmetic of backend/expert_routing.h taken token by token. The CPU backend's route_experts
// and the model's host path (expert parallelism) both run it; the CUDA router kernel runs the
// same functions split over a warp's lanes.
#include <cstdint>
#include <span>
#include <vector>

#include "backend/expert_routing.h"

namespace lumen::backend::common {

// Per token, n_used entries in slot order: the most probable expert first (ties: the lower id).
struct Routing {
  std::vector<int32_t> experts;
  std::vector<float> weights;
};

// Throws lumen::Error for a configuration no router can follow (also what route_experts'
// argument checks call).
void check_router_config(const RouterConfig& config);

// logits: n_tokens rows of n_experts values (row t at logits[t * n_experts]). selection_bias
// (empty, or one value per expert) is added to the probabilities for choosing experts only; the
// weights are the unbiased probabilities (DeepSeek-V3's exp_probs_b). Throws lumen::Error for a
// bad configuration or a logits size that is not whole rows.
void route_tokens(std::span<const float> logits, const RouterConfig& config, Routing& out,
                  std::span<const float> selection_bias = {});
// One token into experts[0..n_used) and weights[0..n_used); `probs` is scratch of n_experts.
// The configuration must have passed check_router_config.
void route_token(const float* logits, const RouterConfig& config, const float* selection_bias, float* probs,
                 int32_t* experts, float* weights);

// The tokens of a routed batch grouped by expert, in token order within each expert: what
// Backend::moe_ffn takes. Experts no token chose are left out.
struct ExpertGroups {
  std::vector<int32_t> expert;  // per group: its expert id
  std::vector<int64_t> begin;   // per group: its first entry (one more at the end)
  std::vector<int32_t> rows;    // per entry: the token
  std::vector<int32_t> slots;   // per entry: the token's slot (its rank among its experts)
  std::vector<float> weights;   // per entry: the router's weight
};
void group_by_expert(const Routing& routing, const RouterConfig& config, ExpertGroups& out);

}  // namespace lumen::backend::common
