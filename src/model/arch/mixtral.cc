// Mixtral-style models: general.architecture "llama" with {arch}.expert_count > 0 (llama.cpp
// has no "mixtral" architecture; its llama graph switches to experts when the file has them).
// llama's block with the FFN replaced by a mixture of experts: a softmax router, the
// expert_used_count most probable experts per token, their weights renormalized to sum to 1,
// no shared expert. Each expert is feed_forward_length wide (llama.cpp sizes them by n_ff, not
// by expert_feed_forward_length, for this architecture).
#include <algorithm>

#include "model/arch/experts.h"
#include "model/arch/llama.h"

namespace lumen::model {

namespace {

bool has_experts(const HParams& hp) { return hp.expert_count > 0; }

}  // namespace

Architecture mixtral_architecture() {
  using enum Dim;
  Architecture arch = llama_architecture();
  arch.variant = "mixtral";
  arch.applies = has_experts;
  arch.features.ffn = FfnKind::MixtureOfExperts;
  arch.features.expert_gating = ExpertGating::Softmax;
  arch.features.expert_weights_norm = true;
  // The dense FFN's three matrices give way to the router and the experts, in llama.cpp's order.
  auto gate = std::find_if(arch.tensors.begin(), arch.tensors.end(),
                           [](const TensorSpec& t) { return t.name == "ffn_gate.weight"; });
  gate = arch.tensors.erase(gate, gate + 3);  // ffn_gate, ffn_up, ffn_down
  const std::vector<TensorSpec> experts = expert_tensors(FeedForward);
  arch.tensors.insert(gate, experts.begin(), experts.end());
  return arch;
}

}  // namespace lumen::model
