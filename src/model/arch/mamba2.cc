// Mamba 2 (general.architecture "mamba2"), as llama.cpp's converter writes it: no attention and
// no FFN; each block is an RMS norm, the state-space mixer and the residual add
// (model/mamba2_mixer.h), then the final norm and the output head (tied to the embeddings
// unless the file has output.weight). The converter stores A as -exp(A_log), A and D as {1,
// heads}, dt's bias as ssm_dt.bias and the gated norm's weight as {inner / groups, groups}.
#include "model/arch/architecture.h"

namespace lumen::model {

Architecture mamba2_architecture() {
  using enum Dim;
  using enum TensorRole;
  using TW = TransformerWeights;
  using LW = LayerWeights;
  Architecture arch;
  arch.name = "mamba2";
  arch.features.mixer = Mixer::Mamba2;
  arch.tensors = {
      model_tensor("token_embd.weight", {Embedding, Vocab}, Matrix, Presence::Required, &TW::token_embd),
      layer_tensor("attn_norm.weight", {Embedding}, Norm, &LW::attn_norm),
      layer_tensor("ssm_in.weight", {Embedding, SsmInProj}, Matrix, &LW::ssm_in),
      layer_tensor("ssm_conv1d.weight", {SsmConvKernel, SsmConvChannels}, SsmConv, &LW::ssm_conv1d),
      layer_tensor("ssm_conv1d.bias", {SsmConvChannels}, Bias, &LW::ssm_conv1d_b),
      layer_tensor("ssm_dt.bias", {SsmHeads}, Bias, &LW::ssm_dt_b),
      layer_tensor("ssm_a", {One, SsmHeads}, SsmDecay, &LW::ssm_a),
      layer_tensor("ssm_d", {One, SsmHeads}, Norm, &LW::ssm_d),
      layer_tensor("ssm_norm.weight", {SsmGroupWidth, SsmGroups}, Norm, &LW::ssm_norm),
      layer_tensor("ssm_out.weight", {SsmInner, Embedding}, Matrix, &LW::ssm_out),
      model_tensor("output_norm.weight", {Embedding}, Norm, Presence::Required, &TW::output_norm),
      model_tensor("output.weight", {Embedding, Vocab}, Matrix, Presence::Untied, &TW::output),
  };
  return arch;
}

}  // namespace lumen::model
