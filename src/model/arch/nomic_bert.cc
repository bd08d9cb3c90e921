// nomic-bert (general.architecture "nomic-bert": nomic-embed-text v1 and v1.5), as llama.cpp's
// converter writes it: BERT's post-norm encoder (model/arch/bert.cc) with rotary positions (NeoX
// pairs, the file's rope.freq_base) instead of learned ones, q, k and v fused in one matrix, no
// biases on the projections, and a SwiGLU FFN (silu(gate) x up, then down).
#include "model/arch/architecture.h"

namespace lumen::model {

Architecture nomic_bert_architecture() {
  using enum Dim;
  using enum TensorRole;
  using TW = TransformerWeights;
  using LW = LayerWeights;
  Architecture arch;
  arch.name = "nomic-bert";
  arch.features.encoder = true;
  arch.features.rope_neox = true;
  const Presence required = Presence::Required;
  arch.tensors = {
      model_tensor("token_embd.weight", {Embedding, Vocab}, Matrix, required, &TW::token_embd),
      model_tensor("token_types.weight", {Embedding, TokenTypes}, Matrix, required, &TW::token_types),
      model_tensor("token_embd_norm.weight", {Embedding}, Norm, required, &TW::token_embd_norm),
      model_tensor("token_embd_norm.bias", {Embedding}, Bias, required, &TW::token_embd_norm_b),
      layer_tensor("attn_qkv.weight", {Embedding, QkvWidth}, Matrix, &LW::wqkv),
      layer_tensor("attn_output.weight", {QWidth, Embedding}, Matrix, &LW::wo),
      layer_tensor("attn_output_norm.weight", {Embedding}, Norm, &LW::attn_norm),
      layer_tensor("attn_output_norm.bias", {Embedding}, Bias, &LW::attn_norm_b),
      layer_tensor("ffn_up.weight", {Embedding, FeedForward}, Matrix, &LW::ffn_up),
      layer_tensor("ffn_gate.weight", {Embedding, FeedForward}, Matrix, &LW::ffn_gate),
      layer_tensor("ffn_down.weight", {FeedForward, Embedding}, Matrix, &LW::ffn_down),
      layer_tensor("layer_output_norm.weight", {Embedding}, Norm, &LW::ffn_norm),
      layer_tensor("layer_output_norm.bias", {Embedding}, Bias, &LW::ffn_norm_b),
  };
  return arch;
}

}  // namespace lumen::model
