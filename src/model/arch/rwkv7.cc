// RWKV 7 "Goose" (general.architecture "rwkv7"), as llama.cpp's converter writes it: no
// attention; the embeddings go through a LayerNorm (token_embd_norm), then each block is a
// LayerNorm, the time mix (token shift, the w/a/v/g LoRAs, the wkv7 state update per head, a
// group norm) and its residual add, a second LayerNorm (attn_norm_2), the channel mix (token
// shift, relu^2) and its residual add; a final LayerNorm with bias and the output head (always
// its own matrix). Layer 0's value-residual LoRA is written with the iclr rank and never used
// (layer 0's values are the residual the later layers mix in). Each sequence keeps two
// token-shift rows and a wkv matrix per head per layer (model/state_cache.h).
#include "model/arch/architecture.h"

namespace lumen::model {

namespace {

bool first_layer(const HParams&, uint64_t layer) { return layer == 0; }
bool later_layer(const HParams&, uint64_t layer) { return layer != 0; }

}  // namespace

Architecture rwkv7_architecture() {
  using enum Dim;
  using enum TensorRole;
  using TW = TransformerWeights;
  using LW = LayerWeights;
  Architecture arch;
  arch.name = "rwkv7";
  arch.features.mixer = Mixer::Rwkv7;
  const auto first = first_layer;
  const auto later = later_layer;
  arch.tensors = {
      model_tensor("token_embd.weight", {Embedding, Vocab}, Matrix, Presence::Required, &TW::token_embd),
      model_tensor("token_embd_norm.weight", {Embedding}, Norm, Presence::Required, &TW::token_embd_norm),
      model_tensor("token_embd_norm.bias", {Embedding}, Bias, Presence::Required, &TW::token_embd_norm_b),
      layer_tensor("attn_norm.weight", {Embedding}, Norm, &LW::attn_norm),
      layer_tensor("attn_norm.bias", {Embedding}, Bias, &LW::attn_norm_b),
      layer_tensor("attn_norm_2.weight", {Embedding}, Norm, &LW::ffn_norm),
      layer_tensor("attn_norm_2.bias", {Embedding}, Bias, &LW::ffn_norm_b),
      layer_tensor("time_mix_w0.weight", {Embedding}, Bias, &LW::rwkv_w0),
      layer_tensor("time_mix_w1.weight", {Embedding, RwkvDecayLora}, Matrix, &LW::rwkv_w1),
      layer_tensor("time_mix_w2.weight", {RwkvDecayLora, Embedding}, Matrix, &LW::rwkv_w2),
      layer_tensor("time_mix_a0.weight", {Embedding}, Bias, &LW::rwkv_a0),
      layer_tensor("time_mix_a1.weight", {Embedding, RwkvIclrLora}, Matrix, &LW::rwkv_a1),
      layer_tensor("time_mix_a2.weight", {RwkvIclrLora, Embedding}, Matrix, &LW::rwkv_a2),
      layer_tensor("time_mix_v0.weight", {Embedding}, Bias, &LW::rwkv_v0),
      layer_tensor_if(first, "time_mix_v1.weight", {Embedding, RwkvIclrLora}, Matrix, &LW::rwkv_v1),
      layer_tensor_if(first, "time_mix_v2.weight", {RwkvIclrLora, Embedding}, Matrix, &LW::rwkv_v2),
      layer_tensor_if(later, "time_mix_v1.weight", {Embedding, RwkvValueLora}, Matrix, &LW::rwkv_v1),
      layer_tensor_if(later, "time_mix_v2.weight", {RwkvValueLora, Embedding}, Matrix, &LW::rwkv_v2),
      layer_tensor("time_mix_g1.weight", {Embedding, RwkvGateLora}, Matrix, &LW::rwkv_g1),
      layer_tensor("time_mix_g2.weight", {RwkvGateLora, Embedding}, Matrix, &LW::rwkv_g2),
      layer_tensor("time_mix_lerp_fused.weight", {Embedding, One, One, RwkvMixes}, Bias, &LW::rwkv_mixes),
      layer_tensor("time_mix_k_k.weight", {Embedding}, Norm, &LW::rwkv_k_k),
      layer_tensor("time_mix_k_a.weight", {Embedding}, Norm, &LW::rwkv_k_a),
      layer_tensor("time_mix_r_k.weight", {Embedding}, Bias, &LW::rwkv_r_k),
      layer_tensor("time_mix_key.weight", {Embedding, Embedding}, Matrix, &LW::wk),
      layer_tensor("time_mix_value.weight", {Embedding, Embedding}, Matrix, &LW::wv),
      layer_tensor("time_mix_receptance.weight", {Embedding, Embedding}, Matrix, &LW::wq),
      layer_tensor("time_mix_ln.weight", {Embedding}, Norm, &LW::rwkv_ln_x),
      layer_tensor("time_mix_ln.bias", {Embedding}, Bias, &LW::rwkv_ln_x_b),
      layer_tensor("time_mix_output.weight", {Embedding, Embedding}, Matrix, &LW::wo),
      layer_tensor("channel_mix_lerp_k.weight", {Embedding, One, One}, Bias, &LW::rwkv_ffn_mix),
      layer_tensor("channel_mix_key.weight", {Embedding, FeedForward}, Matrix, &LW::ffn_up),
      layer_tensor("channel_mix_value.weight", {FeedForward, Embedding}, Matrix, &LW::ffn_down),
      model_tensor("output_norm.weight", {Embedding}, Norm, Presence::Required, &TW::output_norm),
      model_tensor("output_norm.bias", {Embedding}, Bias, Presence::Required, &TW::output_norm_b),
      model_tensor("output.weight", {Embedding, Vocab}, Matrix, Presence::Required, &TW::output),
  };
  return arch;
}

}  // namespace lumen::model
