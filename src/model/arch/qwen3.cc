// Qwen3 dense models (general.architecture "qwen3"), e.g. Qwen3-0.6B .. Qwen3-32B: llama's block
// with per-head RMS norms of the queries and keys before rope (QK-norm), NeoX rope, no biases,
// and head_dim from attention.key_length (128 in every released size, so the query width is not
// the embedding width: Qwen3-0.6B is 1024 wide with 16 heads of 128).
#include <algorithm>

#include "model/arch/llama.h"

namespace lumen::model {

Architecture qwen3_architecture() {
  using enum Dim;
  using LW = LayerWeights;
  Architecture arch;
  arch.name = "qwen3";
  arch.features.rope_neox = true;
  arch.features.qk_norm = true;
  // config.json's use_sliding_window is false in every released model; llama.cpp attends to
  // every position.
  arch.features.sliding_window = SlidingWindow::None;
  arch.tensors = llama_tensors();
  // llama.cpp's converter writes the norms after attn_output; the order does not matter to the
  // loader, but synth writes files in this order.
  auto after_output = std::find_if(arch.tensors.begin(), arch.tensors.end(),
                                   [](const TensorSpec& t) { return t.name == "attn_output.weight"; });
  arch.tensors.insert(after_output + 1,
                      {
                          layer_tensor("attn_k_norm.weight", {HeadDim}, TensorRole::Norm, &LW::k_norm),
                          layer_tensor("attn_q_norm.weight", {HeadDim}, TensorRole::Norm, &LW::q_norm),
                      });
  return arch;
}

}  // namespace lumen::model
