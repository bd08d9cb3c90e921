// OLMoE (general.architecture "olmoe"), e.g. OLMoE-1B-7B: llama's block with RMS norms of the
// whole query and key projections (one weight per channel, not per head dimension) before rope,
// NeoX rope, and a mixture-of-experts FFN: a softmax router, the expert_used_count most probable
// experts per token weighted by their probabilities as they are (llama.cpp's norm_w = false,
// config.json's norm_topk_prob = false), no shared expert. Experts are feed_forward_length wide,
// as llama.cpp sizes them for this architecture.
#include "model/arch/architecture.h"
#include "model/arch/experts.h"

namespace lumen::model {

Architecture olmoe_architecture() {
  using enum Dim;
  using enum TensorRole;
  using TW = TransformerWeights;
  using LW = LayerWeights;
  Architecture arch;
  arch.name = "olmoe";
  arch.features.rope_neox = true;
  arch.features.qk_norm = true;
  arch.features.qk_norm_full_width = true;
  arch.features.sliding_window = SlidingWindow::None;
  arch.features.ffn = FfnKind::MixtureOfExperts;
  arch.features.expert_gating = ExpertGating::Softmax;
  arch.features.expert_weights_norm = false;
  arch.tensors = {
      model_tensor("token_embd.weight", {Embedding, Vocab}, Matrix, Presence::Required, &TW::token_embd),
      layer_tensor("attn_norm.weight", {Embedding}, Norm, &LW::attn_norm),
      layer_tensor("attn_q.weight", {Embedding, QWidth}, Matrix, &LW::wq),
      layer_tensor("attn_k.weight", {Embedding, KvWidth}, Matrix, &LW::wk),
      layer_tensor("attn_v.weight", {Embedding, KvWidth}, Matrix, &LW::wv),
      layer_tensor("attn_output.weight", {QWidth, Embedding}, Matrix, &LW::wo),
      layer_tensor("attn_q_norm.weight", {QWidth}, Norm, &LW::q_norm),
      layer_tensor("attn_k_norm.weight", {KvWidth}, Norm, &LW::k_norm),
      layer_tensor("ffn_norm.weight", {Embedding}, Norm, &LW::ffn_norm),
  };
  const std::vector<TensorSpec> experts = expert_tensors(FeedForward);
  arch.tensors.insert(arch.tensors.end(), experts.begin(), experts.end());
  arch.tensors.insert(arch.tensors.end(),
                      {
                          model_tensor("output_norm.weight", {Embedding}, Norm, Presence::Required, &TW::output_norm),
                          // Required: llama.cpp does not tie this architecture's output to the embeddings.
                          model_tensor("output.weight", {Embedding, Vocab}, Matrix, Presence::Required, &TW::output),
                      });
  return arch;
}

}  // namespace lumen::model
