// DeepSeek-V2 and V3 (general.architecture "deepseek2"), in the absorbed-MLA form llama.cpp's
// converter writes since it split attn_kv_b into attn_k_b and attn_v_b:
//  - multi-head latent attention: each position's keys and values are one latent of
//    kv_lora_rank values (normed) plus one rope key of rope.dimension_count shared by every head;
//    the cache holds only that row. A head's query is split into a non-rotated part, turned into
//    latent space by attn_k_b ("absorbed": keys never leave the latent), and a rotated part.
//    Attention over the latent rows gives each head a latent output, which attn_v_b turns into
//    the head's value. Queries go through a low-rank bottleneck (attn_q_a, its norm, attn_q_b)
//    when attention.q_lora_rank is set (V2, V3), or one matrix (V2-Lite);
//  - a mixture-of-experts FFN after leading_dense_block_count dense layers: the router's
//    gating from the file (softmax, or sigmoid with a selection bias, exp_probs_b, for V3),
//    optional renormalization and scale, expert groups, and expert_shared_count shared experts
//    added without a gate;
//  - normal (adjacent-pair) rope, RMS norms, SwiGLU.
// Files of the older layout (one attn_kv_b) are refused with a message saying so.
#include "model/arch/architecture.h"
#include "model/arch/experts.h"

namespace lumen::model {

namespace {

bool dense_layer(const HParams& hp, uint64_t layer) { return layer < hp.leading_dense_block_count; }
bool expert_layer(const HParams& hp, uint64_t layer) { return layer >= hp.leading_dense_block_count; }
bool query_bottleneck(const HParams& hp, uint64_t) { return hp.q_lora_rank != 0; }
bool query_matrix(const HParams& hp, uint64_t) { return hp.q_lora_rank == 0; }

}  // namespace

Architecture deepseek2_architecture() {
  using enum Dim;
  using enum TensorRole;
  using TW = TransformerWeights;
  using LW = LayerWeights;
  Architecture arch;
  arch.name = "deepseek2";
  arch.features.rope_neox = false;
  arch.features.attention = AttentionKind::MultiHeadLatent;
  arch.features.ffn = FfnKind::MixtureOfExperts;
  arch.features.routing_from_file = true;
  arch.tensors = {
      model_tensor("token_embd.weight", {Embedding, Vocab}, Matrix, Presence::Required, &TW::token_embd),
      layer_tensor("attn_norm.weight", {Embedding}, Norm, &LW::attn_norm),
      layer_tensor_if(query_bottleneck, "attn_q_a_norm.weight", {QLoraRank}, Norm, &LW::q_a_norm),
      layer_tensor("attn_kv_a_norm.weight", {KvLoraRank}, Norm, &LW::kv_a_norm),
      layer_tensor_if(query_bottleneck, "attn_q_a.weight", {Embedding, QLoraRank}, Matrix, &LW::wq_a),
      layer_tensor_if(query_bottleneck, "attn_q_b.weight", {QLoraRank, MlaQWidth}, Matrix, &LW::wq_b),
      layer_tensor_if(query_matrix, "attn_q.weight", {Embedding, MlaQWidth}, Matrix, &LW::wq),
      layer_tensor("attn_kv_a_mqa.weight", {Embedding, LatentKeyWidth}, Matrix, &LW::wkv_a_mqa),
      layer_tensor("attn_k_b.weight", {MlaNopeDim, KvLoraRank, Heads}, Matrix, &LW::wk_b),
      layer_tensor("attn_v_b.weight", {KvLoraRank, MlaValueDim, Heads}, Matrix, &LW::wv_b),
      layer_tensor("attn_output.weight", {MlaOutWidth, Embedding}, Matrix, &LW::wo),
      layer_tensor("ffn_norm.weight", {Embedding}, Norm, &LW::ffn_norm),
      layer_tensor_if(dense_layer, "ffn_gate.weight", {Embedding, FeedForward}, Matrix, &LW::ffn_gate),
      layer_tensor_if(dense_layer, "ffn_down.weight", {FeedForward, Embedding}, Matrix, &LW::ffn_down),
      layer_tensor_if(dense_layer, "ffn_up.weight", {Embedding, FeedForward}, Matrix, &LW::ffn_up),
      layer_tensor_if(expert_layer, "exp_probs_b.bias", {Experts}, Bias, &LW::ffn_exp_probs_b, Presence::Optional),
  };
  for (TensorSpec spec : expert_tensors(ExpertFeedForward)) {
    spec.in_layer = expert_layer;
    arch.tensors.push_back(std::move(spec));
  }
  arch.tensors.insert(
      arch.tensors.end(),
      {
          layer_tensor_if(expert_layer, "ffn_gate_shexp.weight", {Embedding, SharedExpertsFeedForward}, Matrix,
                          &LW::ffn_gate_shexp),
          layer_tensor_if(expert_layer, "ffn_down_shexp.weight", {SharedExpertsFeedForward, Embedding}, Matrix,
                          &LW::ffn_down_shexp),
          layer_tensor_if(expert_layer, "ffn_up_shexp.weight", {Embedding, SharedExpertsFeedForward}, Matrix,
                          &LW::ffn_up_shexp),
          model_tensor("output_norm.weight", {Embedding}, Norm, Presence::Required, &TW::output_norm),
          model_tensor("output.weight", {Embedding, Vocab}, Matrix, Presence::Untied, &TW::output),
      });
  return arch;
}

}  // namespace lumen::model
