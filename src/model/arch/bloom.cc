// BLOOM (general.architecture "bloom"), as llama.cpp's converter writes it: the token
// embeddings LayerNormed; pre-norm blocks of LayerNorms with biases, a fused and biased QKV
// matrix (the converter reorders Hugging Face's per-head q/k/v interleave into q, k, v), ALiBi
// instead of rope (llama.cpp's fixed max bias 8), a biased output projection and a plain GELU
// FFN with biases; the output LayerNorm, and the output matrix tied to the embeddings unless
// the file has one.
#include "model/arch/architecture.h"

namespace lumen::model {

Architecture bloom_architecture() {
  using enum Dim;
  using enum TensorRole;
  using TW = TransformerWeights;
  using LW = LayerWeights;
  Architecture arch;
  arch.name = "bloom";
  arch.features.layer_norm = true;
  arch.features.activation = Activation::Gelu;
  arch.features.alibi_max_bias = 8.0f;
  const Presence required = Presence::Required;
  arch.tensors = {
      model_tensor("token_embd.weight", {Embedding, Vocab}, Matrix, required, &TW::token_embd),
      model_tensor("token_embd_norm.weight", {Embedding}, Norm, required, &TW::token_embd_norm),
      model_tensor("token_embd_norm.bias", {Embedding}, Bias, required, &TW::token_embd_norm_b),
      layer_tensor("attn_norm.weight", {Embedding}, Norm, &LW::attn_norm),
      layer_tensor("attn_norm.bias", {Embedding}, Bias, &LW::attn_norm_b),
      layer_tensor("attn_qkv.weight", {Embedding, QkvWidth}, Matrix, &LW::wqkv),
      layer_tensor("attn_qkv.bias", {QkvWidth}, Bias, &LW::bqkv),
      layer_tensor("attn_output.weight", {QWidth, Embedding}, Matrix, &LW::wo),
      layer_tensor("attn_output.bias", {Embedding}, Bias, &LW::bo),
      layer_tensor("ffn_norm.weight", {Embedding}, Norm, &LW::ffn_norm),
      layer_tensor("ffn_norm.bias", {Embedding}, Bias, &LW::ffn_norm_b),
      layer_tensor("ffn_up.weight", {Embedding, FeedForward}, Matrix, &LW::ffn_up),
      layer_tensor("ffn_up.bias", {FeedForward}, Bias, &LW::ffn_up_b),
      layer_tensor("ffn_down.weight", {FeedForward, Embedding}, Matrix, &LW::ffn_down),
      layer_tensor("ffn_down.bias", {Embedding}, Bias, &LW::ffn_down_b),
      model_tensor("output_norm.weight", {Embedding}, Norm, required, &TW::output_norm),
      model_tensor("output_norm.bias", {Embedding}, Bias, required, &TW::output_norm_b),
      model_tensor("output.weight", {Embedding, Vocab}, Matrix, Presence::Untied, &TW::output),
  };
  return arch;
}

}  // namespace lumen::model
