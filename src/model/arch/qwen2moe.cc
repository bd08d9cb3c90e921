// Qwen1.5-MoE and Qwen2-MoE (general.architecture "qwen2moe"): qwen2's attention (q/k/v biases,
// NeoX rope) with a mixture-of-experts FFN:
//  - a softmax router over all {arch}.expert_count experts; each token goes to the
//    expert_used_count most probable ones, weighted by their probabilities as they are (no
//    renormalization over the chosen ones: llama.cpp's norm_w = false for this architecture,
//    config.json's norm_topk_prob = false);
//  - a shared expert every token passes through, scaled by sigmoid(ffn_gate_inp_shexp . x);
//  - experts of expert_feed_forward_length (else feed_forward_length / expert_used_count), the
//    shared one of expert_shared_feed_forward_length (else feed_forward_length).
#include "model/arch/architecture.h"
#include "model/arch/experts.h"

namespace lumen::model {

Architecture qwen2moe_architecture() {
  using enum Dim;
  using enum TensorRole;
  using TW = TransformerWeights;
  using LW = LayerWeights;
  Architecture arch;
  arch.name = "qwen2moe";
  arch.features.rope_neox = true;
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
      layer_tensor("attn_q.bias", {QWidth}, Bias, &LW::bq),
      layer_tensor("attn_k.bias", {KvWidth}, Bias, &LW::bk),
      layer_tensor("attn_v.bias", {KvWidth}, Bias, &LW::bv),
      layer_tensor("attn_output.weight", {QWidth, Embedding}, Matrix, &LW::wo),
      layer_tensor("ffn_norm.weight", {Embedding}, Norm, &LW::ffn_norm),
  };
  const std::vector<TensorSpec> experts = expert_tensors(ExpertFeedForward);
  arch.tensors.insert(arch.tensors.end(), experts.begin(), experts.end());
  arch.tensors.insert(
      arch.tensors.end(),
      {
          layer_tensor("ffn_gate_inp_shexp.weight", {Embedding}, Router, &LW::ffn_gate_inp_shexp),
          layer_tensor("ffn_gate_shexp.weight", {Embedding, SharedFeedForward}, Matrix, &LW::ffn_gate_shexp),
          layer_tensor("ffn_down_shexp.weight", {SharedFeedForward, Embedding}, Matrix, &LW::ffn_down_shexp),
          layer_tensor("ffn_up_shexp.weight", {Embedding, SharedFeedForward}, Matrix, &LW::ffn_up_shexp),
          model_tensor("output_norm.weight", {Embedding}, Norm, Presence::Required, &TW::output_norm),
          // Required: llama.cpp does not tie this architecture's output to the embeddings.
          model_tensor("output.weight", {Embedding, Vocab}, Matrix, Presence::Required, &TW::output),
      });
  return arch;
}

}  // namespace lumen::model
