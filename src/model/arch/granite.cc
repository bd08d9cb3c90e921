// Granite 3.x dense models (general.architecture "granite"): llama's block with Granite's
// multipliers from the file (embedding_scale on the embeddings, residual_scale on each branch
// before its residual add, attention.scale for the scores, logit_scale dividing the logits),
// adjacent-pair rope (the converter permutes Q and K) unless rope.scaling.finetuned switches it
// off. The multipliers and the switch are read as granite-hybrid reads them. llama.cpp's optional
// biases and Granite's MoE variants (granitemoe) are not declared: such files are refused at load,
// naming the tensor.
#include "model/arch/llama.h"

namespace lumen::model {

Architecture granite_architecture() {
  Architecture arch;
  arch.name = "granite";
  arch.features.rope_neox = false;
  arch.features.granite_multipliers = true;
  arch.features.sliding_window = SlidingWindow::None;
  arch.tensors = llama_tensors();
  return arch;
}

}  // namespace lumen::model
