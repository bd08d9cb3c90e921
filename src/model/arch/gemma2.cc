// Gemma 2 (general.architecture "gemma2"), e.g. gemma-2-2b-it, 9b, 27b: Gemma 3's block without
// QK-norm and with soft caps:
//  - embeddings scaled by sqrt(embedding_length), GeGLU (tanh GELU), NeoX rope,
//  - RMS norms of the attention and FFN outputs before their residual adds,
//  - local (sliding window) and global layers alternating, the first local, a window of 4096
//    when the file gives none, one rope base unless the file gives the local layers theirs,
//  - attention scores capped at c tanh(s / c), c = attn_logit_softcapping (50 when absent),
//  - final logits capped the same way, c = final_logit_softcapping (30 when absent),
//  - the output projection tied to the embeddings (a file cannot give its own).
// The defaults and the layer pattern are llama.cpp's; its converter folds Gemma's (1 + w) norm
// weights into w, so the norms are plain RMS norms here.
#include <cmath>

#include "model/arch/architecture.h"

namespace lumen::model {

namespace {

// query_pre_attn_scalar (not in the file) is head_dim for 2B and 9B and embedding_length /
// head_count for 27B (46 blocks), where they differ (4608 / 32 = 144, head_dim 128); llama.cpp
// decides by the block count the same way.
double gemma2_query_scale(const HParams& hp) {
  const double scalar = hp.block_count == 46 ? static_cast<double>(hp.embedding_length / hp.head_count)
                                             : static_cast<double>(hp.head_dim);
  return 1.0 / std::sqrt(scalar);
}

}  // namespace

Architecture gemma2_architecture() {
  using enum Dim;
  using enum TensorRole;
  using TW = TransformerWeights;
  using LW = LayerWeights;
  Architecture arch;
  arch.name = "gemma2";
  arch.features.rope_neox = true;
  arch.features.activation = Activation::GeGlu;
  arch.features.post_attention_norm = true;
  arch.features.post_ffn_norm = true;
  arch.features.embedding_scale = true;
  // Layer i is global when (i + 1) % 2 == 0: even layers local, odd ones global.
  arch.features.sliding_window = SlidingWindow::Pattern;
  arch.features.sliding_window_period = 2;
  arch.features.default_sliding_window = 4096;
  arch.features.local_rope_base_from_file = true;
  arch.features.attention_softcap = 50.0f;
  arch.features.attention_softcap_from_file = true;
  arch.features.logit_softcap = 30.0f;
  arch.features.logit_softcap_from_file = true;
  arch.features.query_scale = gemma2_query_scale;
  arch.tensors = {
      model_tensor("token_embd.weight", {Embedding, Vocab}, Matrix, Presence::Required, &TW::token_embd),
      layer_tensor("attn_norm.weight", {Embedding}, Norm, &LW::attn_norm),
      layer_tensor("attn_q.weight", {Embedding, QWidth}, Matrix, &LW::wq),
      layer_tensor("attn_k.weight", {Embedding, KvWidth}, Matrix, &LW::wk),
      layer_tensor("attn_v.weight", {Embedding, KvWidth}, Matrix, &LW::wv),
      layer_tensor("attn_output.weight", {QWidth, Embedding}, Matrix, &LW::wo),
      layer_tensor("post_attention_norm.weight", {Embedding}, Norm, &LW::attn_post_norm),
      layer_tensor("ffn_norm.weight", {Embedding}, Norm, &LW::ffn_norm),
      layer_tensor("ffn_gate.weight", {Embedding, FeedForward}, Matrix, &LW::ffn_gate),
      layer_tensor("ffn_up.weight", {Embedding, FeedForward}, Matrix, &LW::ffn_up),
      layer_tensor("ffn_down.weight", {FeedForward, Embedding}, Matrix, &LW::ffn_down),
      layer_tensor("post_ffw_norm.weight", {Embedding}, Norm, &LW::ffn_post_norm),
      // No output.weight: llama.cpp's gemma2 always projects with the embeddings.
      model_tensor("output_norm.weight", {Embedding}, Norm, Presence::Required, &TW::output_norm),
  };
  return arch;
}

}  // namespace lumen::model
