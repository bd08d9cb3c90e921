// BERT (general.architecture "bert"), the encoder behind most sentence-embedding models (bge,
// all-MiniLM, e5...), as llama.cpp's converter writes it: token, learned position and token-type
// embeddings summed and LayerNormed; post-norm blocks with biased q/k/v/output projections,
// bidirectional attention and a GELU FFN (up, down). No output head: the file's pooling_type
// says how its hidden states become one vector (model/pooling.h).
#include "model/arch/architecture.h"

namespace lumen::model {

Architecture bert_architecture() {
  using enum Dim;
  using enum TensorRole;
  using TW = TransformerWeights;
  using LW = LayerWeights;
  Architecture arch;
  arch.name = "bert";
  arch.features.encoder = true;
  const Presence required = Presence::Required;
  arch.tensors = {
      model_tensor("token_embd.weight", {Embedding, Vocab}, Matrix, required, &TW::token_embd),
      model_tensor("token_types.weight", {Embedding, TokenTypes}, Matrix, required, &TW::token_types),
      model_tensor("position_embd.weight", {Embedding, Positions}, Matrix, required, &TW::position_embd),
      model_tensor("token_embd_norm.weight", {Embedding}, Norm, required, &TW::token_embd_norm),
      model_tensor("token_embd_norm.bias", {Embedding}, Bias, required, &TW::token_embd_norm_b),
      layer_tensor("attn_q.weight", {Embedding, QWidth}, Matrix, &LW::wq),
      layer_tensor("attn_q.bias", {QWidth}, Bias, &LW::bq),
      layer_tensor("attn_k.weight", {Embedding, KvWidth}, Matrix, &LW::wk),
      layer_tensor("attn_k.bias", {KvWidth}, Bias, &LW::bk),
      layer_tensor("attn_v.weight", {Embedding, KvWidth}, Matrix, &LW::wv),
      layer_tensor("attn_v.bias", {KvWidth}, Bias, &LW::bv),
      layer_tensor("attn_output.weight", {QWidth, Embedding}, Matrix, &LW::wo),
      layer_tensor("attn_output.bias", {Embedding}, Bias, &LW::bo),
      layer_tensor("attn_output_norm.weight", {Embedding}, Norm, &LW::attn_norm),
      layer_tensor("attn_output_norm.bias", {Embedding}, Bias, &LW::attn_norm_b),
      layer_tensor("ffn_up.weight", {Embedding, FeedForward}, Matrix, &LW::ffn_up),
      layer_tensor("ffn_up.bias", {FeedForward}, Bias, &LW::ffn_up_b),
      layer_tensor("ffn_down.weight", {FeedForward, Embedding}, Matrix, &LW::ffn_down),
      layer_tensor("ffn_down.bias", {Embedding}, Bias, &LW::ffn_down_b),
      layer_tensor("layer_output_norm.weight", {Embedding}, Norm, &LW::ffn_norm),
      layer_tensor("layer_output_norm.bias", {Embedding}, Bias, &LW::ffn_norm_b),
  };
  return arch;
}

}  // namespace lumen::model
