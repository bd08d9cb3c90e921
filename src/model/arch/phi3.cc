// Phi-3, Phi-3.5 and Phi-4-mini (general.architecture "phi3"): llama's block with
//  - q, k and v in one matrix (attn_qkv) and the FFN's gate and up in one (ffn_up, {embedding,
//    2 x ff}, gate rows first: SwiGLU of its two halves), as llama.cpp's converter writes them,
//  - NeoX rope over rope.dimension_count dims of each head (Phi-4-mini rotates 96 of 128),
//  - LongRoPE in long-context files: two sets of per-pair divisors, rope_factors_long for a
//    context past rope.scaling.original_context_length and rope_factors_short within it, and
//    rope.scaling.attn_factor on the rotated values (Transformer::set_context_length),
//  - no biases, an output matrix of its own unless tied.
// llama.cpp ignores phi3's attention.sliding_window (its converter's key does not describe the
// released models' attention), and so does Lumen.
#include <cmath>

#include "model/arch/architecture.h"

namespace lumen::model {

namespace {

// llama.cpp scales phi3's queries by 1/sqrt(head_dim) before attention and its scores not at
// all: the same product, rounded as llama.cpp rounds it when the queries meet an f16 K cache.
double phi3_query_scale(const HParams& hp) { return 1.0 / std::sqrt(static_cast<double>(hp.head_dim)); }

}  // namespace

Architecture phi3_architecture() {
  using enum Dim;
  using enum TensorRole;
  using TW = TransformerWeights;
  using LW = LayerWeights;
  Architecture arch;
  arch.name = "phi3";
  arch.features.rope_neox = true;
  arch.features.sliding_window = SlidingWindow::None;
  arch.features.query_scale = phi3_query_scale;
  arch.tensors = {
      model_tensor("token_embd.weight", {Embedding, Vocab}, Matrix, Presence::Required, &TW::token_embd),
      model_tensor("rope_factors_long.weight", {RopePairs}, RopeFactors, Presence::LongRope, &TW::rope_factors_long),
      model_tensor("rope_factors_short.weight", {RopePairs}, RopeFactors, Presence::LongRope, &TW::rope_factors_short),
      layer_tensor("attn_norm.weight", {Embedding}, Norm, &LW::attn_norm),
      layer_tensor("attn_qkv.weight", {Embedding, QkvWidth}, Matrix, &LW::wqkv),
      layer_tensor("attn_output.weight", {QWidth, Embedding}, Matrix, &LW::wo),
      layer_tensor("ffn_norm.weight", {Embedding}, Norm, &LW::ffn_norm),
      layer_tensor("ffn_up.weight", {Embedding, GateUpWidth}, Matrix, &LW::ffn_gate_up),
      layer_tensor("ffn_down.weight", {FeedForward, Embedding}, Matrix, &LW::ffn_down),
      model_tensor("output_norm.weight", {Embedding}, Norm, Presence::Required, &TW::output_norm),
      model_tensor("output.weight", {Embedding, Vocab}, Matrix, Presence::Untied, &TW::output),
  };
  return arch;
}

}  // namespace lumen::model
