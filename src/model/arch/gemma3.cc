// Gemma 3 (general.architecture "gemma3"), text decoder: llama's block with
//  - embeddings scaled by sqrt(embedding_length),
//  - RMS norms of each query and key head (QK-norm) before rope,
//  - RMS norms of the attention and FFN outputs before their residual adds,
//  - GeGLU (tanh GELU) in the FFN, NeoX rope,
//  - five local layers (a sliding window, rope base 10k) to every global one (the file's rope
//    base and scaling), unless the file gives its own pattern,
//  - the output projection tied to the embeddings, and a final logit soft cap when the file
//    declares one.
// llama.cpp's converter folds Gemma's (1 + w) norm weights into w, so the norms are plain RMS
// norms here.
#include <cmath>

#include "model/arch/architecture.h"

namespace lumen::model {

namespace {

// Gemma's query_pre_attn_scalar is not in the file: it is head_dim for every size but 27B
// (62 blocks), where it is embedding_length / head_count; llama.cpp decides the same way.
double gemma3_query_scale(const HParams& hp) {
  const double scalar = hp.block_count == 62 ? static_cast<double>(hp.embedding_length / hp.head_count)
                                             : static_cast<double>(hp.head_dim);
  return 1.0 / std::sqrt(scalar);
}

}  // namespace

Architecture gemma3_architecture() {
  using enum Dim;
  using enum TensorRole;
  using TW = TransformerWeights;
  using LW = LayerWeights;
  Architecture arch;
  arch.name = "gemma3";
  arch.features.rope_neox = true;
  arch.features.activation = Activation::GeGlu;
  arch.features.qk_norm = true;
  arch.features.post_attention_norm = true;
  arch.features.post_ffn_norm = true;
  arch.features.embedding_scale = true;
  arch.features.sliding_window = SlidingWindow::Pattern;
  arch.features.sliding_window_period = 6;
  arch.features.per_layer_rope_base = true;
  arch.features.local_rope_base = 10000.0;
  arch.features.logit_softcap_from_file = true;
  arch.features.query_scale = gemma3_query_scale;
  arch.tensors = {
      model_tensor("token_embd.weight", {Embedding, Vocab}, Matrix, Presence::Required, &TW::token_embd),
      layer_tensor("attn_norm.weight", {Embedding}, Norm, &LW::attn_norm),
      layer_tensor("attn_q.weight", {Embedding, QWidth}, Matrix, &LW::wq),
      layer_tensor("attn_k.weight", {Embedding, KvWidth}, Matrix, &LW::wk),
      layer_tensor("attn_v.weight", {Embedding, KvWidth}, Matrix, &LW::wv),
      layer_tensor("attn_q_norm.weight", {HeadDim}, Norm, &LW::q_norm),
      layer_tensor("attn_k_norm.weight", {HeadDim}, Norm, &LW::k_norm),
      layer_tensor("attn_output.weight", {QWidth, Embedding}, Matrix, &LW::wo),
      layer_tensor("post_attention_norm.weight", {Embedding}, Norm, &LW::attn_post_norm),
      layer_tensor("ffn_norm.weight", {Embedding}, Norm, &LW::ffn_norm),
      layer_tensor("ffn_gate.weight", {Embedding, FeedForward}, Matrix, &LW::ffn_gate),
      layer_tensor("ffn_up.weight", {Embedding, FeedForward}, Matrix, &LW::ffn_up),
      layer_tensor("ffn_down.weight", {FeedForward, Embedding}, Matrix, &LW::ffn_down),
      layer_tensor("post_ffw_norm.weight", {Embedding}, Norm, &LW::ffn_post_norm),
      model_tensor("output_norm.weight", {Embedding}, Norm, Presence::Required, &TW::output_norm),
      model_tensor("output.weight", {Embedding, Vocab}, Matrix, Presence::Untied, &TW::output),
  };
  return arch;
}

}  // namespace lumen::model
