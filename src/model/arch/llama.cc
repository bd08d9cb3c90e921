#include "model/arch/llama.h"

namespace lumen::model {

std::vector<TensorSpec> llama_tensors() {
  using enum Dim;
  using enum TensorRole;
  using TW = TransformerWeights;
  using LW = LayerWeights;
  return {
      model_tensor("token_embd.weight", {Embedding, Vocab}, Matrix, Presence::Required, &TW::token_embd),
      model_tensor("rope_freqs.weight", {RopePairs}, RopeFactors, Presence::RopeScaling, &TW::rope_freqs),
      layer_tensor("attn_norm.weight", {Embedding}, Norm, &LW::attn_norm),
      layer_tensor("attn_q.weight", {Embedding, QWidth}, Matrix, &LW::wq),
      layer_tensor("attn_k.weight", {Embedding, KvWidth}, Matrix, &LW::wk),
      layer_tensor("attn_v.weight", {Embedding, KvWidth}, Matrix, &LW::wv),
      layer_tensor("attn_output.weight", {QWidth, Embedding}, Matrix, &LW::wo),
      layer_tensor("ffn_norm.weight", {Embedding}, Norm, &LW::ffn_norm),
      layer_tensor("ffn_gate.weight", {Embedding, FeedForward}, Matrix, &LW::ffn_gate),
      layer_tensor("ffn_up.weight", {Embedding, FeedForward}, Matrix, &LW::ffn_up),
      layer_tensor("ffn_down.weight", {FeedForward, Embedding}, Matrix, &LW::ffn_down),
      model_tensor("output_norm.weight", {Embedding}, Norm, Presence::Required, &TW::output_norm),
      model_tensor("output.weight", {Embedding, Vocab}, Matrix, Presence::Untied, &TW::output),
  };
}

Architecture llama_architecture() {
  Architecture arch;
  arch.name = "llama";
  // llama.cpp's converter permutes Q and K so that adjacent pairs rotate.
  arch.features.rope_neox = false;
  // Mistral's files may carry llama.attention.sliding_window; llama.cpp attends to every
  // position for this architecture, and the logits tests compare against it.
  arch.features.sliding_window = SlidingWindow::None;
  arch.tensors = llama_tensors();
  return arch;
}

}  // namespace lumen::model
