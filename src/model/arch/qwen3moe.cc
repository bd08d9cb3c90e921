// Qwen3-MoE (general.architecture "qwen3moe"), e.g. Qwen3-30B-A3B: llama's attention with
// per-head RMS norms of the queries and keys before rope (QK-norm, as qwen3), NeoX rope, no
// biases, head_dim from attention.key_length; a mixture-of-experts FFN with a softmax router,
// the expert_used_count most probable experts per token, their weights renormalized to sum to 1
// (llama.cpp's norm_w = true), and no shared expert.
#include "model/arch/architecture.h"
#include "model/arch/experts.h"

namespace lumen::model {

Architecture qwen3moe_architecture() {
  using enum Dim;
  using enum TensorRole;
  using TW = TransformerWeights;
  using LW = LayerWeights;
  Architecture arch;
  arch.name = "qwen3moe";
  arch.features.rope_neox = true;
  arch.features.qk_norm = true;
  arch.features.sliding_window = SlidingWindow::None;
  arch.features.ffn = FfnKind::MixtureOfExperts;
  arch.features.expert_gating = ExpertGating::Softmax;
  arch.features.expert_weights_norm = true;
  arch.tensors = {
      model_tensor("token_embd.weight", {Embedding, Vocab}, Matrix, Presence::Required, &TW::token_embd),
      layer_tensor("attn_norm.weight", {Embedding}, Norm, &LW::attn_norm),
      layer_tensor("attn_q.weight", {Embedding, QWidth}, Matrix, &LW::wq),
      layer_tensor("attn_k.weight", {Embedding, KvWidth}, Matrix, &LW::wk),
      layer_tensor("attn_v.weight", {Embedding, KvWidth}, Matrix, &LW::wv),
      layer_tensor("attn_output.weight", {QWidth, Embedding}, Matrix, &LW::wo),
      layer_tensor("attn_k_norm.weight", {HeadDim}, Norm, &LW::k_norm),
      layer_tensor("attn_q_norm.weight", {HeadDim}, Norm, &LW::q_norm),
      layer_tensor("ffn_norm.weight", {Embedding}, Norm, &LW::ffn_norm),
  };
  const std::vector<TensorSpec> experts = expert_tensors(ExpertFeedForward);
  arch.tensors.insert(arch.tensors.end(), experts.begin(), experts.end());
  arch.tensors.insert(arch.tensors.end(),
                      {
                          model_tensor("output_norm.weight", {Embedding}, Norm, Presence::Required, &TW::output_norm),
                          model_tensor("output.weight", {Embedding, Vocab}, Matrix, Presence::Untied, &TW::output),
                      });
  return arch;
}

}  // namespace lumen::model
