// Granite 4.0's hybrid (general.architecture "granitehybrid"), as llama.cpp's converter writes
// GraniteMoeHybrid with a dense FFN: each block is an RMS norm, then either attention (the
// layers whose entry of the per-layer attention.head_count_kv is not 0) or a Mamba 2 mixer (the
// others, with mamba2.cc's tensors), the residual add, and a SwiGLU FFN in every block. Granite's
// multipliers scale the embeddings, each branch before its residual add, the attention scores
// and the logits; attention rotates adjacent pairs (the converter permutes Q and K) unless the
// file switches rope off, as it does for Granite 4.0-H. Attention layers keep K/V in the paged
// cache, Mamba 2 layers a recurrent state per sequence (model/state_cache.h).
#include "model/arch/architecture.h"

namespace lumen::model {

namespace {

bool mamba_layer(const HParams& hp, uint64_t layer) { return is_ssm_layer(hp, layer); }
bool attention_layer(const HParams& hp, uint64_t layer) { return !is_ssm_layer(hp, layer); }

}  // namespace

Architecture granite_hybrid_architecture() {
  using enum Dim;
  using enum TensorRole;
  using TW = TransformerWeights;
  using LW = LayerWeights;
  Architecture arch;
  arch.name = "granitehybrid";
  arch.features.mixer = Mixer::HybridMamba2;
  arch.features.granite_multipliers = true;
  arch.features.rope_neox = false;
  const auto ssm = mamba_layer;
  const auto attn = attention_layer;
  arch.tensors = {
      model_tensor("token_embd.weight", {Embedding, Vocab}, Matrix, Presence::Required, &TW::token_embd),
      layer_tensor("attn_norm.weight", {Embedding}, Norm, &LW::attn_norm),
      layer_tensor_if(ssm, "ssm_in.weight", {Embedding, SsmInProj}, Matrix, &LW::ssm_in),
      layer_tensor_if(ssm, "ssm_conv1d.weight", {SsmConvKernel, SsmConvChannels}, SsmConv, &LW::ssm_conv1d),
      layer_tensor_if(ssm, "ssm_conv1d.bias", {SsmConvChannels}, Bias, &LW::ssm_conv1d_b),
      layer_tensor_if(ssm, "ssm_dt.bias", {SsmHeads}, Bias, &LW::ssm_dt_b),
      layer_tensor_if(ssm, "ssm_a", {One, SsmHeads}, SsmDecay, &LW::ssm_a),
      layer_tensor_if(ssm, "ssm_d", {One, SsmHeads}, Norm, &LW::ssm_d),
      layer_tensor_if(ssm, "ssm_norm.weight", {SsmGroupWidth, SsmGroups}, Norm, &LW::ssm_norm),
      layer_tensor_if(ssm, "ssm_out.weight", {SsmInner, Embedding}, Matrix, &LW::ssm_out),
      layer_tensor_if(attn, "attn_q.weight", {Embedding, QWidth}, Matrix, &LW::wq),
      layer_tensor_if(attn, "attn_k.weight", {Embedding, KvWidth}, Matrix, &LW::wk),
      layer_tensor_if(attn, "attn_v.weight", {Embedding, KvWidth}, Matrix, &LW::wv),
      layer_tensor_if(attn, "attn_output.weight", {QWidth, Embedding}, Matrix, &LW::wo),
      layer_tensor("ffn_norm.weight", {Embedding}, Norm, &LW::ffn_norm),
      layer_tensor("ffn_gate.weight", {Embedding, FeedForward}, Matrix, &LW::ffn_gate),
      layer_tensor("ffn_up.weight", {Embedding, FeedForward}, Matrix, &LW::ffn_up),
      layer_tensor("ffn_down.weight", {FeedForward, Embedding}, Matrix, &LW::ffn_down),
      model_tensor("output_norm.weight", {Embedding}, Norm, Presence::Required, &TW::output_norm),
      model_tensor("output.weight", {Embedding, Vocab}, Matrix, Presence::Untied, &TW::output),
  };
  return arch;
}

}  // namespace lumen::model
