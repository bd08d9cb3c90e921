#include "model/arch/experts.h"

namespace lumen::model {

std::vector<TensorSpec> expert_tensors(Dim expert_width) {
  using enum Dim;
  using enum TensorRole;
  using LW = LayerWeights;
  return {
      layer_tensor("ffn_gate_inp.weight", {Embedding, Experts}, Router, &LW::ffn_gate_inp),
      layer_tensor("ffn_gate_exps.weight", {Embedding, expert_width, Experts}, Matrix, &LW::ffn_gate_exps),
      layer_tensor("ffn_down_exps.weight", {expert_width, Embedding, Experts}, Matrix, &LW::ffn_down_exps),
      layer_tensor("ffn_up_exps.weight", {Embedding, expert_width, Experts}, Matrix, &LW::ffn_up_exps),
  };
}

}  // namespace lumen::model
