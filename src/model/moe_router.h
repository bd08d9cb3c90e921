#pragma once
// A mixture-of-experts router's decision for each token of a batch, from its logits: the
// probabilities (softmax over all experts, or a sigmoid per expert), the expert_used_count most
// probable experts, and their weights (the probabilities, renormalized to sum to 1 where the
// architecture says). Plain host code, the same on every backend: llama.cpp's build_moe_ffn
// in the order it computes it.
#include <cstdint>
#include <span>
#include <vector>

#include "model/arch/block_features.h"

namespace lumen::model {

struct RouterConfig {
  int64_t n_experts = 0;
  int64_t n_used = 0;  // experts per token (top-k), 1..n_experts
  ExpertGating gating = ExpertGating::Softmax;
  bool normalize = false;  // renormalize the chosen weights to sum to 1
  float scale = 0.0f;      // then multiply them by this (0 or 1: leave them)
  // DeepSeek-V3's group-limited routing (n_groups > 1): experts form n_groups equal groups, each
  // scored by the sum of its two highest selection probabilities; a token chooses its experts
  // from the n_groups_used best groups only.
  int64_t n_groups = 0;
  int64_t n_groups_used = 0;
};

// Per token, n_used entries in slot order: the most probable expert first (ties: the lower id).
struct Routing {
  std::vector<int32_t> experts;
  std::vector<float> weights;
};

// logits: n_tokens rows of n_experts values (row t at logits[t * n_experts]). selection_bias
// (empty, or one value per expert) is added to the probabilities for choosing experts only; the
// weights are the unbiased probabilities (DeepSeek-V3's exp_probs_b). Throws lumen::Error for a
// bad configuration or a logits size that is not whole rows.
void route_tokens(std::span<const float> logits, const RouterConfig& config, Routing& out,
                  std::span<const float> selection_bias = {});

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

}  // namespace lumen::model
