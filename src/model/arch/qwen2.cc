// Qwen2 and Qwen2.5 (general.architecture "qwen2"): llama's block with biases on q, k and v
// and NeoX-style rotation.
#include <algorithm>

#include "model/arch/llama.h"

namespace lumen::model {

Architecture qwen2_architecture() {
  using enum Dim;
  using LW = LayerWeights;
  Architecture arch;
  arch.name = "qwen2";
  arch.features.rope_neox = true;
  // config.json's sliding_window is off (use_sliding_window: false) in every released model.
  arch.features.sliding_window = SlidingWindow::None;
  arch.tensors = llama_tensors();
  auto after_v = std::find_if(arch.tensors.begin(), arch.tensors.end(),
                              [](const TensorSpec& t) { return t.name == "attn_v.weight"; });
  arch.tensors.insert(after_v + 1, {
                                       layer_tensor("attn_q.bias", {QWidth}, TensorRole::Bias, &LW::bq),
                                       layer_tensor("attn_k.bias", {KvWidth}, TensorRole::Bias, &LW::bk),
                                       layer_tensor("attn_v.bias", {KvWidth}, TensorRole::Bias, &LW::bv),
                                   });
  return arch;
}

}  // namespace lumen::model
